//! Reading a run folder. `summary.json` is the source of truth; when a run died before
//! writing it, the trials are rebuilt from `trials/*/result.json` (+ `verdict.json`) so a
//! crashed run can still be reported.

use std::path::{Path, PathBuf};

use dfx_core::artefact::{ResultSections, Summary, VerdictFile};
use dfx_core::lenient::number_of;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Outcome, Run, RunInfo, StepKind, TrialSummary};
use crate::ReportError;

/// Loads a run folder. Errors name the file and what is wrong with it.
pub fn load_run(dir: &Path) -> Result<Run, ReportError> {
    if !dir.is_dir() {
        return Err(ReportError::NotARun {
            path: dir.to_path_buf(),
        });
    }
    let mut notes = Vec::new();
    let run_json = dir.join("run.json");
    let info: RunInfo = if run_json.is_file() {
        read_json(&run_json)?
    } else {
        notes.push("run.json is missing: run details unknown".to_string());
        RunInfo::default()
    };
    let summary_path = dir.join("summary.json");
    let (run_id, hardware, trials) = if summary_path.is_file() {
        let s: Summary = read_json(&summary_path)?;
        notes.extend(s.notes);
        (s.run_id, s.hardware, s.trials)
    } else if dir.join("trials").is_dir() {
        notes.push(
            "summary.json is missing (the run did not finish): trials rebuilt from trials/*/result.json"
                .to_string(),
        );
        (None, None, rebuild_trials(&dir.join("trials"))?)
    } else {
        return Err(ReportError::NotARun {
            path: dir.to_path_buf(),
        });
    };
    let folder_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let hardware = hardware
        .or_else(|| info.hardware.clone())
        .or_else(|| trials_hardware(dir))
        .unwrap_or_else(|| dfx_core::hardware::UNKNOWN.to_string());
    Ok(Run {
        dir: dir.to_path_buf(),
        run_id: run_id.unwrap_or(folder_name),
        hardware,
        info,
        trials,
        notes,
    })
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ReportError> {
    let text = crate::error::read_text(path, dfx_core::bounds::MAX_RUN_FILE_BYTES)?;
    serde_json::from_str(&text).map_err(|e| ReportError::format(path, e.to_string()))
}

/// The `Hardware` key of the first result file, for runs without summary and run.json.
fn trials_hardware(dir: &Path) -> Option<String> {
    let first = trial_dirs(&dir.join("trials")).ok()?.into_iter().next()?;
    let doc: Map<String, Value> = read_json(&first.join("result.json")).ok()?;
    doc.get("Hardware")?.as_str().map(str::to_string)
}

fn trial_dirs(trials: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let rd = std::fs::read_dir(trials).map_err(|e| ReportError::io(trials, e))?;
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("result.json").is_file())
        .collect();
    dirs.sort();
    Ok(dirs)
}

fn rebuild_trials(trials: &Path) -> Result<Vec<TrialSummary>, ReportError> {
    trial_dirs(trials)?
        .iter()
        .map(|d| rebuild_trial(d))
        .collect()
}

fn rebuild_trial(dir: &Path) -> Result<TrialSummary, ReportError> {
    let result_path = dir.join("result.json");
    let doc: Map<String, Value> = read_json(&result_path)?;
    let verdict_path = dir.join("verdict.json");
    let verdict: Option<VerdictFile> = if verdict_path.is_file() {
        Some(read_json(&verdict_path)?)
    } else {
        None
    };
    // The bench's own result may hold keys of other shapes; what cannot be read as
    // dfx-perf's sections is left out, as before.
    let sections: ResultSections =
        serde_json::from_value(Value::Object(doc.clone())).unwrap_or_default();
    let dir_name = dir.file_name().unwrap_or_default().to_string_lossy();
    let name = sections
        .trial
        .clone()
        .unwrap_or_else(|| dir_name.into_owned());
    let mut parts = name.splitn(3, "::");
    let (test_name, suffix, step) = (
        parts.next().unwrap_or_default().to_string(),
        parts.next().unwrap_or_default().to_string(),
        parts.next().unwrap_or_default().to_string(),
    );
    let num = |k: &str| -> Result<Option<f64>, ReportError> {
        number_of(doc.get(k).unwrap_or(&Value::Null))
            .map_err(|p| ReportError::format(&result_path, format!("key `{k}`: {p}")))
    };
    let kind = if step.starts_with("qps") {
        Some(StepKind::RequestRate)
    } else if step.starts_with('c') {
        Some(StepKind::Concurrency)
    } else {
        None
    };
    // verdict.json carries the thresholds with direction and source; a result alone
    // has its own list (or only upstream's `baseline`).
    let thresholds = match &verdict {
        Some(v) => v.thresholds.items.clone(),
        None => sections.thresholds(),
    };
    let class = verdict
        .as_ref()
        .map(|v| (v.verdict.failure_class, v.verdict.failure_detail.clone()));
    let (failure_class, failure_detail) = class.unwrap_or_default();
    let (outcome, mut failures, breaches, warnings) = match verdict {
        Some(v) => {
            let o = if v.verdict.passed {
                Outcome::Passed
            } else {
                Outcome::Failed
            };
            (
                o,
                v.verdict.failures,
                v.verdict.breaches,
                v.verdict.warnings,
            )
        }
        None => (Outcome::Failed, Vec::new(), Vec::new(), Vec::new()),
    };
    if !verdict_path.is_file() {
        failures.push("no verdict.json: the run stopped before judging this trial".into());
    }
    let metrics = doc
        .iter()
        .filter(|(_, v)| v.is_number())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let whole = |x: Option<f64>| {
        x.filter(|v| v.fract() == 0.0 && *v >= 0.0)
            .map(|v| v as u64)
    };
    Ok(TrialSummary {
        name,
        plan_index: None,
        test_name,
        suffix,
        step,
        kind,
        max_concurrency: whole(num("max_concurrency")?).and_then(|v| u32::try_from(v).ok()),
        request_rate: num("request_rate")?,
        num_prompts: whole(num("num_prompts")?),
        marks: Vec::new(),
        outcome,
        interrupted: false,
        ignored_reason: None,
        failures,
        failure_class,
        failure_detail,
        breaches,
        warnings,
        thresholds,
        thresholds_skipped: Vec::new(),
        thresholds_note: None,
        needs_data: None,
        metrics,
        repeats: sections
            .repeats
            .and_then(|r| serde_json::from_value(r).ok()),
        result: Some(result_path.to_string_lossy().into_owned()),
        bench: None,
        result_source: sections.result_source,
        server: None,
        server_started: None,
        seconds: None,
    })
}
