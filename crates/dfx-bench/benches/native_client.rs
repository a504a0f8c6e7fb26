//! Benchmark of the native bench's client (not a test): TTFP measurement overhead at 1, 64
//! and 256 concurrent streams, open-loop send lag at 50 and 200 req/s, and client CPU per
//! 1000 streamed requests, against a local server with a fixed first-chunk delay running
//! in a child process (so the client's CPU time is its own).
//!
//! `cargo bench -p dfx-bench --bench native_client` (add `-- quick` for a quarter of the
//! requests; `only=TEXT` to pick scenarios by name; `keep=DIR` to keep their records).
//! Under `cargo test --all-targets` it runs a two-scenario smoke check.

#[path = "../tests/native_support/mod.rs"]
mod native_support;
#[path = "support/raw_server.rs"]
mod raw_server;
#[path = "support/server_child.rs"]
mod server_child;

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use dfx_bench::native::stats::Sorted;
use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::{ConnectionMode, StepKind};
use native_support::{Scripted, TrialSpec, read_records, trial};
use server_child::ServerChild;

/// Which local server a scenario runs against.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Server {
    /// `raw_server`: minimal HTTP/1.1, so the figures are mostly the client's.
    Raw,
    /// The axum server of the tests (hyper), for comparison.
    Axum,
}

fn serve_axum() {
    let server = Scripted::start_with(true, 2);
    println!("{}", server.base_url);
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

fn cpu_seconds() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

struct Run {
    overhead_ms: Sorted,
    steady_ms: Sorted,
    lag_ms: Sorted,
    connect_ms: Sorted,
    /// Send path and read path of the overhead (raw server only), see [`split`].
    split: Option<(Sorted, Sorted)>,
    cpu_per_1000: f64,
    failed: u64,
}

struct Scenario {
    name: String,
    server: Server,
    kind: StepKind,
    n: u64,
    warmups: u32,
    connection: ConnectionMode,
}

fn run(server: &ServerChild, s: &Scenario, dir: &Path) -> Run {
    let ds =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../perf-configs/datasets/seed_tts_smoke");
    let t = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        kind: s.kind,
        num_prompts: s.n,
        num_warmups: Some(s.warmups),
        ..TrialSpec::default()
    });
    let port = server.port();
    let ctx = BenchContext {
        trial: &t,
        base_url: server.base_url.clone(),
        host: "127.0.0.1".into(),
        port,
        out_dir: dir.to_path_buf(),
        hardware: "na".into(),
        judge_url: None,
        server_group: None,
    };
    let settings = NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    };
    let bench = NativeBench::new(settings).with_connection(s.connection);
    let cpu0 = cpu_seconds();
    let outcome = bench.run(&ctx);
    let cpu = cpu_seconds() - cpu0;
    let doc = outcome.result.expect("a result");
    let recs: Vec<_> = read_records(dir)
        .into_iter()
        .filter(|r| r["warmup"] == false)
        .collect();
    let col = |key: &str| {
        Sorted::new(
            recs.iter()
                .filter_map(|r| r[key].as_f64())
                .map(|v| v * 1000.0)
                .collect(),
        )
    };
    // Overhead = client TTFP − the server's own first-chunk delay for that request, so
    // the server's timer lateness is not charged to the client. The raw server measures
    // its delay from the request's kernel receive time, so its own scheduling delays are
    // not charged to the client either.
    let server_delay = server.timings();
    let timings_json = serde_json::to_vec(&server_delay).unwrap();
    std::fs::write(dir.join("server_timings.json"), timings_json).unwrap();
    let split = (s.server == Server::Raw).then(|| {
        let marks: HashMap<String, (f64, f64)> = server.get("marks");
        std::fs::write(
            dir.join("server_marks.json"),
            serde_json::to_vec(&marks).unwrap(),
        )
        .unwrap();
        split(&recs, &marks)
    });
    let overhead_of = |r: &serde_json::Value| -> Option<f64> {
        let id = r["request_id"].as_str()?;
        Some((r["ttfp_s"].as_f64()? - server_delay.get(id)?) * 1000.0)
    };
    let overhead: Vec<f64> = recs.iter().filter_map(overhead_of).collect();
    assert_eq!(
        overhead.len(),
        recs.len(),
        "every request has a server timing"
    );
    // Steady state: a closed loop starts with a burst of `c` simultaneous sends.
    let burst = match s.kind {
        StepKind::Concurrency { max_concurrency } => u64::from(max_concurrency.get()),
        StepKind::RequestRate { .. } => 0,
    };
    let steady: Vec<f64> = recs
        .iter()
        .filter(|r| r["index"].as_u64().unwrap_or(0) >= burst)
        .filter_map(overhead_of)
        .collect();
    Run {
        overhead_ms: Sorted::new(overhead),
        steady_ms: Sorted::new(steady),
        lag_ms: col("lag_s"),
        connect_ms: col("connect_s"),
        split,
        cpu_per_1000: cpu / (s.n + u64::from(s.warmups)) as f64 * 1000.0,
        failed: doc["failed"].as_u64().unwrap_or(0),
    }
}

