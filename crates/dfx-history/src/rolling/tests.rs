//! Rolling baselines on synthetic histories: the window, the rejected runs and why, the
//! outlier rule, the minimum, both policies, and a "needs data" trial filled.

use std::collections::BTreeMap;

use dfx_report::recalibrate::Decision;

use super::*;
use crate::model::{Fingerprint, Threshold};

fn trial(name: &str, e2el: f64, outcome: TrialOutcome, thresholds: &[(&str, f64)]) -> TrialRecord {
    TrialRecord {
        name: name.into(),
        seq: 0,
        outcome,
        interrupted: false,
        unclean: None,
        failures: if outcome == TrialOutcome::Failed {
            vec!["mean_e2el_ms 900 > 800".into()]
        } else {
            vec![]
        },
        metrics: [
            ("mean_e2el_ms".to_string(), e2el),
            ("audio_throughput".into(), 10.0),
        ]
        .into_iter()
        .collect::<BTreeMap<_, _>>(),
        repeats: BTreeMap::new(),
        thresholds: thresholds
            .iter()
            .map(|(m, v)| Threshold {
                metric: m.to_string(),
                value: *v,
                direction: "lower_is_better".into(),
                source: "inline".into(),
            })
            .collect(),
        failure_class: None,
        needs_data: thresholds.is_empty(),
    }
}

fn run(i: usize, trials: Vec<TrialRecord>) -> RunRecord {
    RunRecord {
        run_id: format!("run{i:02}"),
        hardware_identity: "H20".into(),
        started: None,
        sort_key: format!("{i:04}"),
        finished: Some("x".into()),
        interrupted: false,
        fingerprint: Fingerprint::default(),
        trials,
    }
}

fn opts(dir: &std::path::Path) -> RollingOptions {
    RollingOptions {
        base: RecalibrateOptions {
            baselines_dir: dir.to_path_buf(),
            ..RecalibrateOptions::default()
        },
        window: 5,
        min_runs: 3,
        ..RollingOptions::default()
    }
}

fn history(values: &[f64]) -> Vec<RunRecord> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| run(i, vec![trial("t::a::c1", *v, TrialOutcome::Passed, &[])]))
        .collect()
}

#[test]
fn the_last_good_runs_of_the_window_are_used_and_the_rest_listed_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = history(&[100.0, 50.0, 101.0, 102.0, 98.0, 99.0, 97.0, 103.0, 100.0]);
    runs[8].interrupted = true;
    runs[7].trials[0].outcome = TrialOutcome::Failed;
    runs[7].trials[0].failures = vec!["mean_e2el_ms 900 > 800".into()];
    // Another trial of run07 passed: not an all-failed run.
    runs[7]
        .trials
        .push(trial("t::b::c1", 1.0, TrialOutcome::Passed, &[]));
    runs[6].trials[0].unclean = Some("2 of 8 requests failed".into());
    let r = propose("H20", &runs, &opts(dir.path())).unwrap();
    let why: Vec<(&str, Option<&str>)> = r
        .uses
        .iter()
        .filter(|u| u.metric.is_none() && u.trial == "t::a::c1")
        .map(|u| (u.run_id.as_str(), u.rejected.as_deref()))
        .collect();
    assert_eq!(
        why,
        vec![
            ("run08", Some("interrupted")),
            ("run07", Some("failed: mean_e2el_ms 900 > 800")),
            ("run06", Some("not clean: 2 of 8 requests failed")),
            ("run05", None),
            ("run04", None),
            ("run03", None),
            ("run02", None),
            ("run01", None),
        ]
    );
    // Window 5 counts good runs (run00 is never considered); run01 (50, an outlier) is
    // rejected per metric.
    let c = r
        .recalibration
        .changes
        .iter()
        .find(|c| c.metric == "mean_e2el_ms")
        .unwrap();
    assert_eq!(c.values, vec![99.0, 98.0, 102.0, 101.0]);
    assert_eq!(c.median, 100.0);
    assert_eq!(c.proposed, 125.0);
    assert_eq!(c.decision, Decision::Add);
    assert!(
        r.uses.iter().any(|u| u.run_id == "run01"
            && u.metric.as_deref() == Some("mean_e2el_ms")
            && u.rejected
                .as_deref()
                .is_some_and(|w| w.starts_with("outlier: 50"))),
        "{:?}",
        r.uses
    );
    assert!(r.needs_data.contains(&"t::a::c1".to_string()));
}

