//! The load keys of the native bench (`ramp_start_rate`, `burst`, `soak_duration_s`,
//! `cohorts`, `saturation`, `open_loop_max_concurrency`): each reaches the plan, and each
//! problem is a load-time error naming file, test, entry and key with what is accepted.

mod common;

use common::{Fx, tts_case};
use dfx_core::plan::{Cohort, LoadShape, LoadSpec, Saturation};
use serde_json::{Value, json};

/// An open-loop entry (`request_rate` 2, 10 requests) with `keys` added.
fn rate_entry(keys: Value) -> String {
    let mut e = json!({"max_concurrency": null, "request_rate": 2.0, "num_prompts": 10});
    for (k, v) in keys.as_object().unwrap() {
        e[k] = v.clone();
    }
    json!([tts_case("test_a", e)]).to_string()
}

fn load(keys: Value) -> LoadSpec {
    let fx = Fx::new();
    let plan = fx
        .load(&rate_entry(keys))
        .unwrap_or_else(|e| panic!("{}", fx.scrub(&e.to_string())));
    plan.trials[0].entry.load.clone()
}

fn errors(keys: Value) -> String {
    Fx::new().errors(&rate_entry(keys))
}

const WHERE: &str = "$TMP/cfg.json: test `test_a`, benchmark_params[0]";

#[test]
fn every_shape_reaches_the_plan() {
    assert_eq!(load(json!({})), LoadSpec::default());
    assert_eq!(
        load(json!({"ramp_start_rate": 0.5})).shape,
        LoadShape::Ramp { start_rate: 0.5 }
    );
    assert_eq!(load(json!({"burst": true})).shape, LoadShape::Burst);
    assert_eq!(load(json!({"burst": false})).shape, LoadShape::Steady);
    assert_eq!(
        load(json!({"soak_duration_s": 30})).shape,
        LoadShape::Soak { duration_s: 30.0 }
    );
    let spec = load(json!({"cohorts": [
        {"offset_s": 0, "num_prompts": 6},
        {"offset_s": 1.5, "num_prompts": 4, "request_rate": 8}
    ]}));
    assert_eq!(
        spec.shape,
        LoadShape::Cohorts {
            cohorts: vec![
                Cohort {
                    offset_s: 0.0,
                    num_prompts: 6,
                    request_rate: None
                },
                Cohort {
                    offset_s: 1.5,
                    num_prompts: 4,
                    request_rate: Some(8.0)
                },
            ]
        }
    );
    let gated = load(json!({"open_loop_max_concurrency": 3, "saturation": "fail"}));
    assert_eq!(
        gated.open_loop_max_concurrency,
        std::num::NonZeroU32::new(3)
    );
    assert_eq!(gated.saturation, Saturation::Fail);
    let waiting = load(json!({"open_loop_max_concurrency": 3}));
    assert_eq!(waiting.saturation, Saturation::Wait);
}

#[test]
fn bad_values_name_the_key_and_what_is_accepted() {
    let e = errors(json!({"ramp_start_rate": 0}));
    assert!(
        e.contains(&format!(
            "{WHERE}, key `ramp_start_rate`: invalid value 0 (accepted: a number from 0.001 to 100000)"
        )),
        "{e}"
    );
    let e = errors(json!({"burst": "yes"}));
    assert!(
        e.contains("key `burst`: wrong type: got a string (accepted: true or false)"),
        "{e}"
    );
    let e = errors(json!({"soak_duration_s": 0}));
    assert!(
        e.contains("key `soak_duration_s`: invalid value 0 (accepted: a number of seconds"),
        "{e}"
    );
    let e = errors(json!({"soak_duration_s": 1e9}));
    assert!(e.contains("key `soak_duration_s`: invalid value"), "{e}");
    let e = errors(json!({"saturation": "drop"}));
    assert!(
        e.contains("key `saturation`: invalid value \"drop\" (accepted: \"wait\""),
        "{e}"
    );
    let e = errors(json!({"open_loop_max_concurrency": 0}));
    assert!(
        e.contains(
            "key `open_loop_max_concurrency`: invalid value 0 (accepted: an integer from 1 to 4096)"
        ),
        "{e}"
    );
    let e = errors(json!({"open_loop_max_concurrency": 5000}));
    assert!(e.contains("key `open_loop_max_concurrency`"), "{e}");
}

#[test]
fn combinations_that_mean_nothing_are_refused() {
    let e = errors(json!({"burst": true, "ramp_start_rate": 1}));
    assert!(
        e.contains("key `ramp_start_rate/burst`: more than one load shape"),
        "{e}"
    );
    let e = errors(json!({"saturation": "fail"}));
    assert!(
        e.contains(&format!("{WHERE}, key `saturation`: \"fail\" gates arrivals on the open-loop cap, but `open_loop_max_concurrency` is not set")),
        "{e}"
    );
    // Closed-loop entries: every load key is refused, by name.
    let fx = Fx::new();
    let closed = json!([tts_case(
        "test_a",
        json!({"burst": true, "saturation": "wait"})
    )]);
    let e = fx.errors(&closed.to_string());
    assert!(
        e.contains("key `burst`: applies to open-loop steps only")
            && e.contains("key `saturation`: applies to open-loop steps only"),
        "{e}"
    );
}

#[test]
fn cohorts_are_checked_item_by_item_and_against_the_step() {
    let e = errors(json!({"cohorts": []}));
    assert!(
        e.contains("key `cohorts`: 0 cohorts (accepted: a list of 1 to 64 cohorts"),
        "{e}"
    );
    let e = errors(json!({"cohorts": [
        {"offset_s": -1, "num_prompts": 5},
        {"num_prompts": 0, "rate": 3},
        7
    ]}));
    for want in [
        "key `cohorts[0].offset_s`: invalid value -1",
        "key `cohorts[1].rate`: unknown cohort key",
        "key `cohorts[1].offset_s`: missing",
        "key `cohorts[1].num_prompts`: invalid value 0",
        "key `cohorts[2]`: wrong type: got a number",
    ] {
        assert!(e.contains(want), "{want} in {e}");
    }
    let e = errors(json!({"cohorts": [{"offset_s": 0, "num_prompts": 4}]}));
    assert!(
        e.contains("key `cohorts`: step qps2.0: the cohorts hold 4 requests but the step has num_prompts 10"),
        "{e}"
    );
}

#[test]
fn a_shaped_schedule_is_bounded_by_its_own_span() {
    // 10 requests at 0.001 req/s would take 9000 s steady: fine. A ramp from 0.0001 is
    // out of range; a ramp from 0.001 to 2 over 100 000 requests takes ~1e8 s: refused.
    let fx = Fx::new();
    let text = json!([tts_case(
        "test_a",
        json!({"max_concurrency": null, "request_rate": 2.0, "num_prompts": 100_000, "ramp_start_rate": 0.001})
    )]);
    let e = fx.errors(&text.to_string());
    assert!(
        e.contains("key `ramp_start_rate`: step qps2.0: 100000 requests at a ramp from 0.001 to 2 req/s would take"),
        "{e}"
    );
    // A soak at a slow step rate is bounded by its duration, not by request_rate.
    let text = json!([tts_case(
        "test_a",
        json!({"max_concurrency": null, "request_rate": 0.001, "num_prompts": 1000, "soak_duration_s": 600})
    )]);
    assert!(fx.load(&text.to_string()).is_ok());
    let e = errors(json!({"soak_duration_s": 0.00001}));
    assert!(
        e.contains("key `soak_duration_s`: step qps2.0: 10 requests over 0.00001 s is more than 100000 req/s"),
        "{e}"
    );
}
