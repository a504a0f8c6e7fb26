//! Hostile input against the real suite binary, the simulator and the native bench:
//!
//! - one check per row of issue 12's table and per case of its review: each bad value is
//!   a config or flag error (exit 2) that names the key and the accepted range, before
//!   any server starts (no run folder, no simulator process);
//! - a seeded mutation matrix over the simulator fixture: every mutation is either a
//!   config error (exit 2, nothing started), a normal run (exit 0 or 101 with its
//!   summary.json) or a run whose trials are all ignored (exit 0, nothing written); never
//!   a panic, never a run past [`LIMIT`], never a process left.
//!   `DFX_HOSTILE_RUNS=N` runs N mutations instead of [`DEFAULT_RUNS`] (the nightly's
//!   longer mode), `DFX_HOSTILE_SEED` picks another seed.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use serde_json::{Value, json};

use crate::support::{hermetic, perf_bin, root, run_dirs};

/// Longest a single hostile run may take (a hang detector, not a performance bound).
const LIMIT: Duration = Duration::from_secs(120);

/// Mutations of the matrix in the normal test command.
const DEFAULT_RUNS: usize = 12;

/// What one bounded run of the suite printed.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    results: tempfile::TempDir,
}

impl Ran {
    fn both(&self) -> String {
        format!(
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// The fixture every check starts from: `tests/fixtures/suite_cli/sim_tts.json`.
fn base_config() -> Result<Value, Failed> {
    let path = root().join("tests/fixtures/suite_cli/sim_tts.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(serde_json::from_str(&text).map_err(|e| e.to_string())?)
}

fn entry(config: &mut Value) -> &mut serde_json::Map<String, Value> {
    config[0]["benchmark_params"][0]
        .as_object_mut()
        .expect("the fixture has one entry")
}

/// Runs the suite on `config` against the sped-up simulator with the native bench, with
/// extra `args` and environment, killed after [`LIMIT`].
fn run(config: &Value, args: &[&str], env: &[(&str, &str)]) -> Result<Ran, Failed> {
    let results = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = results.path().join("hostile.json");
    std::fs::write(&file, config.to_string()).map_err(|e| e.to_string())?;
    // The run folders go one level down, so the config file is not counted as output.
    let out_dir = results.path().join("out");
    let mut cmd = Command::new(perf_bin()?);
    cmd.current_dir(root())
        .args(["--server", "sim", "--sim-speed", "100", "--bench", "native"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    hermetic(&mut cmd, &file.display().to_string(), &out_dir);
    cmd.env_remove("DFX_SERVER").env_remove("DFX_BENCH");
    cmd.envs(env.iter().copied());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run perf: {e}"))?;
    let mut pipes = (child.stdout.take(), child.stderr.take());
    let read = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = read(pipes.0.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = read(pipes.1.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let ran = Ran {
        code: status.and_then(|s| s.code()),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        results,
    };
    if status.is_none() {
        return Err(format!("the suite ran past {LIMIT:?} (a hang)\n{}", ran.both()).into());
    }
    Ok(ran)
}

/// Processes still running the simulator binary with a port of this run's server
/// folders (zombies have no command line and do not count).
fn leftover_simulators(results: &Path) -> Vec<String> {
    let ports: Vec<String> = run_dirs(&results.join("out"))
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(d.join("servers"))
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter_map(|s| std::fs::read_to_string(s.path().join("command.txt")).ok())
        .filter_map(|c| {
            let words: Vec<&str> = c.split_whitespace().collect();
            let i = words.iter().position(|w| *w == "--port")?;
            words.get(i + 1).map(|p| format!("--port {p}"))
        })
        .collect();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| {
            let raw = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            (cmd.contains("dfx-perf-sim") && ports.iter().any(|p| cmd.contains(p.as_str())))
                .then(|| format!("{}: {cmd}", e.file_name().to_string_lossy()))
        })
        .collect()
}

/// A config or flag error: exit 2, every `needles` in stderr, "nothing was started", no
/// run folder, no panic.
fn refused(ran: &Ran, needles: &[&str], what: &str) -> Result<(), Failed> {
    let ok = ran.code == Some(2)
        && needles.iter().all(|n| ran.stderr.contains(n))
        && ran.stderr.contains("nothing was started")
        && !ran.stderr.contains("panicked")
        && run_dirs(&ran.results.path().join("out")).is_empty();
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what}: expected exit 2 naming {needles:?}, nothing started\n{}",
            ran.both()
        )
        .into())
    }
}

/// Issue 12's table and review, one bad value at a time.
pub fn table_rows_are_config_errors() -> Result<(), Failed> {
    let base = base_config()?;
    let with = |edit: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut c = base.clone();
        edit(entry(&mut c));
        c
    };
    let rate = with(&|e| {
        e.remove("max_concurrency");
        e.insert("request_rate".into(), json!(1e-300));
        e.insert("num_prompts".into(), json!(6));
    });
    refused(
        &run(&rate, &[], &[])?,
        &["key `request_rate`", "0.001"],
        "request_rate 1e-300",
    )?;
    let conc = with(&|e| {
        e.insert("max_concurrency".into(), json!(100_000_000));
        e.insert("num_prompts".into(), json!(2));
    });
    refused(
        &run(&conc, &[], &[])?,
        &["key `max_concurrency`", "from 1 to 4096"],
        "max_concurrency 1e8",
    )?;
    let prompts = with(&|e| {
        e.insert("num_prompts".into(), json!(u64::MAX));
    });
    refused(
        &run(&prompts, &[], &[])?,
        &["key `num_prompts`", "from 1 to 1000000"],
        "num_prompts u64::MAX",
    )?;
    let no_path = with(&|e| {
        e.remove("dataset_path");
    });
    refused(
        &run(&no_path, &[], &[])?,
        &["key `dataset_path`", "no dataset_path"],
        "dataset_path missing",
    )?;
    let empty = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = empty.path().display().to_string();
    let no_meta = with(&|e| {
        e.insert("dataset_path".into(), json!(dir));
    });
    refused(
        &run(&no_meta, &[], &[])?,
        &["key `dataset_path`", "en/meta.lst"],
        "dataset_path without en/meta.lst",
    )?;
    let percentiles = with(&|e| {
        e.insert("metric-percentiles".into(), json!("99,abc"));
    });
    refused(
        &run(&percentiles, &[], &[])?,
        &["key `metric-percentiles`", "\"abc\""],
        "metric-percentiles 99,abc",
    )?;
    for v in ["inf", "1e30", "nan"] {
        let ran = run(&base, &[], &[("SGLANG_OMNI_SERVER_TIMEOUT", v)])?;
        refused(
            &ran,
            &["SGLANG_OMNI_SERVER_TIMEOUT"],
            &format!("SGLANG_OMNI_SERVER_TIMEOUT={v}"),
        )?;
    }
    let ran = run(&base, &["--sim-faults", "ready-after=1e300"], &[])?;
    refused(
        &ran,
        &["--sim-faults", "ready-after"],
        "--sim-faults ready-after=1e300",
    )?;
    let ran = run(
        &base,
        &[],
        &[("DFX_SIM_FAULT_STALL_AFTER_CHUNKS", "99999999999")],
    )?;
    refused(
        &ran,
        &["DFX_SIM_FAULT_STALL_AFTER_CHUNKS"],
        "a fault variable out of range",
    )?;
    let ran = run(&base, &["--ready-timeout", "18446744073709551615"], &[])?;
    refused(&ran, &["--ready-timeout"], "--ready-timeout u64::MAX")?;
    let ran = run(&base, &["--request-timeout", "1e300"], &[])?;
    refused(&ran, &["--request-timeout"], "--request-timeout 1e300")
}

/// xorshift64*: seeded and portable, so a failing mutation reproduces.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1) as u64) as usize
    }
}

