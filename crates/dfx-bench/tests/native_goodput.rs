//! `goodput` end to end (issue #38 item 5): speech steps against the simulator. An SLO no
//! request can meet gives `request_goodput` 0 and `slo_attainment` 0; SLOs every request
//! meets give `request_goodput` equal to `request_throughput` (same requests, same
//! duration) and `slo_attainment` 1. The summary prints vllm's goodput line.

mod native_support;

use dfx_bench::native::NativeBench;
use dfx_core::bench::Bench;
use native_support::{TrialSpec, trial};
use serde_json::{Map, Value};

const MODEL: &str = "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice";
const TEXTS: [&str; 3] = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "A short sentence.",
    "Numbers like one, two and three are easy to say.",
];
const N: u64 = 6;

/// One concurrency-2 step of `N` prompts with `goodput`, against `sim`: the result and
/// the step's `bench.log`.
fn run(sim: &dfx_sim::SimHandle, goodput: &str) -> (Map<String, Value>, String) {
    let dir = tempfile::tempdir().unwrap();
    native_support::text_dataset(&dir.path().join("ds"), &TEXTS);
    let t = trial(TrialSpec {
        dataset_path: dir.path().join("ds").to_str().unwrap(),
        num_prompts: N,
        percentile_metrics: Some("e2el,audio_ttfp,audio_rtf,audio_duration"),
        model: MODEL,
        goodput: Some(goodput),
        extra_body: Some(serde_json::json!({"voice": "Vivian"})),
        ..TrialSpec::default()
    });
    let bench = NativeBench::new(native_support::quiet_settings());
    let out = dir.path().join("out");
    let ctx = native_support::sim_context(&t, sim.base_url(), sim.addr.port(), &out);
    assert_eq!(bench.preflight(&t).map(|_| ()), Ok(()));
    let outcome = bench.run(&ctx);
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    let doc = outcome.result.unwrap();
    assert_eq!(doc["completed"], N, "{}", outcome.log_tail);
    let log = std::fs::read_to_string(out.join("bench.log")).unwrap();
    (doc, log)
}

fn num(doc: &Map<String, Value>, key: &str) -> f64 {
    doc[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key}: {}", doc[key]))
}

#[test]
fn a_tight_slo_gives_no_goodput_and_a_loose_one_the_request_throughput() {
    let (_rt, sim) = native_support::spawn_sim(MODEL, 10.0);

    // 1 µs end to end: no request over loopback HTTP can meet it.
    let (tight, log) = run(&sim, "e2el:0.001");
    assert_eq!(num(&tight, "request_goodput"), 0.0);
    assert_eq!(num(&tight, "slo_attainment"), 0.0);
    assert!(num(&tight, "request_throughput") > 0.0);
    assert!(
        log.contains("Request goodput (req/s):                 0.00"),
        "{log}"
    );
    assert!(
        log.contains("SLO attainment (goodput SLOs):           0.00%"),
        "{log}"
    );

    // Every SLO, each far above anything a simulated step takes.
    let loose = "ttft:600000 tpot:1 e2el:600000 audio_ttfp:600000 audio_rtf:1000 \
                 continuity:600000";
    let (doc, log) = run(&sim, loose);
    let (goodput, throughput) = (
        num(&doc, "request_goodput"),
        num(&doc, "request_throughput"),
    );
    assert!(throughput > 0.0);
    assert_eq!(goodput, throughput, "{doc:?}");
    assert_eq!(num(&doc, "slo_attainment"), 1.0);
    // vllm's key in vllm's place; dfx-perf's after dfx-perf's other keys.
    let at = |key: &str| doc.keys().position(|k| k == key).unwrap();
    assert_eq!(at("request_goodput"), at("request_throughput") + 1);
    assert!(at("slo_attainment") > at("result_source"));
    // vllm's line right after the request throughput.
    let at = log.find("Request throughput (req/s):").unwrap();
    let next = log[at..].lines().nth(1).unwrap();
    assert!(next.starts_with("Request goodput (req/s):"), "{log}");
    assert!(
        log.contains("SLO attainment (goodput SLOs):           100.00%"),
        "{log}"
    );
}
