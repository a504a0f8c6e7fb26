//! The native bench against `vllm bench serve --omni` (vllm-omni 0.30), side by side in
//! one run (not a test): both clients, one after the other and alternately, against the
//! raw server of `native_client` (server-side kernel-receive timestamps, matched by
//! `x-request-id`), closed loops at c = 1, 64, 256 and open loops at 50 and 200 req/s.
//! Per client: TTFP measurement overhead p50 / p99, marginal CPU per 1000 requests (two
//! request counts, so start-up cancels), peak RSS, open-loop send lag p99 / max, TCP
//! connections opened, failures. The native bench runs with fresh and with pooled
//! connections; `vllm bench` always opens one connection per request (`force_close`).
//! At one stream and in the open loops the floor client runs too (`support/floor_client.rs`:
//! blocking std sockets; `support/floor_open.rs`: one thread, epoll, no runtime; neither
//! analyses PCM), as the least any client that timestamps every read costs on the machine.
//!
//! `cargo bench -p dfx-bench --bench vllm_peer` (`-- quick`: one round, fewer requests;
//! `only=TEXT` picks scenarios by name; `keep=DIR` keeps every run's folder).
//! `-- scale` runs the scale search instead (`support/peer_scale.rs`): the most concurrent
//! streams each client sustains on one core with TTFP overhead p99 ≤ 5 ms, against the raw
//! server at zero delay, and the same for realtime sessions (the native client and vllm
//! bench's `openai-realtime-tts`); `only=TEXT` there picks clients by label (`only=realtime`).
//! `vllm` is found through `DFX_VLLM_BIN` (or `DFX_VLLM`), else `vllm` on `PATH`; it needs a
//! local tokenizer, `DFX_TOKENIZER` (default `/work/tok` when that folder exists). Without
//! `vllm` it runs the native half and says so. Under `cargo test --all-targets` it runs a
//! native-only smoke check (a few seconds; the scale search at c = 1 and 2 included).
//!
//! Each client runs in its own child process, reaped with `wait4`, whose rusage gives its
//! CPU time (user + system, its reaped children included); its peak RSS is its own
//! `VmHWM` at exit (see [`vm_hwm_kib`] for why not `ru_maxrss`).
//! `vllm bench` runs through `support/vllm_capture.py` (vLLM's own CLI, with its
//! per-request TTFP and send time kept; see that file); its CPU is the measured phase's
//! (from the scheduler's start to exit, by its own getrusage), because its ~45 s of
//! start-up CPU varies by seconds from run to run. The native child's CPU is its whole
//! process (start-up is ~10 ms), so its figure also holds the preparation of the bodies.

#[path = "support/floor_client.rs"]
mod floor_client;
#[path = "support/floor_open.rs"]
mod floor_open;
#[path = "../tests/native_support/mod.rs"]
mod native_support;
#[path = "support/peer_plan.rs"]
mod peer_plan;
#[path = "support/peer_realtime.rs"]
mod peer_realtime;
#[path = "support/peer_report.rs"]
mod peer_report;
#[path = "support/peer_scale.rs"]
mod peer_scale;
#[path = "support/pin.rs"]
mod pin;
#[path = "support/raw_realtime.rs"]
mod raw_realtime;
#[path = "support/raw_server.rs"]
mod raw_server;
#[path = "support/reaped.rs"]
mod reaped;
#[path = "support/server_child.rs"]
mod server_child;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use dfx_bench::native::stats::Sorted;
use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::{ConnectionMode, StepKind};
use native_support::{TrialSpec, read_records, trial};
use peer_plan::{Client, Scenario, kind_arg, parse_kind, scenarios};
use peer_report::{Tally, print_ratios, print_row, row};
use reaped::{run_child, vm_hwm_kib};
use server_child::ServerChild;

const CAPTURE_PY: &str = include_str!("support/vllm_capture.py");
const MODEL: &str = "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice";

fn dataset() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../perf-configs/datasets/seed_tts_smoke")
}

/// What one client run left: its rusage, and per measured request its TTFP overhead and
/// (open loop) send lag.
struct RunOut {
    n: u64,
    cpu_s: f64,
    maxrss_kib: u64,
    wall_s: f64,
    overhead_ms: Vec<f64>,
    lag_ms: Vec<f64>,
    failed: u64,
    connections: u64,
}

