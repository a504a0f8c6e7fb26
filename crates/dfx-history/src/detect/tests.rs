//! The detector on synthetic series: a step found at the right index, noise alone and a
//! single outlier not flagged, the consecutive rule, an all-failed run classified as such,
//! an e2el change explained by audio length, repeats' spread used as the noise.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::*;
use crate::check::{self, Verdict};
use crate::model::{Fingerprint, RunRecord, TrialOutcome, TrialRecord};

/// Clean points of `xs` (also the rates' series).
pub(super) fn points(xs: &[f64]) -> Vec<Point> {
    xs.iter()
        .enumerate()
        .map(|(i, x)| Point {
            run_id: format!("r{i}"),
            value: Ok(*x),
            repeat_key: None,
            repeat_values: Vec::new(),
        })
        .collect()
}

fn noisy(n: usize, level: f64, sd: f64, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let dist = Normal::new(0.0, sd).unwrap();
    (0..n).map(|_| level + dist.sample(&mut rng)).collect()
}

const LOWER: Direction = Direction::LowerIsBetter;

#[test]
fn a_step_change_is_found_at_the_right_index() {
    for (seed, at) in [(1, 3), (2, 8), (3, 15)] {
        let mut xs = noisy(20, 100.0, 2.0, seed);
        for x in &mut xs[at..] {
            *x *= 1.3;
        }
        let found = detect(&points(&xs), LOWER, &DetectOptions::default());
        assert_eq!(found.len(), 1, "seed {seed}: {found:?}");
        assert_eq!(found[0].index, at, "seed {seed}: {found:?}");
        assert!(found[0].is_regression() && found[0].worse_by > 0.25);
        assert!(found[0].methods.contains(&Method::EDivisive));
    }
}

#[test]
fn a_step_in_a_short_series_is_found_by_every_method() {
    let xs = [100.0, 101.0, 99.5, 130.0, 131.0, 129.0, 130.5, 130.2];
    let found = detect(&points(&xs), LOWER, &DetectOptions::default());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].index, 3);
    assert_eq!(
        found[0].methods,
        vec![Method::EDivisive, Method::Jump, Method::Consecutive]
    );
}

/// One shift, one finding: a streak that starts a run before the E-Divisive change point
/// (a noisy run just before it) or a run after it (the first slow run not beyond the
/// streak's margin) is the same change. Both series are from a loaded CI machine.
#[test]
fn a_streak_next_to_the_change_point_is_the_same_change() {
    let opts = DetectOptions {
        streak_change: 0.30,
        ..DetectOptions::default()
    };
    let late = [70.4, 69.4, 71.0, 88.0, 93.9, 94.5, 93.3];
    let found = detect(&points(&late), LOWER, &opts);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].index, 3);
    assert_eq!(
        found[0].methods,
        [Method::EDivisive, Method::Jump, Method::Consecutive]
    );
    let early = [24.0, 25.0, 23.5, 24.5, 31.0, 35.5, 36.0, 35.8, 35.9, 36.1];
    let found = detect(&points(&early), LOWER, &DetectOptions::default());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].methods.contains(&Method::Consecutive), "{found:?}");
    // The same shape through merge directly: a streak from run 4 and a jump from run 6
    // are the change point at 5.
    let c = |m: Method| Change {
        index: 0,
        before: 24.0,
        after: 36.0,
        worse_by: 0.5,
        noise: 0.5,
        noise_source: NoiseSource::RunToRun,
        suspected: false,
        methods: vec![m],
    };
    let mut out = vec![(c(Method::EDivisive), 5, early.len())];
    merge(&mut out, (c(Method::Consecutive), 4, early.len()), 3);
    merge(&mut out, (c(Method::Jump), 6, early.len()), 2);
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].0.methods,
        [Method::EDivisive, Method::Consecutive, Method::Jump]
    );
    // A streak from run 1 on: the change point at 5 is not among its first three runs.
    merge(&mut out, (c(Method::Consecutive), 1, early.len()), 3);
    assert_eq!(out.len(), 2);
    // A streak far from any change point stays its own finding.
    let apart = [
        100.0, 100.0, 100.0, 130.0, 130.0, 130.0, 130.0, 130.0, 175.0, 176.0, 175.0,
    ];
    let found = detect(&points(&apart), LOWER, &DetectOptions::default());
    assert!(found.len() >= 2, "{found:?}");
}

#[test]
fn noise_alone_is_not_flagged() {
    for seed in 0..40 {
        let xs = noisy(25, 100.0, 3.0, seed);
        let found = detect(&points(&xs), LOWER, &DetectOptions::default());
        assert!(found.is_empty(), "seed {seed}: {found:?} in {xs:?}");
    }
}

#[test]
fn a_single_outlier_is_not_flagged() {
    for at in [0, 5, 10, 18] {
        let mut xs = noisy(20, 100.0, 2.0, at as u64);
        xs[at] = 250.0;
        let found = detect(&points(&xs), LOWER, &DetectOptions::default());
        assert!(found.is_empty(), "outlier at {at}: {found:?}");
    }
    // On the newest run nothing tells it from a shift yet: suspected, never a regression
    // until the next run confirms it.
    let mut xs = noisy(20, 100.0, 2.0, 19);
    xs[19] = 250.0;
    let found = detect(&points(&xs), LOWER, &DetectOptions::default());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].suspected && found[0].index == 19, "{found:?}");
    assert_eq!(found[0].methods, [Method::Jump]);
}

