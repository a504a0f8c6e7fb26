//! Run folders recorded by earlier versions of the suite (`tests/fixtures/`) still load
//! into the artefact types of dfx-core and satisfy the JSON Schemas in `docs/schema/`.
//! `runs/sim-x5-artefacts` was recorded before those types existed, with every section a
//! run writes: repeats, a capacity search, breaches, plain steps.

use std::path::{Path, PathBuf};

use dfx_core::artefact::{RunInfo, Summary, VerdictFile, schema};
use dfx_core::baseline::{Direction, ThresholdSource};
use dfx_report::run::Outcome;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every recorded run folder: `runs/*` and `compare/*/{a,b}/*`.
fn recorded_runs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let list = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        v
    };
    out.extend(list(&fixtures().join("runs")));
    for case in list(&fixtures().join("compare")) {
        for side in ["a", "b"] {
            out.extend(list(&case.join(side)));
        }
    }
    out
}

fn read<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_recorded_run_folder_loads_into_the_types_and_fits_the_schemas() {
    let runs = recorded_runs();
    assert!(runs.len() >= 19, "{runs:?}");
    for dir in runs {
        let info: RunInfo = read(&dir.join("run.json"));
        assert!(info.run_id.is_some(), "{}", dir.display());
        let summary: Summary = read(&dir.join("summary.json"));
        assert!(!summary.trials.is_empty(), "{}", dir.display());
        for t in &summary.trials {
            if let Some(rel) = &t.result {
                let verdict = dir.join(rel).with_file_name("verdict.json");
                if verdict.is_file() {
                    let v: VerdictFile = read(&verdict);
                    assert_eq!(v.trial, t.name);
                    assert_eq!(v.verdict.passed, t.outcome == Outcome::Passed, "{}", t.name);
                }
            }
        }
        let run = dfx_report::load_run(&dir).unwrap();
        assert_eq!(run.trials.len(), summary.trials.len());
        if let Err(problems) = schema::check_run_dir(&dir) {
            panic!("{}:\n{}", dir.display(), problems.join("\n"));
        }
    }
}

#[test]
fn a_run_recorded_before_the_artefact_types_keeps_every_section() {
    let run = dfx_report::load_run(&fixtures().join("runs/sim-x5-artefacts")).unwrap();
    let by_suffix = |s: &str| run.trials.iter().find(|t| t.suffix.starts_with(s)).unwrap();

    let repeats = by_suffix("repeats");
    assert_eq!(repeats.repeats.as_ref().unwrap().count, Some(3));
    assert_eq!(repeats.repeat_values("mean_e2el_ms").len(), 3);
    let th = repeats.threshold("request_throughput").unwrap();
    assert_eq!(th.direction, Direction::HigherIsBetter);
    assert_eq!(th.source, ThresholdSource::Inline);

    let breach = by_suffix("breach");
    assert_eq!(
        breach.outcome,
        Outcome::Passed,
        "breaches warn without --assert-baseline"
    );
    let b = breach.breach("median_e2el_ms").unwrap();
    assert_eq!(b.direction, Direction::LowerIsBetter);
    assert!(b.gap > 0.0);
    assert!(breach.breach("audio_throughput").is_some());

    let capacity = by_suffix("capacity");
    assert!(capacity.metric("capacity_request_rate").unwrap() > 0.0);
    assert!(!capacity.needs_data());
}

/// A run folder whose `summary.json` is missing is rebuilt from `trials/`; the thresholds
/// then come from `verdict.json` with their direction and source, not from the
/// direction table.
#[test]
fn a_rebuilt_run_takes_thresholds_with_their_source_from_verdict_json() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixtures().join("runs/sim-x5-artefacts");
    copy_dir(&src, tmp.path());
    std::fs::remove_file(tmp.path().join("summary.json")).unwrap();
    let run = dfx_report::load_run(tmp.path()).unwrap();
    let t = run
        .trials
        .iter()
        .find(|t| t.suffix.starts_with("breach"))
        .unwrap();
    let th = t.threshold("median_e2el_ms").unwrap();
    assert_eq!(th.source, ThresholdSource::Inline);
    assert_eq!(t.breaches.len(), 2);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}
