//! Recalibration: median across runs, margin by direction, the keep/tighten/loosen
//! policy, the store file, and refusals.

mod common;

use std::path::{Path, PathBuf};

use common::{Fault, RunBuilder};
use dfx_report::load_run;
use dfx_report::recalibrate::{
    Decision, RecalibrateOptions, apply, nothing_to_write, plan_from_dirs, read_store,
    render_table, round_threshold,
};

const C1: &str = "test_qwen3_tts_base::voice_clone_latency_seed-tts::c1";
const C16: &str = "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c16";
const QPS1: &str = "test_qwen3_tts_customvoice::default_voice_stress_seed-tts-text::qps1.0";

fn three_runs(results: &Path) -> Vec<PathBuf> {
    (1..=3)
        .map(|s| {
            RunBuilder::new(&format!("20260310-0{s}0000-SIM"))
                .seed(s)
                .write(results)
        })
        .collect()
}

fn opts(baselines: &Path) -> RecalibrateOptions {
    RecalibrateOptions {
        baselines_dir: baselines.to_path_buf(),
        ..RecalibrateOptions::default()
    }
}

fn change<'a>(
    r: &'a dfx_report::recalibrate::Recalibration,
    trial: &str,
    metric: &str,
) -> &'a dfx_report::recalibrate::Change {
    r.changes
        .iter()
        .find(|c| c.trial == trial && c.metric == metric)
        .unwrap_or_else(|| panic!("no change for {trial} {metric}"))
}

#[test]
fn median_plus_margin_by_direction() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = three_runs(tmp.path());
    let r = plan_from_dirs(&dirs, &opts(&tmp.path().join("baselines"))).unwrap();
    let values: Vec<f64> = dirs
        .iter()
        .map(|d| {
            load_run(d)
                .unwrap()
                .trial(C16)
                .unwrap()
                .metric("median_audio_ttfp_ms")
                .unwrap()
        })
        .collect();
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    let c = change(&r, C16, "median_audio_ttfp_ms");
    assert_eq!(c.values, values);
    assert_eq!(c.median, sorted[1]);
    assert_eq!(
        c.proposed,
        round_threshold(sorted[1] * 1.25),
        "ceiling = median + 25 %"
    );
    let t = change(&r, C16, "audio_throughput");
    assert_eq!(
        t.proposed,
        round_threshold(t.median * 0.75),
        "floor = median - 25 %"
    );
    // a metric without threshold anywhere is not calibrated by default
    assert!(r.changes.iter().all(|c| c.metric != "p99_e2el_ms"));
}

#[test]
fn default_policy_keeps_what_would_loosen_and_prints_why() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = three_runs(tmp.path());
    let baselines = tmp.path().join("baselines");
    let r = plan_from_dirs(&dirs, &opts(&baselines)).unwrap();
    // the fixture's thresholds sit ~10 % from the truth, +25 % is looser everywhere
    for c in &r.changes {
        assert_eq!(
            c.decision,
            Decision::KeepWouldLoosen,
            "{} {}",
            c.trial,
            c.metric
        );
        assert_eq!(c.result, c.old.as_ref().unwrap().value);
    }
    let table = render_table(&r);
    insta::assert_snapshot!(
        "keep_would_loosen_table",
        table.replace(&baselines.display().to_string(), "<baselines>")
    );
    let why = nothing_to_write(&r, &[]).expect("says why nothing is written");
    assert!(
        why.starts_with("nothing to write: 0 threshold(s) within --tolerance")
            && why.contains(&format!("{} looser than the old one", r.changes.len())),
        "{why}"
    );
    // Nothing new is written; the two thresholds the runs read from a store entry that
    // this (empty) store no longer has are kept, so they are restored, not dropped.
    let applied = apply(&r).unwrap();
    assert_eq!((applied.written, applied.restored), (0, 2));
    let store = read_store(&applied.store).unwrap();
    assert_eq!(store.len(), 2, "{store:?}");
    assert_eq!(store[QPS1]["mean_e2el_ms"], 2500.0);
    // Applying again changes nothing.
    let r = plan_from_dirs(&dirs, &opts(&baselines)).unwrap();
    let again = apply(&r).unwrap();
    assert_eq!((again.written, again.restored), (0, 0));
}

