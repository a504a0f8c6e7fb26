use serde_json::{Value, json};

use super::*;
use crate::plan::{BenchEntry, Dialect, ResultGates};

fn entry(raw: Value) -> BenchEntry {
    BenchEntry {
        index: 0,
        suffix: "s".into(),
        dialect: Dialect::Omni,
        dataset_name: None,
        backend: None,
        endpoint: None,
        dataset_path: None,
        seed_tts_locale: None,
        percentiles: Default::default(),
        goodput: None,
        extra_body: None,
        num_warmups: None,
        repeats: None,
        capacity: None,
        burstiness: None,
        seed: None,
        task: None,
        eval_phase: None,
        name: None,
        trust_remote_code: false,
        raw: raw.as_object().unwrap().clone(),
        case: Default::default(),
        connection: None,
        load: Default::default(),
        runner: Default::default(),
        gates: ResultGates {
            expected_duplex_turns: raw
                .get("expected_duplex_audio_turns_per_session")
                .and_then(Value::as_u64),
            min_ia_qtf1: raw.get("omniinteract_min_ia_qtf1").and_then(Value::as_f64),
        },
    }
}

fn doc(v: Value) -> ResultDoc {
    v.as_object().unwrap().clone()
}

#[test]
fn fixed_length_stages_must_match_every_request() {
    let e = entry(json!({"extra_body": {"sampling_params_list": [
        {"min_tokens": 900, "max_tokens": 900}, {"max_tokens": 10}, {"min_tokens": 1536, "max_tokens": 1536}
    ]}}));
    assert_eq!(fixed_stages(&e), [(0, 900), (2, 1536)]);
    let ok = json!({"0": {"num_tokens_out": 900}, "2": {"num_tokens_out": 1536}});
    let bad = json!({"0": {"num_tokens_out": 899}, "2": {"num_tokens_out": 1536}});
    assert!(
        fixed_length_failures(&e, &doc(json!({"request_stage_metrics": [ok, ok]})), 2).is_empty()
    );
    let f = fixed_length_failures(&e, &doc(json!({"request_stage_metrics": [ok, bad]})), 2);
    assert_eq!(
        f,
        [
            "Fixed stage workload: request 1 stage 0 num_tokens_out 899 != 900 (min_tokens == max_tokens)"
        ]
    );
    let f = fixed_length_failures(&e, &doc(json!({"request_stage_metrics": [ok]})), 2);
    assert_eq!(
        f,
        ["Fixed stage workload: request_stage_metrics has 1 entries, expected 2"]
    );
    assert!(fixed_length_failures(&e, &doc(json!({})), 2)[0].contains("no request_stage_metrics"));
    // No fixed stage: nothing required.
    assert!(fixed_length_failures(&entry(json!({})), &doc(json!({})), 2).is_empty());
}

#[test]
fn omniinteract_accuracy_gates() {
    let e = entry(json!({"omniinteract_evaluate": true, "omniinteract_min_ia_qtf1": 0.5}));
    let acc = |status: &str, failed: u64, evaluated: u64, f1: Value| {
        doc(
            json!({"omniinteract": {"accuracy": {"status": status, "failed": failed,
            "evaluated": evaluated, "skipped": 3, "summary": {"IA_QTF1": f1}}}}),
        )
    };
    assert!(omniinteract_failures(&e, &acc("ok", 0, 4, json!(0.6)), 4).is_empty());
    assert_eq!(
        omniinteract_failures(&e, &acc("error", 1, 0, json!(0.4)), 4),
        [
            "OmniInteract accuracy status \"error\" (expected \"ok\")",
            "OmniInteract accuracy failed 1 (expected 0)",
            "OmniInteract subset evaluated 0 cases (skipped=3)",
            "OmniInteract IA_QTF1 0.4 < omniinteract_min_ia_qtf1 0.5",
        ]
    );
    assert!(omniinteract_failures(&e, &acc("ok", 0, 1, json!(null)), 4)[0].contains("not finite"));
    assert!(omniinteract_failures(&e, &doc(json!({})), 4)[0].contains("no omniinteract.accuracy"));
    assert!(omniinteract_failures(&entry(json!({})), &doc(json!({})), 4).is_empty());
}

