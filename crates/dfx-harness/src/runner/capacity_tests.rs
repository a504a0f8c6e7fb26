//! The capacity search against a bench with a known latency curve: bracketing,
//! bisection, the boundary confirmed by repeats, and the cases without an answer.

use std::sync::{Arc, Mutex};

use dfx_core::bench::{Bench, BenchContext, BenchKind, BenchOutcome, Unsupported};
use dfx_core::plan::{BenchEntry, CapacitySpec, StepKind};
use serde_json::{Value, json};

use super::Ran;
use super::tests::{fixture, result_json};
use dfx_testkit::trials::concurrency_trial;

/// p99 TTFP = 100 ms / (1 − rate / 10): 500 ms at 8 req/s, unbounded at 10. With
/// `flaky_above`, repeats after the first fail at rates above it.
struct Curve {
    rates: Arc<Mutex<Vec<(f64, u64)>>>,
    flaky_above: Option<f64>,
}

impl Bench for Curve {
    fn kind(&self) -> BenchKind {
        BenchKind::Vllm
    }
    fn supports(&self, _entry: &BenchEntry) -> Result<(), Unsupported> {
        Ok(())
    }
    fn run(&self, ctx: &BenchContext<'_>) -> BenchOutcome {
        let rate = ctx.trial.step.request_rate().expect("probes are open-loop");
        let seed = ctx.trial.entry.seed.unwrap_or(0);
        self.rates.lock().unwrap().push((rate, seed));
        let mut ttfp = if rate < 10.0 {
            100.0 / (1.0 - rate / 10.0)
        } else {
            1e9
        };
        if self.flaky_above.is_some_and(|f| rate > f) && seed > 0 {
            ttfp = 1e9;
        }
        let line = json!({"warmup": false, "text_len": 40}).to_string();
        std::fs::write(
            ctx.out_dir.join("records.jsonl"),
            format!("{line}\n{line}\n"),
        )
        .unwrap();
        let doc = json!({"completed": 8, "failed": 0, "num_prompts": 8,
            "p99_audio_ttfp_ms": ttfp, "audio_continuity_ok_rate": 1.0, "request_throughput": rate});
        BenchOutcome {
            result: doc.as_object().cloned(),
            ..BenchOutcome::default()
        }
    }
}

fn spec() -> CapacitySpec {
    CapacitySpec {
        max_p99_ttfp_ms: 500.0,
        min_continuity: 0.95,
        start_rate: 1.0,
        min_rate: 0.1,
        max_rate: 64.0,
        tolerance: 0.1,
        boundary_repeats: std::num::NonZeroU32::new(3).unwrap(),
        max_probes: 24,
    }
}

fn search(
    spec: CapacitySpec,
    flaky_above: Option<f64>,
) -> (Result<Ran, String>, Value, Vec<(f64, u64)>) {
    search_with(spec, flaky_above, None)
}

/// The search with `--repeats` (`flag`).
fn search_with(
    spec: CapacitySpec,
    flaky_above: Option<f64>,
    flag: Option<u32>,
) -> (Result<Ran, String>, Value, Vec<(f64, u64)>) {
    let mut t = concurrency_trial("test_a", "cap", 1, 8);
    t.step.kind = StepKind::RequestRate {
        request_rate: spec.start_rate,
    };
    let mut e: BenchEntry = (*t.entry).clone();
    e.capacity = Some(spec);
    t.entry = Arc::new(e);
    let rates = Arc::new(Mutex::new(Vec::new()));
    let bench = Curve {
        rates: rates.clone(),
        flaky_above,
    };
    let mut f = fixture(vec![t], Box::new(bench), false);
    f.session.gpu_hour_price = Some(3.6);
    f.session.repeats = flag.and_then(std::num::NonZeroU32::new);
    let out = f.session.run_trial(0).map_err(|e| e.to_string());
    let doc = Value::Object(result_json(&f, 0));
    let seen = rates.lock().unwrap().clone();
    (out, doc, seen)
}