#[test]
fn allow_loosen_writes_a_sorted_stable_store() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = three_runs(tmp.path());
    let baselines = tmp.path().join("baselines");
    let o = RecalibrateOptions {
        allow_loosen: true,
        ..opts(&baselines)
    };
    let r = plan_from_dirs(&dirs, &o).unwrap();
    assert!(
        r.changes
            .iter()
            .all(|c| c.decision == Decision::Loosen || c.decision == Decision::KeepWithinTolerance)
    );
    let applied = apply(&r).unwrap();
    assert_eq!(applied.store, baselines.join("SIM.json"));
    let text = std::fs::read_to_string(&applied.store).unwrap();
    assert!(text.ends_with("}\n"));
    let store = read_store(&applied.store).unwrap();
    let keys: Vec<&String> = store.keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert_eq!(
        store[C1]["median_audio_ttfp_ms"],
        change(&r, C1, "median_audio_ttfp_ms").proposed
    );
    // text is the canonical pretty form (stable diffs)
    let canonical = serde_json::to_string_pretty(&store).unwrap() + "\n";
    assert_eq!(text, canonical);

    // recalibrating again from the same runs changes nothing: the store now holds the
    // thresholds, which are the old values, within tolerance of the new ones
    let again = plan_from_dirs(&dirs, &o).unwrap();
    for c in &again.changes {
        assert_eq!(
            c.old.as_ref().unwrap().source,
            "store",
            "{} {}",
            c.trial,
            c.metric
        );
        assert_eq!(c.decision, Decision::KeepWithinTolerance);
    }
    assert_eq!(apply(&again).unwrap().written, 0);
    assert_eq!(std::fs::read_to_string(&applied.store).unwrap(), text);
}

#[test]
fn tighter_beyond_tolerance_replaces_within_tolerance_keeps() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = three_runs(tmp.path());
    let baselines = tmp.path().join("baselines");
    let o = RecalibrateOptions {
        margin: 0.0,
        ..opts(&baselines)
    };
    let r = plan_from_dirs(&dirs, &o).unwrap();
    // c1 TTFP: median ~128 vs 141.28 (~-9 %): tighten
    let c = change(&r, C1, "median_audio_ttfp_ms");
    assert_eq!(c.decision, Decision::Tighten, "{c:?}");
    assert!(c.relative.unwrap() < -0.05);
    // with a 10 % tolerance the same change is kept
    let r10 = plan_from_dirs(
        &dirs,
        &RecalibrateOptions {
            tolerance: 0.10,
            ..o.clone()
        },
    )
    .unwrap();
    assert_eq!(
        change(&r10, C1, "median_audio_ttfp_ms").decision,
        Decision::KeepWithinTolerance
    );
    let applied = apply(&r).unwrap();
    let store = read_store(&applied.store).unwrap();
    assert_eq!(store[C1]["median_audio_ttfp_ms"], c.proposed);
    // kept inline thresholds are not copied into the store
    let kept: Vec<_> = r.changes.iter().filter(|c| !c.writes()).collect();
    for k in kept {
        assert!(
            store.get(&k.trial).and_then(|m| m.get(&k.metric)).is_none(),
            "{} {}",
            k.trial,
            k.metric
        );
    }
}

#[test]
fn per_metric_margin_overrides_the_default() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = three_runs(tmp.path());
    let mut o = opts(&tmp.path().join("baselines"));
    o.metric_margins.insert("audio_throughput".into(), 0.10);
    let r = plan_from_dirs(&dirs, &o).unwrap();
    let t = change(&r, C16, "audio_throughput");
    assert_eq!(t.margin, 0.10);
    assert_eq!(t.proposed, round_threshold(t.median * 0.90));
    assert_eq!(change(&r, C16, "median_audio_rtf").margin, 0.25);
}

