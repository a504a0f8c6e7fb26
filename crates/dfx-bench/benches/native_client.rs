//! Benchmark of the native bench's client (not a test): TTFP measurement overhead at 1, 64
//! and 256 concurrent streams, open-loop send lag at 50 and 200 req/s, and client CPU per
//! 1000 streamed requests, against a local server with a fixed first-chunk delay running
//! in a child process (so the client's CPU time is its own).
//!
//! `cargo bench -p dfx-bench --bench native_client` (add `-- quick` for a short run).

#[path = "../tests/native_support/mod.rs"]
mod native_support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use dfx_bench::native::stats::Sorted;
use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::StepKind;
use native_support::{Scripted, TrialSpec, read_records, trial};

/// Child mode: serve until stdin closes.
fn serve() {
    let server = Scripted::start_with(true, 2);
    println!("{}", server.base_url);
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

fn cpu_seconds() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

struct Run {
    overhead_ms: Sorted,
    steady_ms: Sorted,
    lag_ms: Sorted,
    connect_ms: Sorted,
    cpu_per_1000: f64,
    failed: u64,
}

fn run(base_url: &str, kind: StepKind, n: u64, warmups: u32, reuse: bool, dir: &Path) -> Run {
    let ds =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../perf-configs/datasets/seed_tts_smoke");
    let t = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        kind,
        num_prompts: n,
        num_warmups: Some(warmups),
        ..TrialSpec::default()
    });
    let port = base_url.rsplit(':').next().unwrap().parse().unwrap();
    let ctx = BenchContext {
        trial: &t,
        base_url: base_url.to_string(),
        host: "127.0.0.1".into(),
        port,
        out_dir: dir.to_path_buf(),
        hardware: "na".into(),
    };
    let settings = NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    };
    let bench = NativeBench::new(settings).with_connection_reuse(reuse);
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
    // the server's timer lateness is not charged to the client.
    let server = server_timings(base_url);
    let overhead_of = |r: &serde_json::Value| -> Option<f64> {
        Some((r["ttfp_s"].as_f64()? - server.get(r["request_id"].as_str()?)?) * 1000.0)
    };
    let overhead: Vec<f64> = recs.iter().filter_map(overhead_of).collect();
    assert_eq!(
        overhead.len(),
        recs.len(),
        "every request has a server timing"
    );
    // Steady state: a closed loop starts with a burst of `c` simultaneous sends.
    let burst = match kind {
        StepKind::Concurrency { max_concurrency } => max_concurrency as u64,
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
        cpu_per_1000: cpu / (n + u64::from(warmups)) as f64 * 1000.0,
        failed: doc["failed"].as_u64().unwrap_or(0),
    }
}

/// `GET /timings` of the server child.
fn server_timings(base_url: &str) -> HashMap<String, f64> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let r = client
            .get(format!("{base_url}/timings"))
            .send()
            .await
            .unwrap();
        r.json::<HashMap<String, f64>>().await.unwrap()
    })
}

/// `(label, load, measured requests, warmups, reuse connections)`.
type Scenario = (String, StepKind, u64, u32, bool);

fn scenarios(mode: &str) -> Vec<Scenario> {
    let closed = |c: u32| StepKind::Concurrency { max_concurrency: c };
    let open = |r: f64| StepKind::RequestRate { request_rate: r };
    if mode == "smoke" {
        // `cargo test --all-targets` runs this binary without `--bench`: prove the
        // benchmark code works, in about a second.
        return vec![
            ("closed loop c=2, pooled".into(), closed(2), 4, 2, true),
            ("open loop 50 req/s, pooled".into(), open(50.0), 5, 2, true),
        ];
    }
    let scale = if mode == "quick" { 4 } else { 1 };
    let mut out = Vec::new();
    for reuse in [true, false] {
        let conn = if reuse { "pooled" } else { "fresh" };
        for c in [1u32, 64, 256] {
            let n = (u64::from(c) * 4).max(200) / scale;
            out.push((format!("closed loop c={c}, {conn}"), closed(c), n, c, reuse));
        }
    }
    for rate in [50.0, 200.0] {
        let n = (rate * 5.0) as u64 / scale;
        out.push((
            format!("open loop {rate} req/s, pooled"),
            open(rate),
            n,
            2,
            true,
        ));
    }
    out
}

fn report(name: &str, n: u64, r: &Run) {
    let steady = if r.steady_ms.is_empty() {
        "n/a".to_string()
    } else {
        format!(
            "{:.2} / {:.2}",
            r.steady_ms.median(),
            r.steady_ms.percentile(99.0)
        )
    };
    eprintln!(
        "| {name} | {n} | {:.2} / {:.2} | {steady} | {:.3} / {:.3} | {:.2} | {:.2} | {} |",
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
    if args.iter().any(|a| a == "--serve") {
        return serve();
    }
    if args.iter().any(|a| a == "--list") {
        return; // test discovery: nothing to list
    }
    let mode = if !args.iter().any(|a| a == "--bench") {
        "smoke"
    } else if args.iter().any(|a| a == "quick") {
        "quick"
    } else {
        "full"
    };
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg("--serve")
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the server child");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base_url = line.trim().to_string();
    let tmp = tempfile::tempdir().unwrap();
    eprintln!(
        "\n| scenario | requests | TTFP overhead p50 / p99 (ms) | after the initial burst p50 / p99 (ms) | send lag p99 / max (ms) | connect p99 (ms) | client CPU s / 1000 req | failed |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|");
    let mut failed = 0;
    for (i, (name, kind, n, warmups, reuse)) in scenarios(mode).into_iter().enumerate() {
        let dir = tmp.path().join(format!("case{i}"));
        let r = run(&base_url, kind, n, warmups, reuse, &dir);
        report(&name, n, &r);
        failed += r.failed;
    }
    // Closing stdin ends the child; kill it too in case it hangs. Only our own child.
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(failed, 0, "requests failed against the local server");
}