/// Upstream's gate of an `omniinteract` entry: (total, success, failed) == (n, n, 0) and
/// `artifacts_complete: true`, checked before the accuracy (whose failures it hides).
#[test]
fn omniinteract_summary_gate() {
    let mut e = entry(json!({"omniinteract_evaluate": true}));
    e.dataset_name = Some("omniinteract".into());
    let summary = |t: Value, s: Value, f: Value, a: Value| {
        doc(
            json!({"omniinteract": {"total": t, "success": s, "failed": f,
            "artifacts_complete": a,
            "accuracy": {"status": "ok", "failed": 0, "evaluated": 4, "summary": {"IA_QTF1": 0.7}}}}),
        )
    };
    let ok = summary(json!(4), json!(4), json!(0), json!(true));
    assert!(omniinteract_failures(&e, &ok, 4).is_empty());
    assert_eq!(
        omniinteract_failures(&e, &ok, 5),
        [
            "OmniInteract requests did not all succeed: total 4, success 4, failed 0 (expected 5, 5, 0)"
        ]
    );
    let bad = summary(json!(4), json!(3), json!(1), json!(false));
    assert_eq!(
        omniinteract_failures(&e, &bad, 4),
        [
            "OmniInteract requests did not all succeed: total 4, success 3, failed 1 (expected 4, 4, 0)",
            "OmniInteract artifacts are incomplete (artifacts_complete false; expected true)",
        ]
    );
    // Only `true` is complete; counts must be numbers.
    let f = omniinteract_failures(
        &e,
        &summary(json!("4"), json!(4), json!(0), json!("true")),
        4,
    );
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(
        omniinteract_failures(&e, &doc(json!({"completed": 4})), 4),
        ["OmniInteract summary is missing (the result has no omniinteract object)"]
    );
    // Another dataset: no gate (and no accuracy check without omniinteract_evaluate).
    let mut other = entry(json!({}));
    other.dataset_name = Some("seed-tts".into());
    assert!(omniinteract_failures(&other, &doc(json!({})), 4).is_empty());
}

/// Upstream's TPOT rule: a bucket naming `mean_tpot_ms` (even as `null`) needs
/// `num_tpot_samples > 0` and a finite `mean_tpot_ms`.
#[test]
fn tpot_rule_applies_when_the_bucket_names_mean_tpot_ms() {
    use crate::baseline::{Direction, Threshold, ThresholdSource};
    let named = Thresholds {
        items: vec![Threshold {
            metric: "mean_tpot_ms".into(),
            value: 30.0,
            direction: Direction::LowerIsBetter,
            source: ThresholdSource::Inline,
        }],
        ..Thresholds::default()
    };
    let null = Thresholds {
        skipped: vec!["mean_tpot_ms".into()],
        ..Thresholds::default()
    };
    let d = |n: Value, m: Value| doc(json!({"num_tpot_samples": n, "mean_tpot_ms": m}));
    for th in [&named, &null] {
        assert!(tpot_failures(th, &d(json!(12), json!(25.5))).is_empty());
        let f = tpot_failures(th, &d(json!(0), json!(null)));
        assert_eq!(
            f,
            [
                "TPOT baseline is configured, but no measurable TPOT samples were produced (num_tpot_samples 0; expected an integer > 0)"
            ]
        );
        for bad in [json!(1.5), json!(true), json!(-1), json!("3")] {
            assert_eq!(
                tpot_failures(th, &d(bad.clone(), json!(1.0))).len(),
                1,
                "{bad}"
            );
        }
        assert!(tpot_failures(th, &doc(json!({})))[0].contains("num_tpot_samples missing"));
        assert_eq!(
            tpot_failures(th, &d(json!(1), json!(null))),
            ["TPOT baseline is configured, but mean_tpot_ms is not finite (null)"]
        );
    }
    // Not named: nothing required.
    let other = Thresholds {
        skipped: vec!["mean_ttft_ms".into()],
        ..Thresholds::default()
    };
    assert!(tpot_failures(&other, &d(json!(0), json!(null))).is_empty());
    assert!(tpot_failures(&Thresholds::default(), &doc(json!({}))).is_empty());
}