#[test]
fn the_store_is_the_old_threshold_where_it_has_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = three_runs(tmp.path());
    let baselines = tmp.path().join("baselines");
    std::fs::create_dir_all(&baselines).unwrap();
    std::fs::write(
        baselines.join("SIM.json"),
        format!("{{\"{QPS1}\": {{\"mean_e2el_ms\": 5000}}, \"other::trial::c1\": {{\"median_e2el_ms\": 1}}}}"),
    )
    .unwrap();
    let r = plan_from_dirs(&dirs, &opts(&baselines)).unwrap();
    let c = change(&r, QPS1, "mean_e2el_ms");
    assert_eq!(c.old.as_ref().unwrap().source, "store");
    assert_eq!(c.old.as_ref().unwrap().value, 5000.0);
    assert_eq!(c.decision, Decision::Tighten);
    apply(&r).unwrap();
    let store = read_store(&baselines.join("SIM.json")).unwrap();
    assert_eq!(store[QPS1]["mean_e2el_ms"], c.proposed);
    assert_eq!(
        store["other::trial::c1"]["median_e2el_ms"], 1.0,
        "unrelated store entries are kept"
    );
}

#[test]
fn mixed_hardware_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let a = RunBuilder::new("20260310-010000-H100")
        .hardware("H100")
        .write(tmp.path());
    let b = RunBuilder::new("20260310-020000-H20")
        .hardware("H20")
        .write(tmp.path());
    let err = plan_from_dirs(&[a, b], &opts(tmp.path()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refusing to recalibrate from runs of different hardware"),
        "{err}"
    );
    assert!(
        err.contains("20260310-010000-H100 (H100)") && err.contains("20260310-020000-H20 (H20)"),
        "{err}"
    );
}

#[test]
fn mixed_bench_tools_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let a = RunBuilder::new("20260310-010000-SIM").write(tmp.path());
    let mut b = RunBuilder::new("20260310-020000-SIM");
    b.bench_tool = "vllm";
    let b = b.write(tmp.path());
    let err = plan_from_dirs(&[a, b], &opts(tmp.path()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "different bench tools: 20260310-010000-SIM (native), 20260310-020000-SIM (vllm)"
        ),
        "{err}"
    );
}

#[test]
fn failed_and_fallback_trials_are_refused_or_skipped_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dirs = three_runs(tmp.path());
    dirs.push(
        RunBuilder::new("20260310-040000-SIM")
            .seed(4)
            .fault(C16, Fault::FailedRequests(2))
            .fault(QPS1, Fault::Fallback)
            .write(tmp.path()),
    );
    let err = plan_from_dirs(&dirs, &opts(tmp.path()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refusing to recalibrate from failed or fallback trials"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{C16} in run 20260310-040000-SIM: 2 request(s) failed"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{QPS1} in run 20260310-040000-SIM: fallback result"
        )),
        "{err}"
    );
    assert!(err.contains("--skip-failed"), "{err}");

    let r = plan_from_dirs(
        &dirs,
        &RecalibrateOptions {
            skip_failed: true,
            ..opts(tmp.path())
        },
    )
    .unwrap();
    assert!(r.changes.iter().all(|c| c.trial != C16 && c.trial != QPS1));
    assert!(r.changes.iter().any(|c| c.trial == C1));
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with(C16) && n.contains("left unchanged")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_breach_is_not_a_failure_for_recalibration() {
    // a slower release judged with --assert-baseline fails on breaches only: those are
    // still clean measurements, exactly what recalibration is for
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (1..=2)
        .map(|s| {
            RunBuilder::new(&format!("20260310-0{s}0000-SIM"))
                .seed(s)
                .slowdown(0.2)
                .assert_baseline()
                .write(tmp.path())
        })
        .collect();
    let r = plan_from_dirs(
        &dirs,
        &RecalibrateOptions {
            allow_loosen: true,
            ..opts(tmp.path())
        },
    )
    .unwrap();
    assert_eq!(
        change(&r, C1, "median_audio_ttfp_ms").decision,
        Decision::Loosen
    );
}

#[test]
fn unknown_metric_names_in_flags_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = three_runs(tmp.path());
    let o = RecalibrateOptions {
        metrics: vec!["median_audio_ttpf_ms".into()],
        ..opts(tmp.path())
    };
    let err = plan_from_dirs(&dirs, &o).unwrap_err().to_string();
    assert!(
        err.contains("--metrics median_audio_ttpf_ms: unknown metric"),
        "{err}"
    );
    let mut o = opts(tmp.path());
    o.metric_margins.insert("latency".into(), 0.1);
    let err = plan_from_dirs(&dirs, &o).unwrap_err().to_string();
    assert!(
        err.contains("--margin-metric latency: unknown metric"),
        "{err}"
    );
}