/// Splits each overhead into its send path (clock read before sending → request in the
/// server's socket buffer) and read path (first chunk written → client timestamp), in ms.
/// The client's phase start is not exported, so it is placed where the fastest request's
/// send path is zero: the send path is understated and the read path overstated by that
/// request's true send path (tens of µs).
fn split(recs: &[serde_json::Value], marks: &HashMap<String, (f64, f64)>) -> (Sorted, Sorted) {
    let rows: Vec<(f64, f64, f64, f64)> = recs
        .iter()
        .filter_map(|r| {
            let (arrived, written) = marks.get(r["request_id"].as_str()?)?;
            Some((
                r["actual_send_s"].as_f64()?,
                r["ttfp_s"].as_f64()?,
                *arrived,
                *written,
            ))
        })
        .collect();
    let base = rows
        .iter()
        .map(|(send, _, arrived, _)| arrived - send)
        .fold(f64::INFINITY, f64::min);
    let send = rows.iter().map(|(s, _, a, _)| (a - base - s) * 1e3);
    let read = rows.iter().map(|(s, t, _, w)| (base + s + t - w) * 1e3);
    (Sorted::new(send.collect()), Sorted::new(read.collect()))
}

fn scenarios(mode: &str) -> Vec<Scenario> {
    let closed = |c: u32| StepKind::Concurrency {
        max_concurrency: std::num::NonZeroU32::new(c).unwrap(),
    };
    let open = |r: f64| StepKind::RequestRate { request_rate: r };
    let sc = |name: String, server, kind, n, warmups, connection| Scenario {
        name,
        server,
        kind,
        n,
        warmups,
        connection,
    };
    if mode == "smoke" {
        return vec![
            sc(
                "closed loop c=2, pooled".into(),
                Server::Raw,
                closed(2),
                4,
                2,
                ConnectionMode::Pooled,
            ),
            sc(
                "open loop 50 req/s, pooled".into(),
                Server::Axum,
                open(50.0),
                5,
                2,
                ConnectionMode::Pooled,
            ),
        ];
    }
    let scale = if mode == "quick" { 4 } else { 1 };
    let mut out = Vec::new();
    for connection in [ConnectionMode::Pooled, ConnectionMode::Fresh] {
        let conn = connection.as_str();
        for c in [1u32, 64, 256] {
            let n = (u64::from(c) * 16).max(200) / scale;
            let name = format!("closed loop c={c}, {conn}");
            out.push(sc(name, Server::Raw, closed(c), n, c, connection));
        }
    }
    for rate in [50.0, 200.0] {
        let n = (rate * 5.0) as u64 / scale;
        let name = format!("open loop {rate} req/s, pooled");
        out.push(sc(
            name,
            Server::Raw,
            open(rate),
            n,
            2,
            ConnectionMode::Pooled,
        ));
    }
    let n = 1024 / scale;
    let name = "closed loop c=256, pooled, axum server".to_string();
    out.push(sc(
        name,
        Server::Axum,
        closed(256),
        n,
        256,
        ConnectionMode::Pooled,
    ));
    out
}

fn report(s: &Scenario, r: &Run) {
    let steady = if r.steady_ms.is_empty() {
        "n/a".to_string()
    } else {
        format!(
            "{:.2} / {:.2}",
            r.steady_ms.median(),
            r.steady_ms.percentile(99.0)
        )
    };
    let split = match &r.split {
        Some((send, read)) => format!(
            "{:.2} / {:.2}",
            send.percentile(99.0),
            read.percentile(99.0)
        ),
        None => "—".into(),
    };
    eprintln!(
        "| {} | {} | {:.2} / {:.2} | {steady} | {split} | {:.3} / {:.3} | {:.2} | {:.2} | {} |",
        s.name,
        s.n,
        r.overhead_ms.median(),
        r.overhead_ms.percentile(99.0),
        r.lag_ms.percentile(99.0),
        r.lag_ms.percentile(100.0),
        r.connect_ms.percentile(99.0),
        r.cpu_per_1000,
        r.failed
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |a: &str| args.iter().any(|x| x == a);
    if has("--serve-raw") {
        return raw_server::serve(raw_server::Pace::PACED);
    }
    if has("--serve-axum") {
        return serve_axum();
    }
    if has("--list") {
        return; // test discovery: nothing to list
    }
    let mode = match (has("--bench"), has("quick")) {
        (false, _) => "smoke",
        (true, true) => "quick",
        (true, false) => "full",
    };
    let raw = ServerChild::start("--serve-raw");
    let axum = ServerChild::start("--serve-axum");
    // `keep=DIR` keeps every scenario's records.jsonl / bench.log; `only=TEXT` runs the
    // scenarios whose name contains TEXT.
    let opt = |key: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(key).map(String::from))
    };
    let tmp = tempfile::tempdir().unwrap();
    let out_root = opt("keep=")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let only = opt("only=");
    eprintln!(
        "\n| scenario | requests | TTFP overhead p50 / p99 (ms) | after the initial burst p50 / p99 (ms) | send path / read path p99 (ms) | send lag p99 / max (ms) | connect p99 (ms) | client CPU s / 1000 req | failed |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|---|");
    let mut failed = 0;
    let chosen = scenarios(mode)
        .into_iter()
        .filter(|s| only.as_ref().is_none_or(|o| s.name.contains(o.as_str())));
    for (i, s) in chosen.enumerate() {
        let server = if s.server == Server::Raw { &raw } else { &axum };
        let r = run(server, &s, &out_root.join(format!("case{i}")));
        report(&s, &r);
        failed += r.failed;
    }
    drop((raw, axum));
    assert_eq!(failed, 0, "requests failed against the local servers");
}
