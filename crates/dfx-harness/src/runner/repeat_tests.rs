//! Repeats through the runner: folders, seeds, the combined result and the verdict on
//! the median.

use std::sync::{Arc, Mutex};

use dfx_core::baseline::Direction;
use dfx_core::bench::{Bench, BenchContext, BenchKind, BenchOutcome, Unsupported};
use dfx_core::plan::BenchEntry;
use serde_json::json;

use super::Ran;
use super::tests::{entry, fixture, result_json};
use crate::summary::Outcome;
use dfx_testkit::trials::{concurrency_trial, threshold};

/// A bench whose TTFP is `100 + 10 × seed` ms and which loses a request on `lose_seed`.
struct SeededBench {
    seen: Arc<Mutex<Vec<(u64, std::path::PathBuf)>>>,
    lose_seed: Option<u64>,
}

impl Bench for SeededBench {
    fn kind(&self) -> BenchKind {
        BenchKind::Vllm
    }
    fn supports(&self, _entry: &BenchEntry) -> Result<(), Unsupported> {
        Ok(())
    }
    fn run(&self, ctx: &BenchContext<'_>) -> BenchOutcome {
        let seed = ctx.trial.entry.seed.unwrap_or(0);
        self.seen.lock().unwrap().push((seed, ctx.out_dir.clone()));
        std::fs::write(ctx.out_dir.join("bench.log"), format!("seed {seed}\n")).unwrap();
        let lost = u64::from(self.lose_seed == Some(seed));
        let doc = json!({"completed": 4 - lost, "failed": lost, "num_prompts": 4,
                         "p99_audio_ttfp_ms": 100.0 + 10.0 * seed as f64,
                         "request_throughput": 2.0});
        BenchOutcome {
            result: doc.as_object().cloned(),
            ..BenchOutcome::default()
        }
    }
}

fn repeated_trial(repeats: u32, ttfp_bound: f64) -> dfx_core::plan::Trial {
    let mut t = concurrency_trial("test_a", "clone", 1, 4);
    let mut e: BenchEntry = (*t.entry).clone();
    e.repeats = std::num::NonZeroU32::new(repeats);
    e.seed = Some(7);
    t.entry = Arc::new(e);
    t.thresholds.items.push(threshold(
        "p99_audio_ttfp_ms",
        ttfp_bound,
        Direction::LowerIsBetter,
    ));
    t
}

#[test]
fn each_repeat_runs_in_its_folder_with_its_seed_and_the_verdict_judges_the_median() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let bench = SeededBench {
        seen: seen.clone(),
        lose_seed: None,
    };
    // TTFPs 170, 180, 190: the median 180 passes a bound of 185 although repeat 3 does not.
    let mut f = fixture(vec![repeated_trial(3, 185.0)], Box::new(bench), true);
    let out = f.session.run_trial(0);
    assert!(matches!(out, Ok(Ran::Passed)), "{out:?}");
    let dir = f.session.run.trial_dir(&f.session.planned[0].dir_name);
    let seen = seen.lock().unwrap().clone();
    let seeds: Vec<u64> = seen.iter().map(|s| s.0).collect();
    assert_eq!(seeds, [7, 8, 9]);
    for (k, (_, out_dir)) in seen.iter().enumerate() {
        assert_eq!(out_dir, &dir.join(format!("repeat-{}", k + 1)));
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join("result.json")).unwrap())
                .unwrap();
        assert_eq!(r["repeat"]["index"], json!(k + 1));
        assert!(out_dir.join("bench.log").is_file());
    }
    let doc = result_json(&f, 0);
    assert_eq!(doc["p99_audio_ttfp_ms"], json!(180.0));
    let stats = &doc["repeats"]["stats"]["p99_audio_ttfp_ms"];
    assert_eq!(stats["values"], json!([170.0, 180.0, 190.0]));
    assert!(stats["std"].as_f64().unwrap() > 9.9);
    let (lo, hi) = (
        stats["ci95_low"].as_f64().unwrap(),
        stats["ci95_high"].as_f64().unwrap(),
    );
    assert!(lo <= 180.0 && 180.0 <= hi && lo < hi, "{lo} {hi}");
    let e = entry(&f, 0);
    assert_eq!(e.outcome, Outcome::Passed);
    let r = e.repeats.expect("summary has the repeats");
    assert_eq!(r.count, Some(3));
    assert_eq!(r.stats["p99_audio_ttfp_ms"]["median"], json!(180.0));
}

#[test]
fn the_median_breaching_fails_and_a_repeat_that_lost_a_request_fails_the_trial() {
    let bench = SeededBench {
        seen: Default::default(),
        lose_seed: None,
    };
    let mut f = fixture(vec![repeated_trial(3, 175.0)], Box::new(bench), true);
    let err = f.session.run_trial(0).unwrap_err().to_string();
    assert!(err.contains("p99_audio_ttfp_ms"), "{err}");

    let bench = SeededBench {
        seen: Default::default(),
        lose_seed: Some(8),
    };
    let mut f = fixture(vec![repeated_trial(3, 1000.0)], Box::new(bench), false);
    let err = f.session.run_trial(0).unwrap_err().to_string();
    let doc = result_json(&f, 0);
    assert_eq!(
        (doc["completed"].clone(), doc["failed"].clone()),
        (json!(3), json!(1))
    );
    assert!(
        err.contains('3') && err.contains('4'),
        "names the counts: {err}"
    );
}

#[test]
fn one_repeat_writes_into_the_trial_folder_as_before() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let bench = SeededBench {
        seen: seen.clone(),
        lose_seed: None,
    };
    let mut f = fixture(vec![repeated_trial(1, 1000.0)], Box::new(bench), true);
    assert!(matches!(f.session.run_trial(0), Ok(Ran::Passed)));
    let dir = f.session.run.trial_dir(&f.session.planned[0].dir_name);
    assert_eq!(seen.lock().unwrap().clone(), [(7, dir)]);
    assert!(!result_json(&f, 0).contains_key("repeats"));
    assert!(entry(&f, 0).repeats.is_none());
}

#[test]
fn the_flag_wins_over_the_entry() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let bench = SeededBench {
        seen: seen.clone(),
        lose_seed: None,
    };
    let mut f = fixture(vec![repeated_trial(3, 1000.0)], Box::new(bench), true);
    f.session.repeats = std::num::NonZeroU32::new(2);
    assert!(matches!(f.session.run_trial(0), Ok(Ran::Passed)));
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!(result_json(&f, 0)["repeats"]["count"], json!(2));
}