#[test]
fn extra_metrics_are_added() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = three_runs(tmp.path());
    let o = RecalibrateOptions {
        metrics: vec!["p99_e2el_ms".into()],
        ..opts(tmp.path())
    };
    let r = plan_from_dirs(&dirs, &o).unwrap();
    let c = change(&r, C16, "p99_e2el_ms");
    assert_eq!(c.decision, Decision::Add);
    assert!(c.old.is_none());
}

#[test]
fn an_invalid_store_is_an_error_naming_file_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = three_runs(tmp.path());
    let baselines = tmp.path().join("baselines");
    std::fs::create_dir_all(&baselines).unwrap();
    std::fs::write(
        baselines.join("SIM.json"),
        format!("{{\"{C1}\": {{\"median_audio_ttfp_ms\": \"fast\"}}}}"),
    )
    .unwrap();
    let err = plan_from_dirs(&dirs, &opts(&baselines))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("SIM.json") && err.contains("median_audio_ttfp_ms"),
        "{err}"
    );
}

fn recorded(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(name)
}

/// Runs recorded by the suite (fake bench): a clean run recalibrates, runs with failed
/// requests or a fallback result are refused with the suite's own failure text.
#[test]
fn recorded_runs_recalibrate_or_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let o = RecalibrateOptions {
        margin: 0.0,
        ..opts(tmp.path())
    };
    let r = plan_from_dirs(&[recorded("fake-h100-passing")], &o).unwrap();
    assert_eq!(r.hardware, "H100");
    let c = change(
        &r,
        "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c4",
        "median_audio_ttfp_ms",
    );
    assert_eq!(c.values.len(), 1);
    assert_eq!(c.old.as_ref().unwrap().value, 300.0);
    assert_eq!(c.decision, Decision::Tighten);

    let err = plan_from_dirs(&[recorded("fake-h100-breaches-and-failed-requests")], &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("1 request(s) failed"), "{err}");
    let err = plan_from_dirs(&[recorded("fake-h100-fallback")], &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("fallback result"), "{err}");
}

/// A run without thresholds and no --metrics: an empty table that says why; with
/// --metrics the same run calibrates.
#[test]
fn an_empty_recalibration_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let run = [recorded("sim-x4-passing")];
    let r = plan_from_dirs(&run, &opts(tmp.path())).unwrap();
    assert!(r.changes.is_empty());
    let why = nothing_to_write(&r, &[]).unwrap();
    assert!(
        why.starts_with("nothing to calibrate: no trial of these runs has a threshold for `SIMx4`")
            && why.contains("--metrics"),
        "{why}"
    );
    let asked = vec!["median_audio_ttfp_ms".to_string()];
    let o = RecalibrateOptions {
        metrics: asked.clone(),
        ..opts(tmp.path())
    };
    let r = plan_from_dirs(&run, &o).unwrap();
    assert!(!r.changes.is_empty());
    assert_eq!(nothing_to_write(&r, &asked), None);
}

#[test]
fn a_threshold_that_checks_nothing_is_never_proposed() {
    use dfx_core::metrics::Direction;
    use dfx_report::recalibrate::change_from_level;
    let o = RecalibrateOptions::default();
    // A measured median of 0 (or below) gives a floor that passes every result, or a
    // latency ceiling no result can meet: a note, nothing written.
    let floor = change_from_level(
        C16,
        "audio_throughput",
        Direction::HigherIsBetter,
        vec![0.0],
        0.0,
        None,
        &o,
    )
    .unwrap_err()
    .to_string();
    assert!(
        floor.contains("audio_throughput")
            && floor.contains("checks nothing")
            && floor.ends_with("not calibrated"),
        "{floor}"
    );
    let ceiling = change_from_level(
        C1,
        "median_audio_ttfp_ms",
        Direction::LowerIsBetter,
        vec![-1.0],
        -1.0,
        None,
        &o,
    )
    .unwrap_err()
    .to_string();
    assert!(ceiling.contains("can never hold"), "{ceiling}");
    // Zero failures is a ceiling that holds.
    let failed = change_from_level(
        C1,
        "failed",
        Direction::LowerIsBetter,
        vec![0.0],
        0.0,
        None,
        &o,
    );
    assert_eq!(failed.unwrap().proposed, 0.0);
}
