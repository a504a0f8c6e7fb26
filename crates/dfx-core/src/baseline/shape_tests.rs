//! Tests of the baseline shapes: every shape, hardware nesting, and every load-time error.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::shape::parse_baseline;
use super::*;
use crate::diag::Ctx;
use crate::step::{StepKind, SweepStep, python_float_str};

/// The steps a sweep of distinct `rates` and `concs` expands to (10 prompts each), built
/// here so that the baseline tests do not depend on config parsing.
fn steps(rates: &[f64], concs: &[u32]) -> Vec<SweepStep> {
    let step = |kind, index, label| SweepStep {
        kind,
        index,
        num_prompts: std::num::NonZeroU64::new(10).unwrap(),
        label,
    };
    let rate_steps = rates.iter().enumerate().map(|(i, &r)| {
        let label = format!("qps{}", python_float_str(r));
        step(StepKind::RequestRate { request_rate: r }, i, label)
    });
    let conc_steps = concs.iter().enumerate().map(|(i, &c)| {
        step(
            StepKind::Concurrency {
                max_concurrency: std::num::NonZeroU32::new(c).unwrap(),
            },
            i,
            format!("c{c}"),
        )
    });
    rate_steps.chain(conc_steps).collect()
}

/// Parses and checks `v` against `steps`; returns the spec or the error messages.
fn load(v: Value, steps: &[SweepStep]) -> Result<Option<BaselineSpec>, Vec<String>> {
    let file = PathBuf::from("cfg.json");
    let ctx = Ctx::new(&file).test(Some("t")).entry(1);
    let mut errs = Vec::new();
    let spec = parse_baseline(&ctx, &v, &mut errs);
    if let Some(s) = &spec {
        s.check_steps(&ctx, steps, &mut errs);
    }
    if errs.is_empty() {
        Ok(spec)
    } else {
        Err(errs.iter().map(|e| e.to_string()).collect())
    }
}

fn values(t: &Thresholds) -> Vec<(String, f64)> {
    t.items
        .iter()
        .map(|i| (i.metric.clone(), i.value))
        .collect()
}

#[test]
fn null_baseline_and_null_metric() {
    let s = steps(&[], &[1]);
    assert_eq!(load(Value::Null, &s).unwrap(), None);
    let spec = load(json!({"mean_e2el_ms": null, "median_audio_rtf": 0.5}), &s)
        .unwrap()
        .unwrap();
    let t = spec.resolve(&s[0], "H100");
    assert_eq!(t.skipped, ["mean_e2el_ms"]);
    assert_eq!(values(&t), [("median_audio_rtf".to_string(), 0.5)]);
    assert_eq!(t.items[0].direction, Direction::LowerIsBetter);
    assert_eq!(t.items[0].source, ThresholdSource::Inline);
}

#[test]
fn scalar_applies_to_every_step() {
    let s = steps(&[2.0], &[8, 16]);
    let spec = load(json!({"audio_throughput": 20}), &s).unwrap().unwrap();
    for step in &s {
        assert_eq!(
            values(&spec.resolve(step, "H100")),
            [("audio_throughput".to_string(), 20.0)]
        );
    }
}

#[test]
fn list_uses_index_within_its_own_sweep() {
    let s = steps(&[0.5, 1.0], &[8, 16]);
    let spec = load(json!({"mean_e2el_ms": [100, 200]}), &s)
        .unwrap()
        .unwrap();
    let got: Vec<f64> = s
        .iter()
        .map(|st| spec.resolve(st, "x").items[0].value)
        .collect();
    assert_eq!(got, [100.0, 200.0, 100.0, 200.0]);
    // a null element is "no threshold at this step"
    let s = steps(&[], &[8, 16]);
    let spec = load(json!({"mean_e2el_ms": [null, 5]}), &s)
        .unwrap()
        .unwrap();
    assert_eq!(spec.resolve(&s[0], "x").skipped, ["mean_e2el_ms"]);
    assert_eq!(spec.resolve(&s[1], "x").items[0].value, 5.0);
}

