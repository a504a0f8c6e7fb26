//! Interrupting the suite (SIGINT, SIGTERM) while a trial runs against a real server
//! process group (dfx-testkit's `dfx-fake-server` standing in for `vllm-omni serve`), with
//! the fake bench slowed down by `DFX_FAKE_SLEEP_MS` so the trial lasts long enough: at a
//! chosen trial, and at random moments many times over.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use serde_json::Value;

use crate::command_line::BASE_TRIALS;
use crate::support::{Run, check, fake_server_bin, fixture, perf_spawn, run_dirs};

/// How long the suite may take to get to the trial, and to exit after the signal.
pub const PATIENCE: Duration = Duration::from_secs(120);

pub fn sigint_during_the_second_trial() -> Result<(), Failed> {
    interrupted("INT", 1)
}

pub fn sigterm_during_the_first_trial() -> Result<(), Failed> {
    interrupted("TERM", 0)
}

/// The suite, with its output collected by threads (no pipe can fill up), killed on drop
/// if a check gave up before it ended.
pub struct Suite {
    pub child: Child,
    out: Option<JoinHandle<Vec<u8>>>,
    err: Option<JoinHandle<Vec<u8>>>,
}

impl Suite {
    /// Takes over a just-spawned suite with piped stdout and stderr.
    pub fn new(mut child: Child) -> Suite {
        let out = child.stdout.take().map(collect);
        let err = child.stderr.take().map(collect);
        Suite { child, out, err }
    }

    pub fn exited(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_some()
    }

    pub fn signal(&self, sig: &str) -> Result<(), Failed> {
        let status = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .map_err(|e| format!("cannot run kill: {e}"))?;
        check_plain(status.success(), &format!("kill -{sig} failed"))
    }