#[test]
fn pooled_f1_over_subsets() {
    let d = doc(
        json!({"omniinteract": {"accuracy": {"summary": {"Global_TP": 3, "Global_FP": 1, "Global_FN": 2}}}}),
    );
    assert_eq!(global_counts(&d), Some((3.0, 1.0, 2.0)));
    // P = 6/8, R = 6/9 → 2PR/(P+R)
    let f = pooled_ia_qtf1(&[(3.0, 1.0, 2.0), (3.0, 1.0, 1.0)]);
    let (p, r) = (6.0 / 8.0, 6.0 / 9.0);
    assert!((f - 2.0 * p * r / (p + r)).abs() < 1e-12);
    assert_eq!(pooled_ia_qtf1(&[(0.0, 0.0, 0.0)]), 0.0);
}

fn subset_entry(subset: &str) -> BenchEntry {
    let mut e = entry(
        json!({"dataset_name": "omniinteract", "omniinteract_evaluate": true,
                             "omniinteract_subsets": subset}),
    );
    e.case.omniinteract_aggregate_min_ia_qtf1 = Some(0.2);
    e.case.omniinteract_aggregate_subsets = vec!["1q1a".into(), "1q1a_math".into(), "1qna".into()];
    e
}

fn counts_doc(tp: f64, fp: f64, fn_: f64) -> ResultDoc {
    doc(json!({"omniinteract": {"accuracy": {"summary":
        {"Global_TP": tp, "Global_FP": fp, "Global_FN": fn_}}}}))
}

/// Upstream's three scenarios: nothing until every subset has counts; the pooled value at
/// the floor passes; below it the trial that completes the set fails.
#[test]
fn pooled_ia_qtf1_waits_for_every_subset_then_gates() {
    let mut counts = SubsetCounts::new();
    let t = "test_gander";
    assert_eq!(
        pooled_gate(
            &mut counts,
            t,
            &subset_entry("1q1a"),
            &counts_doc(1.0, 9.0, 9.0)
        ),
        None
    );
    assert_eq!(
        pooled_gate(
            &mut counts,
            t,
            &subset_entry("1q1a_math"),
            &counts_doc(0.0, 2.0, 2.0)
        ),
        None
    );
    let low = pooled_gate(
        &mut counts,
        t,
        &subset_entry("1qna"),
        &counts_doc(0.0, 3.0, 3.0),
    );
    assert!(low.is_some_and(|m| m.contains("below 0.2") && m.contains("3 subsets")));
    // A later result of a subset replaces its counts: now TP 10 / FP 14 / FN 14 → 0.4167.
    let ok = pooled_gate(
        &mut counts,
        t,
        &subset_entry("1qna"),
        &counts_doc(9.0, 3.0, 3.0),
    );
    assert_eq!(ok, None);
    // Exactly at the floor passes: P = R = 0.2.
    let mut at = SubsetCounts::new();
    let e = |s: &str| {
        let mut e = subset_entry(s);
        e.case.omniinteract_aggregate_subsets = vec!["a".into()];
        e
    };
    assert_eq!(
        pooled_gate(&mut at, t, &e("a"), &counts_doc(1.0, 4.0, 4.0)),
        None
    );
    let missing = pooled_gate(&mut at, t, &e("a"), &doc(json!({"omniinteract": {}})));
    assert!(missing.is_some_and(|m| m.contains("Global_TP")));
    // Other tests' subsets never mix in; entries without the case floor are not gated.
    let mut plain = subset_entry("1q1a");
    plain.case.omniinteract_aggregate_min_ia_qtf1 = None;
    assert_eq!(
        pooled_gate(
            &mut SubsetCounts::new(),
            t,
            &plain,
            &counts_doc(0.0, 1.0, 1.0)
        ),
        None
    );
}