/// The hostile values of the matrix.
fn hostile(rng: &mut Rng) -> Value {
    let deep = (0..300).fold(json!(1), |v, _| json!([v]));
    let all = [
        json!(0),
        json!(-1),
        json!(1e-300),
        json!(1e300),
        json!(u64::MAX),
        json!(i64::MIN),
        json!("NaN"),
        json!("inf"),
        json!("-inf"),
        json!(true),
        json!("x"),
        json!([]),
        json!({}),
        Value::Null,
        deep,
        Value::String("x".repeat(10 * 1024 * 1024)),
    ];
    all[rng.below(all.len())].clone()
}

/// Keys of the fixture's entry and case the matrix edits (plus an unknown one).
const KEYS: &[&str] = &[
    "num_prompts",
    "max_concurrency",
    "request_rate",
    "num_warmups",
    "burstiness",
    "seed",
    "dataset_path",
    "dataset_name",
    "seed_tts_locale",
    "percentile-metrics",
    "metric-percentiles",
    "extra_body",
    "baseline",
    "backend",
    "name",
    "zz_unknown_key",
];

/// One mutation: a hostile value at an entry key, a removed entry key, or a hostile
/// server parameter; described for the failure message.
fn mutate(config: &mut Value, rng: &mut Rng) -> String {
    let key = KEYS[rng.below(KEYS.len())];
    match rng.below(5) {
        0 => {
            entry(config).remove(key);
            format!("remove `{key}`")
        }
        1 => {
            let v = hostile(rng);
            let shown = short(&v);
            config[0]["server_params"]["ready_timeout_s"] = v;
            format!("server_params.ready_timeout_s = {shown}")
        }
        _ => {
            let v = hostile(rng);
            let shown = short(&v);
            entry(config).insert(key.into(), v);
            format!("`{key}` = {shown}")
        }
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}… ({} bytes)", &s[..40], s.len())
    } else {
        s
    }
}