    /// Waits (bounded) for the suite to end and returns what it printed (once every
    /// holder of its stdout and stderr, a guard too, has closed them).
    pub fn finish(mut self) -> Result<Output, Failed> {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(s) = self.child.try_wait().map_err(|e| e.to_string())? {
                break s;
            }
            if Instant::now() > deadline {
                return Err("the suite did not exit after the signal".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let join = |h: Option<JoinHandle<Vec<u8>>>| h.map(|h| h.join().unwrap_or_default());
        Ok(Output {
            status,
            stdout: join(self.out.take()).unwrap_or_default(),
            stderr: join(self.err.take()).unwrap_or_default(),
        })
    }
}

impl Drop for Suite {
    fn drop(&mut self) {
        if !self.exited() {
            // SIGTERM first so the suite tears its server group down, then make sure.
            let _ = self.signal("TERM");
            std::thread::sleep(Duration::from_secs(3));
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn collect(mut r: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

pub fn check_plain(cond: bool, what: &str) -> Result<(), Failed> {
    if cond { Ok(()) } else { Err(what.into()) }
}

pub fn dir_of(trial: &str) -> String {
    trial.replace("::", "__")
}

pub fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

/// The process group id the fake server announced in its log.
pub fn announced_pgid(server_log: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(server_log).ok()?;
    let line = text.lines().find(|l| l.contains("role=server"))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("pgid="))?
        .parse()
        .ok()
}

/// Waits until trial `at` has written its first request record and the server announced
/// its group; returns the run folder and the group id.
pub fn wait_for_trial(
    suite: &mut Suite,
    results: &Path,
    at: usize,
) -> Result<(PathBuf, i32), Failed> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(run_dir) = run_dirs(results).into_iter().next() {
            let records = run_dir
                .join("trials")
                .join(dir_of(BASE_TRIALS[at]))
                .join("records.jsonl");
            let log = run_dir.join("servers/01-test_qwen3_tts_base/server.log");
            if lines(&records) >= 1
                && let Some(pgid) = announced_pgid(&log)
            {
                return Ok((run_dir, pgid));
            }
        }
        check_plain(
            !suite.exited(),
            "the suite ended before it could be interrupted",
        )?;
        check_plain(
            Instant::now() < deadline,
            &format!("trial {} never wrote a request record", BASE_TRIALS[at]),
        )?;
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn read_json(path: &Path, run: &Run) -> Result<Value, Failed> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}\n{}", path.display(), run.both()))?;
    Ok(serde_json::from_str(&text).map_err(|e| e.to_string())?)
}

fn interrupted(sig: &str, at: usize) -> Result<(), Failed> {
    let fake_server = fake_server_bin()?.display().to_string();
    let (child, results) = perf_spawn(
        &fixture("tts_small.json"),
        &["test_qwen3_tts_base"],
        &[
            ("DFX_SERVER", "auto"),
            ("DFX_SERVER_BIN", &fake_server),
            ("DFX_FAKE_SLEEP_MS", "300"),
        ],
    )?;
    let mut suite = Suite::new(child);
    let (run_dir, pgid) = wait_for_trial(&mut suite, results.path(), at)?;
    check_plain(
        !dfx_server::group_members(pgid).is_empty(),
        "the server group must be alive before the signal",
    )?;
    suite.signal(sig)?;
    let run = Run {
        out: suite.finish()?,
        results,
    };

    check(run.code() == Some(130), "exit status 130", &run)?;
    check(
        run.stderr()
            .contains("dfx-perf: interrupted; stopping 1 process group(s): server (pgid "),
        "says it stops the server group",
        &run,
    )?;
    check(
        dfx_server::group_members(pgid).is_empty(),
        &format!("no process may be left in the server group {pgid}"),
        &run,
    )?;
    let mut expected: Vec<(String, String)> = BASE_TRIALS[..at]
        .iter()
        .map(|n| (n.to_string(), "passed".to_string()))
        .collect();
    expected.push((BASE_TRIALS[at].to_string(), "failed".to_string()));
    check(
        run.outcomes()? == expected,
        "summary.json: the trials done so far, then the interrupted one",
        &run,
    )?;
    let s = run.summary()?;
    let t = &s["trials"][at];
    check(
        t["interrupted"] == true
            && t["failure_class"] == "interrupted"
            && s["failure_classes"]["interrupted"] == 1
            && t["failures"][0]
                .as_str()
                .is_some_and(|f| f.starts_with("interrupted (SIGINT/SIGTERM) after")),
        "the interrupted trial is marked and says why",
        &run,
    )?;
    let not_run = Value::from(BASE_TRIALS[at + 1..].to_vec());
    check(
        s["interrupted"]["trial"] == BASE_TRIALS[at] && s["interrupted"]["not_run"] == not_run,
        "the interrupted section names the trial and what never ran",
        &run,
    )?;
    let tdir = run_dir.join("trials").join(dir_of(BASE_TRIALS[at]));
    let n = lines(&tdir.join("records.jsonl"));
    check(
        (1..4).contains(&n),
        &format!("partial records kept (1 to 3 of 4 lines, found {n})"),
        &run,
    )?;
    let result = read_json(&tdir.join("result.json"), &run)?;
    check(
        result["result_source"] == "template"
            && result["verdict"]["interrupted"] == true
            && result["verdict"]["failure_class"] == "interrupted",
        "the interrupted trial has a template result.json saying so (class interrupted)",
        &run,
    )?;
    let info = read_json(&run_dir.join("run.json"), &run)?;
    check(
        info["interrupted"] == true && info["finished"].is_string(),
        "run.json records the interruption",
        &run,
    )?;
    check(
        ["report.md", "report.html", "junit.xml"]
            .iter()
            .all(|f| run_dir.join(f).is_file()),
        "the reports are written for the interrupted run too",
        &run,
    )?;
    let verified = dfx_core::artefact::manifest::verify(&run_dir);
    check(
        verified.is_ok(),
        &format!("the interrupted run's manifest.json, written last, verifies: {verified:?}"),
        &run,
    )
}

/// Iterations of [`interrupted_at_random_moments`].
const RANDOM_ROUNDS: usize = 20;
/// Upper end of the random delay after run.json appears (the run itself lasts well over
/// 2 s: a server start and three trials of four 200 ms requests).
const RANDOM_DELAY_MS: u64 = 1500;

/// A seed that differs from run to run (printed, so a failure can be told apart).
fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(u64::from(std::process::id()));
    h.finish()
}

/// xorshift64*: enough to spread the signal over the run.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// SIGINT / SIGTERM at a random moment of a run (during a server start, a trial, between
/// trials), many times: every time exit status 130, a summary.json with the trials done,
/// the interrupted one and an `interrupted` section, run.json saying `interrupted: true`,
/// a manifest.json that verifies, and no process left.
pub fn interrupted_at_random_moments() -> Result<(), Failed> {
    let fake_server = fake_server_bin()?.display().to_string();
    let mut state = seed() | 1;
    eprintln!("interrupted_at_random_moments: seed {state:#x}");
    for round in 0..RANDOM_ROUNDS {
        let sig = if round % 2 == 0 { "INT" } else { "TERM" };
        // Every other pair of rounds, a server (and grandchild) that ignores SIGTERM: the
        // handler's teardown then takes the 1 s grace, while the main thread finishes its
        // trials and gets to the close first.
        let stubborn = round % 4 >= 2;
        let delay = Duration::from_millis(next(&mut state) % RANDOM_DELAY_MS);
        one_random_interruption(&fake_server, sig, stubborn, delay).map_err(|e| {
            format!(
                "round {round} (SIG{sig} {delay:?} after run.json, stubborn server: {stubborn}): {}",
                e.message().unwrap_or_default()
            )
        })?;
    }
    Ok(())
}

fn one_random_interruption(
    fake_server: &str,
    sig: &str,
    stubborn: bool,
    delay: Duration,
) -> Result<(), Failed> {
    let mut env = vec![
        ("DFX_SERVER", "auto"),
        ("DFX_SERVER_BIN", fake_server),
        ("DFX_FAKE_SLEEP_MS", "200"),
    ];
    if stubborn {
        env.extend([
            ("DFX_FAKE_IGNORE_SIGTERM", "1"),
            ("DFX_FAKE_GRANDCHILD", "1"),
            ("DFX_SERVER_GRACE_MS", "1000"),
        ]);
    }
    let (child, results) = perf_spawn(&fixture("tts_small.json"), &["test_qwen3_tts_base"], &env)?;
    let mut suite = Suite::new(child);
    let deadline = Instant::now() + PATIENCE;
    let run_dir = loop {
        if let Some(d) = run_dirs(results.path()).into_iter().next()
            && d.join("run.json").is_file()
        {
            break d;
        }
        check_plain(!suite.exited(), "the suite ended before run.json appeared")?;
        check_plain(Instant::now() < deadline, "run.json never appeared")?;
        std::thread::sleep(Duration::from_millis(5));
    };
    std::thread::sleep(delay);
    check_plain(
        !suite.exited(),
        "the run ended before the signal (make it longer)",
    )?;
    suite.signal(sig)?;
    let run = Run {
        out: suite.finish()?,
        results,
    };
    check(run.code() == Some(130), "exit status 130", &run)?;
    let s = run.summary()?;
    check(
        s["interrupted"].is_object(),
        "summary.json has the interrupted section",
        &run,
    )?;
    let info = read_json(&run_dir.join("run.json"), &run)?;
    check(
        info["interrupted"] == true,
        "run.json says interrupted: true",
        &run,
    )?;
    let verified = dfx_core::artefact::manifest::verify(&run_dir);
    check(
        verified.is_ok(),
        &format!("manifest.json, written last, verifies: {verified:?}"),
        &run,
    )?;
    // The trials done passed; at most the last one was interrupted, and it is the one the
    // section names; what never ran is the rest, in order.
    let outcomes = run.outcomes()?;
    let done = outcomes.len();
    check(
        done <= BASE_TRIALS.len(),
        "no more entries than trials",
        &run,
    )?;
    for (i, (name, outcome)) in outcomes.iter().enumerate() {
        check(name == BASE_TRIALS[i], "entries in plan order", &run)?;
        let last_interrupted =
            i + 1 == done && outcome == "failed" && s["trials"][i]["interrupted"] == true;
        check(
            outcome == "passed" || last_interrupted,
            "done trials passed, only the last may be interrupted",
            &run,
        )?;
        if last_interrupted {
            check(
                s["interrupted"]["trial"] == BASE_TRIALS[i],
                "the section names the interrupted trial",
                &run,
            )?;
        }
    }
    if outcomes.last().is_none_or(|(_, o)| o == "passed") {
        check(
            s["interrupted"]["trial"].is_null(),
            "no trial was running",
            &run,
        )?;
    }
    check(
        s["interrupted"]["not_run"] == Value::from(BASE_TRIALS[done..].to_vec()),
        "not_run lists the trials that never started",
        &run,
    )?;
    for log in server_logs(&run_dir) {
        if let Some(pgid) = announced_pgid(&log) {
            check(
                dfx_server::group_members(pgid).is_empty(),
                &format!("server group {pgid} is gone"),
                &run,
            )?;
        }
    }
    let left = crate::leftovers::processes_touching(run.results.path());
    check(
        left.is_empty(),
        &format!("no process may use the results folder: {left:?}"),
        &run,
    )?;
    check(
        !run.results.path().join(".dfx-live-servers").exists(),
        "no state file is left",
        &run,
    )
}

/// Every `servers/*/server.log` of a run folder.
pub fn server_logs(run_dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(run_dir.join("servers"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("server.log"))
        .filter(|p| p.is_file())
        .collect()
}

/// SIGTERM in the middle of a native-bench step against the real simulator (real time,
/// c = 4): no request is sent once the stop begins, and the requests the teardown cuts are
/// recorded as `interrupted`, never as failures of the server (transport, stall, …).
pub fn sigterm_mid_step_sends_nothing_more_and_records_cuts_as_interrupted() -> Result<(), Failed> {
    const TRIAL: &str = "test_sim_smoke::default_voice_seed-tts-text::c4";
    let (child, results) = perf_spawn(
        &fixture("sim_tts.json"),
        &[
            "--server",
            "sim",
            "--sim-speed",
            "1",
            "--bench",
            "native",
            "--hardware",
            "SIM",
            "--exact",
            TRIAL,
        ],
        &[],
    )?;
    let mut suite = Suite::new(child);
    let deadline = Instant::now() + PATIENCE;
    let records = loop {
        if let Some(run_dir) = run_dirs(results.path()).into_iter().next() {
            let r = run_dir
                .join("trials")
                .join(dir_of(TRIAL))
                .join("records.jsonl");
            // The warmup and one measured request: the step is under way.
            if lines(&r) >= 2 {
                break r;
            }
        }
        check_plain(
            !suite.exited(),
            "the suite ended before it could be interrupted",
        )?;
        check_plain(Instant::now() < deadline, "the step never got under way")?;
        std::thread::sleep(Duration::from_millis(20));
    };
    suite.signal("TERM")?;
    let run = Run {
        out: suite.finish()?,
        results,
    };
    check(run.code() == Some(130), "exit status 130", &run)?;
    let text = std::fs::read_to_string(&records).map_err(|e| e.to_string())?;
    let mut cut = 0;
    for line in text.lines() {
        let rec: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        match rec["error_class"].as_str() {
            None => {}
            Some("interrupted") => cut += 1,
            Some(other) => {
                return Err(format!("a request failed as `{other}` after the stop: {line}").into());
            }
        }
    }
    check(
        text.lines().count() <= 9,
        "at most the warmup and the 8 measured requests",
        &run,
    )?;
    let s = run.summary()?;
    let reason = s["trials"][0]["failures"][0].as_str().unwrap_or_default();
    check(
        reason.starts_with("interrupted (SIGINT/SIGTERM) after")
            && (cut == 0 || reason.contains(&format!("{cut} cut by the interruption"))),
        &format!("the interrupted trial counts its {cut} cut request(s) apart: {reason}"),
        &run,
    )
}
