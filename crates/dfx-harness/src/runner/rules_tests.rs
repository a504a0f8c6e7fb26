//! Upstream's runner rules on a judged trial (the fake bench's result): the TPOT rule and
//! the OmniInteract gate.

use std::sync::Arc;

use dfx_core::baseline::Direction;
use dfx_core::plan::BenchEntry;
use serde_json::json;

use super::tests::{fake, fixture, result_json};
use dfx_testkit::fake::bench::FakeKnobs;
use dfx_testkit::trials::{concurrency_trial, threshold};

/// A bucket naming `mean_tpot_ms` needs measurable TPOT; the fake bench (a TTS-like
/// result) has none, so the trial fails with upstream's reason, even without
/// `--assert-baseline`.
#[test]
fn a_tpot_baseline_without_tpot_samples_fails_the_trial() {
    let mut t = concurrency_trial("test_a", "tpot", 1, 2);
    t.thresholds
        .items
        .push(threshold("mean_tpot_ms", 50.0, Direction::LowerIsBetter));
    let mut f = fixture(vec![t], fake(FakeKnobs::default()), false);
    let err = f.session.run_trial(0).unwrap_err().to_string();
    assert!(
        err.contains("TPOT baseline is configured, but no measurable TPOT samples were produced"),
        "{err}"
    );
    let doc = result_json(&f, 0);
    assert_eq!(doc["verdict"]["passed"], json!(false));
    let failures = doc["verdict"]["failures"].to_string();
    assert!(
        failures.contains("TPOT baseline is configured, but no measurable TPOT samples"),
        "{failures}"
    );
    // Without the metric in the bucket the same result passes.
    let mut f = fixture(
        vec![concurrency_trial("test_a", "tpot", 1, 2)],
        fake(FakeKnobs::default()),
        false,
    );
    assert!(f.session.run_trial(0).is_ok());
}

fn omniinteract_trial() -> dfx_core::plan::Trial {
    let mut t = concurrency_trial("test_oi", "subset", 1, 3);
    let mut e: BenchEntry = (*t.entry).clone();
    e.dataset_name = Some("omniinteract".into());
    t.entry = Arc::new(e);
    t
}

/// An `omniinteract` entry passes when every case succeeded with its artifacts and fails
/// with upstream's gate reason when one did not.
#[test]
fn omniinteract_results_are_gated_on_their_summary() {
    let mut f = fixture(
        vec![omniinteract_trial()],
        fake(FakeKnobs::default()),
        false,
    );
    assert!(f.session.run_trial(0).is_ok());
    assert_eq!(
        result_json(&f, 0)["omniinteract"],
        json!({"total": 3, "success": 3, "failed": 0, "artifacts_complete": true})
    );
    let knobs = FakeKnobs {
        fail_requests: 1,
        ..FakeKnobs::default()
    };
    let mut f = fixture(vec![omniinteract_trial()], fake(knobs), false);
    let err = f.session.run_trial(0).unwrap_err().to_string();
    assert!(
        err.contains(
            "OmniInteract requests did not all succeed: total 3, success 2, failed 1 (expected 3, 3, 0)"
        ) && err.contains("OmniInteract artifacts are incomplete"),
        "{err}"
    );
}