/// The child side of a native run: `--run-native DIR BASE_URL KIND N WARMUPS
/// pooled|fresh|realtime` (realtime: `peer_realtime`'s one-turn sessions). Writes `DIR/result.json`; the records are in `DIR/records.jsonl`.
fn run_native_child(args: &[String]) {
    let [dir, base, kind, n, warmups, conn] = args else {
        panic!("--run-native DIR BASE_URL KIND N WARMUPS pooled|fresh|realtime");
    };
    let dir = PathBuf::from(dir);
    let ds = dataset();
    let t = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        kind: parse_kind(kind),
        num_prompts: n.parse().unwrap(),
        num_warmups: Some(warmups.parse().unwrap()),
        ..TrialSpec::default()
    });
    let t = if conn == "realtime" {
        peer_realtime::realtime_trial(t, &dir)
    } else {
        t
    };
    let port = base.rsplit(':').next().unwrap().parse().unwrap();
    let ctx = BenchContext {
        trial: &t,
        base_url: base.clone(),
        host: "127.0.0.1".into(),
        port,
        out_dir: dir.clone(),
        hardware: "na".into(),
        judge_url: None,
        server_group: None,
    };
    let settings = NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    };
    let bench = NativeBench::new(settings).with_connection(if conn == "pooled" {
        ConnectionMode::Pooled
    } else {
        ConnectionMode::Fresh
    });
    let outcome = bench.run(&ctx);
    let doc = outcome
        .result
        .map_or(serde_json::Value::Null, serde_json::Value::Object);
    std::fs::write(dir.join("result.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
    std::fs::write(dir.join("vm_hwm_kib"), vm_hwm_kib().to_string()).unwrap();
}

/// The child side of a floor run: `--run-floor DIR BASE_URL c=1|r=RATE N WARMUPS
/// pooled|fresh` (closed loop at one stream, or open loop).
fn run_floor_child(args: &[String]) {
    let [dir, base, kind, rest @ ..] = args else {
        panic!("--run-floor DIR BASE_URL c=1|r=RATE N WARMUPS pooled|fresh");
    };
    let mut args = vec![dir.clone(), base.clone()];
    args.extend_from_slice(rest);
    let texts = dataset().join("en");
    match parse_kind(kind) {
        StepKind::Concurrency { max_concurrency } if max_concurrency.get() == 1 => {
            floor_client::run_floor_child(&args, &texts, vm_hwm_kib)
        }
        StepKind::RequestRate { request_rate } => {
            floor_open::run_floor_open(&args, request_rate, &texts, vm_hwm_kib)
        }
        StepKind::Concurrency { .. } => panic!("the floor client runs one stream or an open loop"),
    }
}

#[derive(serde::Deserialize)]
struct Stats {
    connections: u64,
}

/// One run of the native client (`floor` false) or of the floor client, in a child.
fn run_native(
    server: &ServerChild,
    s: &Scenario,
    n: u64,
    (pooled, floor): (bool, bool),
    dir: &Path,
) -> RunOut {
    std::fs::create_dir_all(dir).unwrap();
    let before: Stats = server.get("stats");
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.arg(if floor { "--run-floor" } else { "--run-native" })
        .arg(dir)
        .arg(&server.base_url);
    cmd.arg(kind_arg(s.kind))
        .arg(n.to_string())
        .arg(s.warmups.to_string())
        .arg(if pooled { "pooled" } else { "fresh" });
    let r = run_child(cmd, &dir.join("child.log"), s.pin);
    assert_eq!(r.status, 0, "native child failed: {}", dir.display());
    let after: Stats = server.get("stats");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
    let hwm: u64 = std::fs::read_to_string(dir.join("vm_hwm_kib"))
        .unwrap()
        .parse()
        .unwrap();
    let delays = server.timings();
    let recs: Vec<_> = read_records(dir)
        .into_iter()
        .filter(|r| r["warmup"] == false && r["ok"] == true)
        .collect();
    let overhead_ms: Vec<f64> = recs
        .iter()
        .map(|r| {
            let id = r["request_id"].as_str().unwrap();
            let d = delays.get(id).expect("every request has a server timing");
            (r["ttfp_s"].as_f64().unwrap() - d) * 1000.0
        })
        .collect();
    let lag_ms = match s.kind {
        StepKind::RequestRate { .. } => recs
            .iter()
            .filter_map(|r| r["lag_s"].as_f64())
            .map(|v| v * 1000.0)
            .collect(),
        StepKind::Concurrency { .. } => Vec::new(),
    };
    RunOut {
        n,
        cpu_s: r.cpu_s,
        maxrss_kib: hwm,
        wall_s: r.wall_s,
        overhead_ms,
        lag_ms,
        failed: doc["failed"].as_u64().unwrap_or(n),
        connections: after.connections - before.connections,
    }
}

/// How `vllm bench` is run: the interpreter of its script (the shebang), the tokenizer.
struct Vllm {
    python: PathBuf,
    tokenizer: PathBuf,
}

/// `DFX_VLLM_BIN` / `DFX_VLLM`, else `vllm` on `PATH`; `Err` says why the half is skipped.
fn find_vllm() -> Result<Vllm, String> {
    let bin = std::env::var_os("DFX_VLLM_BIN")
        .or_else(|| std::env::var_os("DFX_VLLM"))
        .map(PathBuf::from)
        .or_else(|| which::which("vllm").ok())
        .ok_or("no vllm: set DFX_VLLM_BIN (or DFX_VLLM) or put vllm on PATH")?;
    let text = std::fs::read_to_string(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let python = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("#!"))
        .map(|l| PathBuf::from(l.trim()))
        .filter(|p| p.is_file())
        .ok_or_else(|| format!("{}: no Python interpreter in its first line", bin.display()))?;
    let tokenizer = std::env::var_os("DFX_TOKENIZER")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/work/tok")).filter(|p| p.is_dir()))
        .ok_or("vllm bench needs a local tokenizer: set DFX_TOKENIZER to a folder")?;
    Ok(Vllm { python, tokenizer })
}

/// What `vllm bench` drives: its backend and endpoint, and the dataset it reads.
pub(crate) struct VllmLoad {
    backend: &'static str,
    endpoint: &'static str,
    dataset_name: &'static str,
    dataset: PathBuf,
}

impl VllmLoad {
    /// `openai-audio-speech` on the shipped seed-tts smoke texts.
    pub(crate) fn speech() -> VllmLoad {
        VllmLoad {
            backend: "openai-audio-speech",
            endpoint: "/v1/audio/speech",
            dataset_name: "seed-tts-text",
            dataset: dataset(),
        }
    }

    /// `openai-realtime-tts` (a WebSocket session per request, one turn) on the seed-tts
    /// dataset at `dataset`.
    pub(crate) fn realtime(dataset: PathBuf) -> VllmLoad {
        VllmLoad {
            backend: "openai-realtime-tts",
            endpoint: "/v1/realtime",
            dataset_name: "seed-tts",
            dataset,
        }
    }
}

#[derive(serde::Deserialize)]
struct Capture {
    /// `[id, start, ttfp, latency, ok]` per measured request.
    requests: Vec<(String, f64, f64, f64, bool)>,
    /// Realtime: per measured request, the session ids the server gave it (its timings'
    /// keys); empty for speech, whose timings are keyed by request id.
    #[serde(default)]
    sessions: HashMap<String, Vec<String>>,
    planned: HashMap<String, f64>,
    /// CPU seconds from the measured phase's start to exit (see `vllm_capture.py`).
    cpu_phase_s: f64,
    /// Its `VmHWM` at exit, KiB (see [`vm_hwm_kib`]).
    vm_hwm_kib: u64,
}

/// One run of `vllm bench` (`load`) in a child; its TTFP overhead per measured request is
/// its own TTFP minus the server's timing of that request (speech) or of its one session
/// (realtime).
fn run_vllm(
    vllm: &Vllm,
    server: &ServerChild,
    (s, load): (&Scenario, &VllmLoad),
    n: u64,
    dir: &Path,
    tag: &str,
) -> RunOut {
    std::fs::create_dir_all(dir).unwrap();
    let script = dir.join("vllm_capture.py");
    std::fs::write(&script, CAPTURE_PY).unwrap();
    let capture = dir.join("capture.json");
    let prefix = format!("peer-{tag}-");
    let before: Stats = server.get("stats");
    let mut cmd = Command::new(&vllm.python);
    cmd.arg(&script)
        .args(["bench", "serve", "--omni"])
        .args(["--backend", load.backend, "--endpoint", load.endpoint])
        .args(["--host", "127.0.0.1"])
        .args(["--port", &server.port().to_string(), "--model", MODEL])
        .arg("--tokenizer")
        .arg(&vllm.tokenizer)
        .args(["--dataset-name", load.dataset_name, "--dataset-path"])
        .arg(&load.dataset)
        .args(["--num-prompts", &n.to_string()]);
    match s.kind {
        StepKind::Concurrency { max_concurrency } => {
            cmd.args(["--max-concurrency", &max_concurrency.to_string()])
                .args(["--request-rate", "inf"]);
        }
        StepKind::RequestRate { request_rate } => {
            cmd.args(["--request-rate", &request_rate.to_string()]);
        }
    }
    cmd.args(["--num-warmups", &s.warmups.to_string()])
        .args([
            "--percentile-metrics",
            "e2el,audio_rtf,audio_ttfp,audio_duration",
        ])
        .args([
            "--metric-percentiles",
            "50,99",
            "--request-id-prefix",
            &prefix,
        ])
        .args(["--save-result", "--save-detailed", "--result-dir"])
        .arg(dir)
        .args([
            "--result-filename",
            "vllm.json",
            "--seed",
            "0",
            "--disable-tqdm",
        ])
        .env("DFX_PEER_OUT", &capture)
        .env("VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE", "24000")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost");
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
    ] {
        cmd.env_remove(var);
    }
    let r = run_child(cmd, &dir.join("bench.log"), s.pin);
    assert_eq!(
        r.status,
        0,
        "vllm bench failed, see {}",
        dir.join("bench.log").display()
    );
    let after: Stats = server.get("stats");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("vllm.json")).unwrap()).unwrap();
    let cap: Capture = serde_json::from_slice(&std::fs::read(&capture).unwrap()).unwrap();
    assert_eq!(
        cap.requests.len() as u64,
        n,
        "every measured request captured"
    );
    check_capture(&doc, &cap);
    let delays = server.timings();
    let ok: Vec<_> = cap.requests.iter().filter(|r| r.4).collect();
    let overhead_ms: Vec<f64> = ok
        .iter()
        .map(|(id, _, ttfp, _, _)| {
            let key = match cap.sessions.get(id).map(Vec::as_slice) {
                Some([one]) => one,
                Some(other) => panic!("{id}: {} sessions, one expected", other.len()),
                None => id,
            };
            let d = delays.get(key).expect("every request has a server timing");
            (ttfp - d) * 1000.0
        })
        .collect();
    let lag_ms = ok
        .iter()
        .filter_map(|(id, start, ..)| Some((start - cap.planned.get(id)?) * 1000.0))
        .collect();
    eprintln!(
        "    vllm bench whole process: {:.2} s CPU, of which the measured phase {:.2} s",
        r.cpu_s, cap.cpu_phase_s
    );
    RunOut {
        n,
        cpu_s: cap.cpu_phase_s,
        maxrss_kib: cap.vm_hwm_kib,
        wall_s: r.wall_s,
        overhead_ms,
        lag_ms,
        failed: doc["failed"].as_u64().unwrap_or(n),
        connections: after.connections - before.connections,
    }
}