#[test]
fn an_improvement_is_not_a_regression() {
    let mut xs = noisy(12, 100.0, 1.0, 7);
    for x in &mut xs[6..] {
        *x *= 0.7;
    }
    let found = detect(&points(&xs), LOWER, &DetectOptions::default());
    assert_eq!(found.len(), 1);
    assert!(!found[0].is_regression());
    let found = detect(
        &points(&xs),
        Direction::HigherIsBetter,
        &DetectOptions::default(),
    );
    assert!(found[0].is_regression(), "a lower throughput is worse");
}

#[test]
fn the_consecutive_rule_needs_k_runs_beyond_x_percent() {
    let opts = DetectOptions {
        streak_runs: 3,
        streak_change: 0.10,
        ..DetectOptions::default()
    };
    let two = [100.0, 100.0, 100.0, 100.0, 100.0, 115.0, 115.0];
    assert!(streaks(&two, LOWER, &opts, None).is_empty());
    let three = [100.0, 100.0, 100.0, 100.0, 115.0, 115.0, 115.0];
    let s = streaks(&three, LOWER, &opts, None);
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].0.index, s[0].1, s[0].2), (4, 4, 7));
    let below = [100.0, 100.0, 100.0, 108.0, 108.0, 108.0, 108.0];
    assert!(streaks(&below, LOWER, &opts, None).is_empty());
}

#[test]
fn repeats_spread_is_the_noise_when_present() {
    // Two commits, three repeats each: the repeats' spread (sd 0.5) is the noise.
    let xs = [100.0, 100.5, 99.5, 112.0, 112.5, 111.5];
    let mut pts = points(&xs);
    for (i, p) in pts.iter_mut().enumerate() {
        p.repeat_key = Some(if i < 3 { "a".into() } else { "b".into() });
    }
    let found = detect(&pts, LOWER, &DetectOptions::default());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].noise_source, NoiseSource::SameSetupRuns);
    assert!((found[0].noise - 0.5).abs() < 1e-9, "{}", found[0].noise);
}

#[test]
fn a_runs_own_repeats_are_noise_too() {
    // An 8 % step that the runs' scatter alone calls a change…
    let xs = [100.0, 100.4, 99.6, 100.2, 108.0, 108.4, 107.6, 108.2];
    assert_eq!(
        detect(&points(&xs), LOWER, &DetectOptions::default()).len(),
        1
    );
    // …is within noise when each run's repeats spread by ±6 %.
    let mut pts = points(&xs);
    for p in &mut pts {
        let m = *p.value.as_ref().unwrap();
        p.repeat_values = vec![m - 6.0, m, m + 6.0];
    }
    let found = detect(&pts, LOWER, &DetectOptions::default());
    assert!(found.is_empty(), "{found:?}");
    // A 40 % step is still found, judged against the repeats' spread.
    let big: Vec<f64> = xs
        .iter()
        .enumerate()
        .map(|(i, x)| if i < 4 { *x } else { x * 1.3 })
        .collect();
    let mut pts = points(&big);
    for p in &mut pts {
        let m = *p.value.as_ref().unwrap();
        p.repeat_values = vec![m - 6.0, m, m + 6.0];
    }
    let found = detect(&pts, LOWER, &DetectOptions::default());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].noise_source, NoiseSource::Repeats);
    assert!((found[0].noise - 6.0).abs() < 1e-9);
}

fn trial(metrics: &[(&str, f64)], failed: bool) -> TrialRecord {
    TrialRecord {
        name: "t::e::c1".into(),
        seq: 0,
        outcome: if failed {
            TrialOutcome::Failed
        } else {
            TrialOutcome::Passed
        },
        interrupted: false,
        unclean: failed.then(|| "fallback result".into()),
        failures: if failed {
            vec!["server exited during startup".into()]
        } else {
            vec![]
        },
        metrics: metrics
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect::<BTreeMap<_, _>>(),
        repeats: BTreeMap::new(),
        thresholds: vec![],
        failure_class: None,
        needs_data: true,
    }
}

/// A run of one trial (also the noise tests').
pub(crate) fn run(i: usize, t: TrialRecord) -> RunRecord {
    RunRecord {
        run_id: format!("2026010{i}-000000-H100"),
        hardware_identity: "H100".into(),
        started: None,
        sort_key: format!("{i:04}"),
        finished: Some("x".into()),
        interrupted: false,
        fingerprint: Fingerprint::default(),
        trials: vec![t],
    }
}

