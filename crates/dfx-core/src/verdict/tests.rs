//! Tests of the verdict rules.

use serde_json::json;

use super::*;
use crate::baseline::{Direction, Threshold, ThresholdSource, Thresholds};
use crate::result::{ResultDoc, template_fallback};

fn doc(v: serde_json::Value) -> ResultDoc {
    v.as_object().unwrap().clone()
}

fn th(items: &[(&str, f64, Direction)]) -> Thresholds {
    Thresholds {
        items: items
            .iter()
            .map(|(m, v, d)| Threshold {
                metric: m.to_string(),
                value: *v,
                direction: *d,
                source: ThresholdSource::Inline,
            })
            .collect(),
        ..Thresholds::default()
    }
}

use Direction::{HigherIsBetter as Hi, LowerIsBetter as Lo};

#[test]
fn breach_lines_match_the_documented_format() {
    let b = Breach {
        metric: "median_audio_ttfp_ms".into(),
        value: 412.3,
        threshold: 350.0,
        gap: (412.3 - 350.0) / 350.0,
        direction: Lo,
    };
    assert_eq!(b.line(), "median_audio_ttfp_ms 412.3 > 350 (+17.8 %)");
    let b = Breach {
        metric: "audio_throughput".into(),
        value: 20.1,
        threshold: 24.2,
        gap: (20.1 - 24.2) / 24.2,
        direction: Hi,
    };
    assert_eq!(b.line(), "audio_throughput 20.1 < 24.2 (-16.9 %)");
}

#[test]
fn number_format() {
    assert_eq!(fmt_num(350.0), "350");
    assert_eq!(fmt_num(412.3), "412.3");
    assert_eq!(fmt_num(0.1591), "0.1591");
    assert_eq!(fmt_num(141.27914), "141.2791");
    assert_eq!(fmt_num(0.0), "0");
    assert_eq!(fmt_num(-0.00001), "-1.000e-5");
    assert_eq!(fmt_num(20.0), "20");
}

#[test]
fn complete_run_within_thresholds_passes_and_equality_passes() {
    let d = doc(
        json!({"completed": 20, "failed": 0, "median_audio_ttfp_ms": 350.0, "audio_throughput": 24.2}),
    );
    let t = th(&[
        ("median_audio_ttfp_ms", 350.0, Lo),
        ("audio_throughput", 24.2, Hi),
    ]);
    let v = judge(&d, 20, &t, &[], true);
    assert!(v.passed, "{v:?}");
    assert!(v.breaches.is_empty() && v.failures.is_empty() && v.warnings.is_empty());
}

#[test]
fn incomplete_run_fails_naming_counts_and_errors() {
    let d = doc(json!({"completed": 18, "failed": 2}));
    let errors = vec![
        "HTTP 500: boom".to_string(),
        "HTTP 500: boom".to_string(),
        "timeout after 60 s".to_string(),
    ];
    let v = judge(&d, 20, &Thresholds::default(), &errors, false);
    assert!(!v.passed);
    assert_eq!(
        v.failures,
        [
            "incomplete: completed 18 of num_prompts 20 (failed 2); first errors: `HTTP 500: boom`; `timeout after 60 s`"
        ]
    );
    let v = judge(&doc(json!({})), 5, &Thresholds::default(), &[], false);
    assert_eq!(
        v.failures,
        [
            "incomplete: completed missing of num_prompts 5 (failed missing); no request errors recorded"
        ]
    );
    // more completed than asked is not a pass either
    assert!(
        !judge(
            &doc(json!({"completed": 21, "failed": 0})),
            20,
            &Thresholds::default(),
            &[],
            false
        )
        .passed
    );
}

#[test]
fn template_fallback_fails_as_fallback() {
    let d = template_fallback("bench exited with exit status 2");
    let v = judge(&d, 20, &th(&[("mean_e2el_ms", 1.0, Lo)]), &[], true);
    assert!(!v.passed);
    assert_eq!(v.failures.len(), 1);
    assert!(v.failures[0].contains("template fallback"), "{v:?}");
    assert!(
        v.failures[0].contains("bench exited with exit status 2"),
        "{v:?}"
    );
}

#[test]
fn breaches_fail_only_under_assert_baseline() {
    let d = doc(
        json!({"completed": 20, "failed": 0, "median_audio_ttfp_ms": 412.3, "audio_throughput": 20.1, "mean_e2el_ms": 10.0}),
    );
    let t = th(&[
        ("median_audio_ttfp_ms", 350.0, Lo),
        ("audio_throughput", 24.2, Hi),
        ("mean_e2el_ms", 11.0, Lo),
    ]);
    let asserted = judge(&d, 20, &t, &[], true);
    assert!(!asserted.passed);
    assert_eq!(
        asserted.failures,
        [
            "median_audio_ttfp_ms 412.3 > 350 (+17.8 %)",
            "audio_throughput 20.1 < 24.2 (-16.9 %)"
        ]
    );
    assert_eq!(asserted.breaches.len(), 2);
    let plain = judge(&d, 20, &t, &[], false);
    assert!(plain.passed, "{plain:?}");
    assert_eq!(plain.breaches, asserted.breaches);
    assert_eq!(
        plain.warnings,
        [
            "baseline breach (not asserted): median_audio_ttfp_ms 412.3 > 350 (+17.8 %)",
            "baseline breach (not asserted): audio_throughput 20.1 < 24.2 (-16.9 %)"
        ]
    );
    // an incomplete run fails even without assert, and breaches stay warnings
    let d2 = doc(json!({"completed": 19, "failed": 1, "median_audio_ttfp_ms": 412.3}));
    let v = judge(&d2, 20, &t, &[], false);
    assert!(!v.passed);
    assert_eq!(v.failures.len(), 1);
}

#[test]
fn missing_metric_is_a_failure_under_assert_and_a_warning_otherwise() {
    let d = doc(json!({"completed": 4, "failed": 0, "request_throughput": "inf"}));
    let t = th(&[
        ("median_audio_rtf", 0.2, Lo),
        ("request_throughput", 1.0, Hi),
    ]);
    let v = judge(&d, 4, &t, &[], true);
    assert!(!v.passed);
    assert_eq!(
        v.failures,
        [
            "median_audio_rtf metric missing from result (threshold <= 0.2)",
            "request_throughput metric missing from result (threshold >= 1)"
        ]
    );
    let v = judge(&d, 4, &t, &[], false);
    assert!(v.passed);
    assert_eq!(v.warnings.len(), 2);
}

#[test]
fn zero_threshold_breach_has_infinite_gap() {
    let d = doc(json!({"completed": 1, "failed": 0, "failed_x": 0, "mean_audio_underrun_s": 0.5}));
    let v = judge(&d, 1, &th(&[("mean_audio_underrun_s", 0.0, Lo)]), &[], true);
    assert_eq!(v.failures, ["mean_audio_underrun_s 0.5 > 0 (+inf %)"]);
}

#[test]
fn note_becomes_a_warning() {
    let t = Thresholds {
        note: Some("no bucket for H20".into()),
        ..Thresholds::default()
    };
    let v = judge(&doc(json!({"completed": 1, "failed": 0})), 1, &t, &[], true);
    assert!(v.passed);
    assert_eq!(v.warnings, ["no thresholds: no bucket for H20"]);
}