/// The captured values are vLLM's own: their median TTFP is the result file's, and the
/// send times are the `--save-detailed` `start_times`.
fn check_capture(doc: &serde_json::Value, cap: &Capture) {
    let ttfp = Sorted::new(
        cap.requests
            .iter()
            .filter(|r| r.4)
            .map(|r| r.2 * 1000.0)
            .collect(),
    );
    let median = doc["median_audio_ttfp_ms"].as_f64().unwrap();
    assert!(
        (ttfp.median() - median).abs() < 1e-6 * median.max(1.0),
        "captured TTFP median {} != vllm's {median}",
        ttfp.median()
    );
    let mut starts: Vec<f64> = doc["start_times"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_f64())
        .collect();
    let mut mine: Vec<f64> = cap.requests.iter().map(|r| r.1).collect();
    starts.sort_by(f64::total_cmp);
    mine.sort_by(f64::total_cmp);
    assert_eq!(starts, mine, "captured send times are vllm's start_times");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |a: &str| args.iter().any(|x| x == a);
    if has("--serve-raw") {
        return raw_server::serve(raw_server::Pace::PACED);
    }
    if has("--serve-realtime-zero") {
        return raw_realtime::serve();
    }
    if has("--serve-raw-zero") {
        return raw_server::serve(raw_server::Pace::default());
    }
    if let Some(i) = args.iter().position(|a| a == "--run-native") {
        return run_native_child(&args[i + 1..]);
    }
    if let Some(i) = args.iter().position(|a| a == "--run-floor") {
        return run_floor_child(&args[i + 1..]);
    }
    if has("--list") {
        return; // test discovery: nothing to list
    }
    let mode = match (has("--bench"), has("quick")) {
        (false, _) => "smoke",
        (true, true) => "quick",
        (true, false) => "full",
    };
    let opt = |key: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(key).map(String::from))
    };
    let vllm = if mode == "smoke" {
        Err("smoke check (cargo test): the native half only".to_string())
    } else {
        find_vllm()
    };
    match &vllm {
        Ok(v) => eprintln!(
            "vllm bench: {} (tokenizer {})",
            v.python.display(),
            v.tokenizer.display()
        ),
        Err(why) => eprintln!("vllm bench not run: {why}; native half only"),
    }
    let rounds = match mode {
        "full" => opt("rounds=").map_or(2, |r| r.parse().unwrap()),
        _ => 1,
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = opt("keep=")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let only = opt("only=");
    if has("scale") {
        let lim = peer_scale::Limits::FULL;
        return peer_scale::run(vllm.as_ref().ok(), &root, lim, only.as_deref());
    }
    if mode == "smoke" {
        peer_scale::check_search();
        peer_scale::run(None, &root, peer_scale::Limits::SMOKE, None);
    }
    let server = ServerChild::start("--serve-raw");
    let mut clients = vec![
        Client::NativeFresh,
        Client::NativePooled,
        Client::FloorFresh,
        Client::FloorPooled,
    ];
    if vllm.is_ok() {
        clients.push(Client::Vllm);
    }
    let mut rows = Vec::new();
    let mut run_no = 0;
    let chosen: Vec<_> = scenarios(mode)
        .into_iter()
        .filter(|s| only.as_ref().is_none_or(|o| s.name.contains(o.as_str())))
        .collect();
    for s in &chosen {
        let here: Vec<Client> = clients.iter().copied().filter(|c| c.runs(s)).collect();
        let mut tallies: Vec<Tally> = here.iter().map(|_| Tally::default()).collect();
        for round in 0..rounds {
            // Alternate the order between rounds, so neither client always goes first.
            let mut order: Vec<usize> = (0..here.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for &ci in &order {
                let client = here[ci];
                let mut pair = Vec::new();
                for n in [s.n.0, s.n.1] {
                    run_no += 1;
                    let dir = root.join(format!("run{run_no:03}"));
                    let out = match client {
                        Client::NativePooled => run_native(&server, s, n, (true, false), &dir),
                        Client::NativeFresh => run_native(&server, s, n, (false, false), &dir),
                        Client::FloorPooled => run_native(&server, s, n, (true, true), &dir),
                        Client::FloorFresh => run_native(&server, s, n, (false, true), &dir),
                        Client::Vllm => {
                            let v = vllm.as_ref().unwrap();
                            run_vllm(
                                v,
                                &server,
                                (s, &VllmLoad::speech()),
                                n,
                                &dir,
                                &format!("{run_no}"),
                            )
                        }
                    };
                    eprintln!(
                        "  {} / {} / n={n}: {:.1} s wall, {:.2} s CPU, {:.0} MiB peak, {} connections, {} failed",
                        s.name,
                        client.label(),
                        out.wall_s,
                        out.cpu_s,
                        out.maxrss_kib as f64 / 1024.0,
                        out.connections,
                        out.failed
                    );
                    pair.push(out);
                }
                let large = pair.pop().unwrap();
                let small = pair.pop().unwrap();
                tallies[ci].add(small, large);
            }
        }
        for (ci, t) in tallies.iter().enumerate() {
            rows.push(row(&s.name, here[ci], t));
        }
    }
    drop(server);
    eprintln!(
        "\n| scenario | client | requests | TTFP overhead p50 / p99 (ms) | marginal CPU s / 1000 req | peak RSS (MiB) | send lag p99 / max (ms) | connections | failed |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        print_row(r);
    }
    if vllm.is_ok() {
        print_ratios(&rows);
    }
    let failed: u64 = rows.iter().map(|r| r.failed).sum();
    assert_eq!(failed, 0, "requests failed against the local server");
}