/// The seeded matrix: each mutation is a config error or a normal run, never a panic, a
/// hang or a leftover process.
pub fn mutation_matrix() -> Result<(), Failed> {
    let runs = std::env::var("DFX_HOSTILE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_RUNS);
    let seed = std::env::var("DFX_HOSTILE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_1234_u64);
    let base = base_config()?;
    let mut rng = Rng(seed | 1);
    let (mut refused_n, mut ran_n, mut ignored_n) = (0, 0, 0);
    for i in 0..runs {
        let mut config = base.clone();
        let what = (0..=rng.below(2))
            .map(|_| mutate(&mut config, &mut rng))
            .collect::<Vec<_>>()
            .join(", ");
        let ran = run(&config, &[], &[])
            .map_err(|e| format!("mutation {i} ({what}): {}", e.message().unwrap_or_default()))?;
        let fail = |why: &str| -> Failed {
            format!("mutation {i} (seed {seed}: {what}): {why}\n{}", ran.both()).into()
        };
        if ran.stderr.contains("panicked") || ran.stdout.contains("panicked") {
            return Err(fail("a panic"));
        }
        let left = leftover_simulators(ran.results.path());
        if !left.is_empty() {
            return Err(fail(&format!("processes left: {left:?}")));
        }
        let dirs = run_dirs(&ran.results.path().join("out"));
        match ran.code {
            Some(2) if dirs.is_empty() && ran.stderr.contains("nothing was started") => {
                refused_n += 1
            }
            Some(0 | 101) if dirs.len() == 1 && dirs[0].join("summary.json").is_file() => {
                ran_n += 1
            }
            // every trial ignored (e.g. no bench serves the entry): nothing written
            Some(0) if dirs.is_empty() && ran.stderr.contains("no trial ran") => ignored_n += 1,
            _ => return Err(fail("neither a config error nor a normal run")),
        }
    }
    eprintln!(
        "hostile matrix: {runs} mutation(s): {refused_n} refused, {ran_n} ran, {ignored_n} \
         ignored every trial"
    );
    Ok(())
}