#[test]
fn the_window_stops_at_n_good_runs() {
    let dir = tempfile::tempdir().unwrap();
    let runs = history(&[10.0, 20.0, 100.0, 101.0, 102.0, 103.0, 104.0]);
    let r = propose("H20", &runs, &opts(dir.path())).unwrap();
    let used: Vec<&str> = r
        .uses
        .iter()
        .filter(|u| u.metric.is_none() && u.rejected.is_none())
        .map(|u| u.run_id.as_str())
        .collect();
    assert_eq!(used, vec!["run06", "run05", "run04", "run03", "run02"]);
    assert_eq!(r.recalibration.runs.len(), 5);
}

#[test]
fn too_few_good_runs_leave_the_threshold_alone_with_a_needs_data_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = history(&[100.0, 101.0, 102.0]);
    runs[2].trials[0].outcome = TrialOutcome::Failed;
    let r = propose("H20", &runs, &opts(dir.path())).unwrap();
    assert!(
        r.recalibration.changes.is_empty(),
        "{:?}",
        r.recalibration.changes
    );
    assert!(
        r.recalibration
            .notes
            .iter()
            .any(|n| n.contains("mean_e2el_ms: needs data: 2 good run(s), at least 3")),
        "{:?}",
        r.recalibration.notes
    );
}

#[test]
fn the_worst_policy_takes_the_worst_value_by_direction() {
    let dir = tempfile::tempdir().unwrap();
    let runs = history(&[100.0, 104.0, 98.0, 101.0]);
    let mut o = opts(dir.path());
    o.policy = Policy::Worst;
    let r = propose("H20", &runs, &o).unwrap();
    let get = |m: &str| {
        r.recalibration
            .changes
            .iter()
            .find(|c| c.metric == m)
            .unwrap()
            .clone()
    };
    assert_eq!(get("mean_e2el_ms").median, 104.0);
    assert_eq!(get("mean_e2el_ms").proposed, 130.0);
    // audio_throughput is higher-is-better: the floor comes from the lowest value.
    assert_eq!(get("audio_throughput").proposed, 7.5);
}

#[test]
fn a_kept_threshold_is_reported_against_the_inline_one_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<RunRecord> = [100.0, 101.0, 99.0]
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let t = trial(
                "t::a::c1",
                *v,
                TrialOutcome::Passed,
                &[("mean_e2el_ms", 124.0)],
            );
            run(i, vec![t])
        })
        .collect();
    let r = propose("H20", &runs, &opts(dir.path())).unwrap();
    assert!(r.needs_data.is_empty());
    let c = &r.recalibration.changes;
    assert_eq!(c.len(), 1, "only the thresholded metric: {c:?}");
    assert_eq!(c[0].old.as_ref().unwrap().source, "inline");
    assert_eq!(c[0].decision, Decision::KeepWithinTolerance);
    assert_eq!(c[0].result, 124.0);
}

#[test]
fn outliers_need_three_values_and_a_spread() {
    assert!(outliers(&[1.0, 100.0, 1.0, 1.0], 3.5).is_empty());
    assert!(outliers(&[100.0, 100.0, 100.0, 100.0, 102.0], 3.5).is_empty());
    assert_eq!(outliers(&[100.0, 100.0, 100.0, 100.0, 110.0], 3.5), vec![4]);
    assert_eq!(outliers(&[10.0, 10.2, 9.9, 10.1, 30.0], 3.5), vec![4]);
}

#[test]
fn bad_windows_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.min_runs = 6;
    let e = propose("H20", &history(&[1.0]), &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--window 5 / --min-runs 6"), "{e}");
}