#[test]
fn dict_uses_the_python_str_of_the_step() {
    let s = steps(&[2.0], &[8, 16]);
    let spec = load(
        json!({"p99_e2el_ms": {"2.0": 1, "8": 2, "16": 3, "99": 4}}),
        &s,
    )
    .unwrap()
    .unwrap();
    let got: Vec<f64> = s
        .iter()
        .map(|st| spec.resolve(st, "x").items[0].value)
        .collect();
    assert_eq!(got, [1.0, 2.0, 3.0]);
}

#[test]
fn hardware_nested_picks_the_bucket() {
    let s = steps(&[], &[8, 16]);
    let v = json!({
        "H100": {"median_audio_ttfp_ms": [1, 2], "audio_throughput": [10, 20]},
        "A3": {"median_audio_ttfp_ms": [3, 4]}
    });
    let spec = load(v, &s).unwrap().unwrap();
    assert!(matches!(spec, BaselineSpec::Nested(ref b) if b.len() == 2));
    assert_eq!(
        values(&spec.resolve(&s[1], "H100")),
        [
            ("median_audio_ttfp_ms".to_string(), 2.0),
            ("audio_throughput".to_string(), 20.0)
        ]
    );
    assert_eq!(
        values(&spec.resolve(&s[0], "A3")),
        [("median_audio_ttfp_ms".to_string(), 3.0)]
    );
    // case-insensitive fallback
    assert_eq!(spec.resolve(&s[0], "a3").items.len(), 1);
    // no bucket: a note, not an error
    let t = spec.resolve(&s[0], "H20");
    assert!(t.items.is_empty());
    assert_eq!(
        t.note.as_deref(),
        Some(
            "hardware-nested baseline has no bucket for `H20` (buckets: H100, A3): no inline thresholds"
        )
    );
}

#[test]
fn nesting_detection() {
    let obj = |v: Value| v.as_object().unwrap().clone();
    assert!(looks_nested(&obj(json!({"H100": {"mean_e2el_ms": 1}}))));
    assert!(looks_nested(&obj(json!({"H100": {}}))));
    assert!(looks_nested(&obj(json!({"MyRig": {"mean_e2el_ms": [1]}}))));
    // a flat dict-shaped metric is not nesting
    assert!(!looks_nested(&obj(json!({"mean_e2el_ms": {"8": 1}}))));
    assert!(!looks_nested(&obj(json!({"mean_e2el_ms": 1}))));
    assert!(!looks_nested(&obj(json!({}))));
    // unknown top-level name holding a step dict: flat (and then an unknown-metric error)
    assert!(!looks_nested(&obj(json!({"mean_e2el": {"8": 1}}))));
}

#[test]
fn broken_bucket_is_caught_on_another_hardware() {
    let s = steps(&[], &[8, 16, 64]);
    let v = json!({
        "H100": {"median_audio_rtf": [1, 2, 3]},
        "A3": {"median_audio_rtf": [1, 2]}
    });
    let e = load(v, &s).unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("key `baseline.A3.median_audio_rtf`"), "{e:?}");
    assert!(e[0].contains("too short: 2 value(s)"), "{e:?}");
}