#[test]
fn brackets_bisects_and_confirms_the_boundary() {
    let (out, doc, seen) = search(spec(), None);
    assert!(matches!(out, Ok(Ran::Passed)), "{out:?}");
    let found = doc["capacity_request_rate"].as_f64().unwrap();
    assert!((8.0 / 1.1 - 1e-9..=8.0).contains(&found), "found {found}");
    // 8 req/s is a hair above 500 ms in floating point: the first miss.
    let first: Vec<f64> = seen.iter().take(4).map(|s| s.0).collect();
    assert_eq!(first, [1.0, 2.0, 4.0, 8.0], "doubling until a miss");
    let probes = doc["capacity"]["probes"].as_array().unwrap();
    let last = probes.last().unwrap();
    assert_eq!(
        (last["rate"].as_f64(), last["repeats"].clone()),
        (Some(found), json!(3))
    );
    assert!(probes.iter().any(|p| p["passed"] == json!(false)
        && p["miss"].as_str().unwrap().contains("p99_audio_ttfp_ms")));
    let bracket = doc["capacity"]["bracket"].as_array().unwrap();
    let (lo, hi) = (bracket[0].as_f64().unwrap(), bracket[1].as_f64().unwrap());
    assert!(hi / lo - 1.0 <= 0.1 && lo == found, "{bracket:?}");
    // 3.6 per GPU-hour, 1 GPU, 40 characters a request: 3.6 / (found × 40 × 3600) × 1e6.
    let cost = doc["cost_per_1m_chars"].as_f64().unwrap();
    assert!(
        (cost - 1e6 / (found * 40.0 * 1000.0)).abs() < 1e-9,
        "{cost}"
    );
    assert_eq!(
        doc["capacity"]["cost"]["gpus_from"],
        json!("assumed (no GPU samples, no CUDA_VISIBLE_DEVICES)")
    );
}

#[test]
fn a_boundary_that_fails_its_repeats_moves_down() {
    // Single probes pass up to 8 req/s, but repeats above 6 do not: the answer is ≤ 6.
    let (out, doc, _) = search(spec(), Some(6.0));
    assert!(matches!(out, Ok(Ran::Passed)), "{out:?}");
    let found = doc["capacity_request_rate"].as_f64().unwrap();
    assert!((6.0 / 1.1 - 1e-9..=6.0).contains(&found), "found {found}");
    let probes = doc["capacity"]["probes"].as_array().unwrap();
    assert!(
        probes
            .iter()
            .any(|p| p["repeats"] == json!(3) && p["passed"] == json!(false))
    );
}

#[test]
fn no_passing_rate_fails_and_every_rate_passing_says_at_least() {
    let strict = CapacitySpec {
        max_p99_ttfp_ms: 50.0,
        ..spec()
    };
    let (out, doc, seen) = search(strict, None);
    let err = out.unwrap_err();
    assert!(err.contains("no probed rate met the criteria"), "{err}");
    assert_eq!(doc["capacity_request_rate"], json!(0.0));
    assert!(
        seen.iter().any(|s| s.0 <= 0.1 + 1e-12),
        "halved down to min_rate: {seen:?}"
    );

    let low_max = CapacitySpec {
        max_rate: 4.0,
        ..spec()
    };
    let (out, doc, _) = search(low_max, None);
    assert!(matches!(out, Ok(Ran::Passed)), "{out:?}");
    assert_eq!(doc["capacity_request_rate"], json!(4.0));
    assert!(
        doc["capacity"]["note"]
            .as_str()
            .unwrap()
            .contains("at least")
    );
}

#[test]
fn repeats_run_every_probe_that_often_and_at_least_boundary_repeats_confirm() {
    let (out, doc, seen) = search_with(spec(), None, Some(2));
    assert!(matches!(out, Ok(Ran::Passed)), "{out:?}");
    let found = doc["capacity_request_rate"].as_f64().unwrap();
    assert!((8.0 / 1.1 - 1e-9..=8.0).contains(&found), "found {found}");
    let probes = doc["capacity"]["probes"].as_array().unwrap();
    let (last, searched) = probes.split_last().unwrap();
    assert!(
        searched.iter().all(|p| p["repeats"] == json!(2)),
        "{probes:?}"
    );
    assert_eq!(
        last["repeats"],
        json!(3),
        "boundary_repeats 3 > --repeats 2"
    );
    let runs: u64 = probes.iter().map(|p| p["repeats"].as_u64().unwrap()).sum();
    assert_eq!(seen.len() as u64, runs, "every repeat is a bench run");

    // Repeats at or above boundary_repeats: each probe is already confirmed.
    let (out, doc, seen) = search_with(spec(), None, Some(4));
    assert!(matches!(out, Ok(Ran::Passed)), "{out:?}");
    let probes = doc["capacity"]["probes"].as_array().unwrap();
    assert!(
        probes.iter().all(|p| p["repeats"] == json!(4)),
        "{probes:?}"
    );
    let rates: Vec<f64> = probes.iter().map(|p| p["rate"].as_f64().unwrap()).collect();
    let mut unique = rates.clone();
    unique.dedup();
    assert_eq!(rates, unique, "no rate probed twice: {rates:?}");
    assert_eq!(seen.len(), 4 * probes.len());
}