#[test]
fn an_all_failed_run_is_classified_as_such_not_as_a_change() {
    let mut runs: Vec<RunRecord> = (0..8)
        .map(|i| {
            let e = 1000.0 + i as f64;
            run(
                i,
                trial(&[("median_e2el_ms", e), ("median_audio_rtf", 0.2)], false),
            )
        })
        .collect();
    // Runs 5 and 6: the server never came up; the template result has zeros.
    for i in [5, 6] {
        runs[i] = run(
            i,
            trial(&[("median_e2el_ms", 0.0), ("median_audio_rtf", 0.0)], true),
        );
    }
    let r = check::check("H100", &runs, &DetectOptions::default(), &[]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    let failed: Vec<&str> = r.failed_runs.iter().map(|f| f.run_id.as_str()).collect();
    assert_eq!(failed, [runs[5].run_id.as_str(), runs[6].run_id.as_str()]);
    assert!(r.failed_runs[0].reason.contains("server exited"));
    let s = check::series(&runs, "t::e::c1", "median_e2el_ms");
    assert!(matches!(s[5].value, Err(Gap::RunFailed(_))));
}

#[test]
fn an_e2el_change_explained_by_audio_length_is_not_a_regression() {
    let runs: Vec<RunRecord> = (0..8)
        .map(|i| {
            let longer = if i >= 4 { 1.4 } else { 1.0 };
            let jitter = 1.0 + 0.002 * (i % 3) as f64;
            let m = [
                ("median_e2el_ms", 2000.0 * longer * jitter),
                ("median_audio_duration_s", 10.0 * longer),
                ("median_audio_rtf", 0.2 * jitter),
            ];
            run(i, trial(&m, false))
        })
        .collect();
    let r = check::check("H100", &runs, &DetectOptions::default(), &[]);
    let e2el: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.metric == "median_e2el_ms")
        .collect();
    assert_eq!(e2el.len(), 1, "{:?}", r.findings);
    assert_eq!(e2el[0].run_index, 4);
    match &e2el[0].verdict {
        Verdict::ExplainedByAudioLength(why) => assert!(why.contains("longer audio, same RTF")),
        other => panic!("{other:?}"),
    }
    assert_eq!(r.regressions().count(), 0, "{:?}", r.findings);
}

#[test]
fn an_e2el_change_with_a_slower_rtf_is_a_regression() {
    let runs: Vec<RunRecord> = (0..8)
        .map(|i| {
            let slow = if i >= 4 { 1.4 } else { 1.0 };
            let m = [
                ("median_e2el_ms", 2000.0 * slow + i as f64),
                ("median_audio_duration_s", 10.0),
                ("median_audio_rtf", 0.2 * slow),
            ];
            run(i, trial(&m, false))
        })
        .collect();
    let r = check::check("H100", &runs, &DetectOptions::default(), &[]);
    let metrics: Vec<&str> = r.regressions().map(|f| f.metric.as_str()).collect();
    assert_eq!(
        metrics,
        ["median_audio_rtf", "median_e2el_ms"],
        "{:?}",
        r.findings
    );
}

/// A run whose trials all failed on their thresholds measured a slowdown: its values stay
/// in the series, and it is counted as a failed run by class (issue #37: "a run that
/// failed 4 of 5 trials on breaches is counted in 0 failed run(s)").
#[test]
fn a_run_that_breached_is_a_failed_run_with_values_not_a_gap() {
    let mut runs: Vec<RunRecord> = (0..6)
        .map(|i| run(i, trial(&[("median_e2el_ms", 1000.0 + i as f64)], false)))
        .collect();
    for r in &mut runs[4..] {
        let t = &mut r.trials[0];
        t.metrics.insert("median_e2el_ms".into(), 1400.0);
        t.outcome = TrialOutcome::Failed;
        t.failure_class = Some("breach".into());
        t.failures = vec!["median_e2el_ms 1400 > 1200".into()];
    }
    let r = check::check("H100", &runs, &DetectOptions::default(), &[]);
    let failed: Vec<(usize, bool, String)> = r
        .failed_runs
        .iter()
        .map(|f| (f.run_index, f.all_failed, f.classes_text()))
        .collect();
    assert_eq!(
        failed,
        [(4, false, "1 breach".into()), (5, false, "1 breach".into())]
    );
    let s = check::series(&runs, "t::e::c1", "median_e2el_ms");
    assert_eq!(s[4].value, Ok(1400.0));
    let regressions: Vec<usize> = r.regressions().map(|f| f.run_index).collect();
    assert_eq!(regressions, [4], "{:?}", r.findings);
}

/// Runs of one commit and config (a nightly of an unchanged tree): the jump is judged
/// against the spread of the runs *before* it, not against a spread the jump widens.
#[test]
fn a_jump_in_runs_of_one_setup_is_judged_against_the_runs_before_it() {
    let xs = [30.90, 34.44, 31.30, 42.79];
    let mut pts = points(&xs);
    for p in &mut pts {
        p.repeat_key = Some("abc config flags".into());
    }
    let found = detect(&pts, LOWER, &DetectOptions::default());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].suspected && found[0].index == 3, "{found:?}");
    assert_eq!(found[0].noise_source, NoiseSource::SameSetupRuns);
    assert!(
        found[0].noise < 2.0,
        "the runs before spread by ~1.9: {found:?}"
    );
}