#[test]
fn shape_errors() {
    let s = steps(&[2.0], &[8, 16]);
    let e = load(json!({"mean_e2el_ms": [1]}), &s).unwrap_err();
    assert!(e[0].contains("baseline list too short: 1 value(s) but the entry has 1 request-rate step(s) and 2 concurrency step(s)"), "{e:?}");
    let e = load(json!({"mean_e2el_ms": {"8": 1}}), &s).unwrap_err();
    assert!(
        e[0].contains(r#"no key for step(s) "2.0", "16" (keys present: "8")"#),
        "{e:?}"
    );
    let e = load(json!({"mean_e2el_ms": "fast"}), &s).unwrap_err();
    assert!(
        e[0].contains("unknown baseline shape: got a string"),
        "{e:?}"
    );
    let e = load(json!({"mean_e2el_ms": true}), &s).unwrap_err();
    assert!(
        e[0].contains("unknown baseline shape: got a boolean"),
        "{e:?}"
    );
    let e = load(json!({"mean_e2el_ms": [1, "x", 3]}), &s).unwrap_err();
    assert!(e[0].contains("key `baseline.mean_e2el_ms[1]`"), "{e:?}");
    let e = load(json!({"mean_e2el_ms": {"8": [1]}}), &s).unwrap_err();
    assert!(e[0].contains("key `baseline.mean_e2el_ms.8`"), "{e:?}");
    let e = load(json!({"latency_avg": 3.5, "throughput": 2}), &s).unwrap_err();
    assert_eq!(e.len(), 2);
    assert!(e[0].contains("unknown metric `latency_avg`"), "{e:?}");
    // upstream 2026 bucket keys: provenance and a tolerance in [0, 1)
    let e = load(
        json!({"H100": {"mean_e2el_ms": 1, "regression_tolerance": 1.5, "source": 3}}),
        &s,
    )
    .unwrap_err();
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(
        e.iter().any(|m| m.contains("regression_tolerance")),
        "{e:?}"
    );
    let e = load(json!([1, 2]), &s).unwrap_err();
    assert!(
        e[0].contains("key `baseline`: wrong type: got an array"),
        "{e:?}"
    );
    let e = load(json!({"H100": {"nope_ms": 1}}), &s).unwrap_err();
    assert!(
        e[0].contains("key `baseline.H100.nope_ms`: unknown metric"),
        "{e:?}"
    );
}

/// The result's `baseline`: every bucket narrowed to the step, whatever the run's label
/// (a list's element, a dict's key, scalars and nulls as written, `source` /
/// `regression_tolerance` kept, the bases without the tolerance).
#[test]
fn result_form_keeps_every_bucket_narrowed_to_the_step() {
    let s = steps(&[], &[8, 16, 64]);
    let v = json!({
        "H100": {"median_audio_ttfp_ms": [75.5967, 587.5877, 4960.3726],
                 "median_audio_rtf": {"8": 0.1871, "16": 0.2, "64": null},
                 "audio_throughput": 38.9378, "mean_e2el_ms": null},
        "H20": {"median_audio_ttfp_ms": [90, 600, 5000], "source": "nightly 2026-05",
                "regression_tolerance": 0.1}
    });
    let spec = load(v, &s).unwrap().unwrap();
    for label in ["H100", "SIM", "na"] {
        assert_eq!(
            Value::Object(spec.resolve(&s[0], label).buckets),
            json!({
                "H100": {"median_audio_ttfp_ms": 75.5967, "median_audio_rtf": 0.1871,
                         "audio_throughput": 38.9378, "mean_e2el_ms": null},
                "H20": {"median_audio_ttfp_ms": 90.0, "source": "nightly 2026-05",
                        "regression_tolerance": 0.1}
            })
        );
    }
    let last = spec.resolve(&s[2], "H20");
    assert_eq!(
        Value::Object(last.buckets),
        json!({
            "H100": {"median_audio_ttfp_ms": 4960.3726, "median_audio_rtf": null,
                     "audio_throughput": 38.9378, "mean_e2el_ms": null},
            "H20": {"median_audio_ttfp_ms": 5000.0, "source": "nightly 2026-05",
                    "regression_tolerance": 0.1}
        })
    );
    // The thresholds judged against still carry the tolerance.
    assert_eq!(last.items[0].value, 5500.0);
}

/// A flat baseline is the bucket of the run's own label (`""` when the label is unknown,
/// as the result's `Hardware`); no baseline is `{}`.
#[test]
fn result_form_of_a_flat_baseline_and_of_none() {
    let s = steps(&[1.0, 2.0], &[]);
    let spec = load(json!({"mean_ttft_ms": [10, 20]}), &s)
        .unwrap()
        .unwrap();
    let got = |label: &str| Value::Object(spec.resolve(&s[1], label).buckets);
    assert_eq!(got("H100"), json!({"H100": {"mean_ttft_ms": 20.0}}));
    assert_eq!(
        got(crate::hardware::UNKNOWN),
        json!({"": {"mean_ttft_ms": 20.0}})
    );
    assert_eq!(Thresholds::default().to_result_value(), json!({}));
}
