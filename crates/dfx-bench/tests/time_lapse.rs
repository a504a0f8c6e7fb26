//! The time-lapse against the simulator (issue #38): the same concurrency step and the same
//! request-rate step, once on a real-time simulator and once on one sped up 10× with the
//! native bench time-lapsed by 10, read the same key figures within 10 %. The schedule
//! scales too: the sped-up rate step's sends span a tenth of the wall time.

mod native_support;

use dfx_bench::native::lapse::TimeLapse;
use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::StepKind;
use native_support::{TrialSpec, read_records, trial};
use serde_json::{Map, Value};

const MODEL: &str = "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice";
const K: f64 = 10.0;
const TEXTS: [&str; 6] = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "A short sentence.",
    "Every morning the baker opens the shop before the sun rises over the hills.",
    "Numbers like one, two and three are easy to say.",
    "She sells sea shells by the sea shore on a windy afternoon in late autumn.",
    "Good night.",
];
/// The figures compared, each a median or a step-wide rate.
const KEYS: [&str; 5] = [
    "median_audio_ttfp_ms",
    "median_e2el_ms",
    "median_audio_rtf",
    "audio_throughput",
    "request_throughput",
];

/// Runs `kind` with `n` prompts against a simulator at `speed`, the bench time-lapsed by
/// `speed`; returns the result document and the span of the measured sends (wall seconds).
fn run(kind: StepKind, n: u64, speed: f64) -> (Map<String, Value>, f64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let sim = rt
        .block_on(dfx_sim::spawn(dfx_sim::SimOptions::new(MODEL).speed(speed)))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    native_support::text_dataset(&dir.path().join("ds"), &TEXTS);
    let t = trial(TrialSpec {
        dataset_path: dir.path().join("ds").to_str().unwrap(),
        kind,
        num_prompts: n,
        num_warmups: Some(1),
        percentile_metrics: Some("e2el,audio_ttfp,audio_rtf,audio_duration"),
        model: MODEL,
        ..TrialSpec::default()
    });
    let bench = NativeBench::new(NativeSettings {
        auth_token_env: None,
        progress: false,
        time_lapse: TimeLapse::new(speed).unwrap(),
        ..NativeSettings::default()
    });
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let ctx = BenchContext {
        trial: &t,
        base_url: sim.base_url(),
        host: "127.0.0.1".into(),
        port: sim.addr.port(),
        out_dir: out.clone(),
        hardware: "SIM".into(),
        judge_url: None,
        server_group: None,
    };
    let started = std::time::Instant::now();
    let outcome = bench.run(&ctx);
    let wall = started.elapsed().as_secs_f64();
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert!(outcome.invalid_load.is_none(), "{:?}", outcome.invalid_load);
    let doc = outcome.result.unwrap();
    assert_eq!(doc["completed"], n, "{}", outcome.log_tail);
    let recs = read_records(&out);
    let sends: Vec<f64> = recs
        .iter()
        .filter(|r| r["warmup"] == false)
        .map(|r| r["planned_send_s"].as_f64().unwrap())
        .collect();
    let span = sends.iter().copied().fold(0.0, f64::max);
    eprintln!("speed {speed}: {wall:.2} s wall, planned sends span {span:.2} s (real-time scale)");
    (doc, wall)
}

/// Every key of `a` and `b` within 10 % of `a`'s.
fn agree(a: &Map<String, Value>, b: &Map<String, Value>, what: &str) {
    let mut table = String::new();
    let mut off = Vec::new();
    for k in KEYS {
        let (x, y) = (a[k].as_f64().unwrap(), b[k].as_f64().unwrap());
        let rel = (y - x) / x;
        table.push_str(&format!("{k}: speed 1 {x:.4}, speed {K} {y:.4} ({:+.1} %)\n", rel * 100.0));
        if rel.abs() > 0.10 {
            off.push(k);
        }
    }
    eprintln!("{what}\n{table}");
    assert!(off.is_empty(), "{what}: {off:?} beyond 10 %\n{table}");
}

#[test]
fn a_concurrency_step_time_lapsed_reads_what_real_time_reads() {
    let kind = StepKind::Concurrency { max_concurrency: 2 };
    let (real, real_wall) = run(kind.clone(), 8, 1.0);
    let (fast, fast_wall) = run(kind, 8, K);
    agree(&real, &fast, "c=2, 8 prompts");
    assert!(fast_wall < real_wall, "{fast_wall} s vs {real_wall} s");
}

#[test]
fn a_rate_step_time_lapsed_reads_what_real_time_reads_in_a_tenth_of_the_time() {
    let kind = StepKind::RequestRate { request_rate: 3.0 };
    let (real, real_wall) = run(kind.clone(), 9, 1.0);
    let (fast, fast_wall) = run(kind, 9, K);
    agree(&real, &fast, "3 req/s, 9 prompts");
    // The sends of 9 arrivals at 3/s span about 3 s on the real-time scale either way; the
    // sped-up step's whole wall time is well under the real-time step's.
    assert!(fast_wall < real_wall / 2.0, "{fast_wall} s vs {real_wall} s");
}
