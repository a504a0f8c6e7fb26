//! `summary.json`: one element per trial that ran or was ignored (filtered-out trials
//! are left out), written after the last trial, also when trials failed or panicked, and
//! when the run is interrupted (then with the trials done so far, the interrupted one
//! failed and marked `interrupted`, and an [`Interruption`] section).

use dfx_core::baseline::Threshold;
use dfx_core::plan::{StepKind, Trial};
use dfx_core::result::ResultDoc;
use dfx_core::verdict::Breach;
use serde::Serialize;
use serde_json::{Map, Value};

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Passed,
    Failed,
    Ignored,
}

/// Result keys copied into the summary when present (besides every thresholded metric).
pub const KEY_METRICS: &[&str] = dfx_core::metrics::SUMMARY_KEYS;

/// One trial in `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryEntry {
    pub name: String,
    /// Position in the whole plan (0-based, filled in when the run closes): the order
    /// `dfx-perf merge` puts the trials of several shards back into.
    pub plan_index: Option<usize>,
    pub test_name: String,
    pub suffix: String,
    /// Step label (`c16`, `qps2.0`).
    pub step: String,
    /// `concurrency` or `request_rate`.
    pub kind: &'static str,
    pub max_concurrency: Option<u32>,
    pub request_rate: Option<f64>,
    pub num_prompts: u64,
    pub marks: Vec<String>,
    /// `failed`, with `interrupted: true`, for the trial that was running when the run
    /// was interrupted (SIGINT / SIGTERM).
    pub outcome: Outcome,
    /// The run was interrupted while this trial ran; its records are partial.
    pub interrupted: bool,
    /// Why the trial was ignored (or could not run under `--assert-baseline`).
    pub ignored_reason: Option<String>,
    pub failures: Vec<String>,
    pub breaches: Vec<Breach>,
    pub warnings: Vec<String>,
    /// Resolved thresholds with direction and source.
    pub thresholds: Vec<Threshold>,
    /// Metrics whose baseline is `null`.
    pub thresholds_skipped: Vec<String>,
    pub thresholds_note: Option<String>,
    /// It ran without any threshold for the run's hardware ("needs data"; never a contract
    /// trial, which has no metric to threshold): it can only
    /// fail on completion, never on a regression.
    pub needs_data: bool,
    /// Key metrics of the result (see [`KEY_METRICS`]) plus every thresholded metric.
    pub metrics: Map<String, Value>,
    /// A step run as repeats: `count`, `ci_method` and, for each metric of `metrics` the
    /// repeats summarise, its statistics (`values`, `mean`, `median`, `std`, `min`,
    /// `max`, `ci95_low`, `ci95_high`). Absent for a single run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Value>,
    /// `trials/<dir>/result.json`, relative to the run folder.
    pub result: Option<String>,
    /// `native`, `vllm`, `fake`.
    pub bench: Option<String>,
    /// `native`, `vllm`, `template`, `fake`.
    pub result_source: Option<String>,
    /// `servers/<NN>-<name>`, relative to the run folder.
    pub server: Option<String>,
    /// Whether this trial started that server (false: reused a live one).
    pub server_started: Option<bool>,
    /// Wall time of the trial in seconds.
    pub seconds: f64,
}

impl SummaryEntry {
    /// An entry with the trial's identity and thresholds; outcome to be filled in.
    pub fn new(trial: &Trial, outcome: Outcome) -> Self {
        let (kind, max_concurrency, request_rate) = match trial.step.kind {
            StepKind::Concurrency { max_concurrency } => {
                ("concurrency", Some(max_concurrency), None)
            }
            StepKind::RequestRate { request_rate } => ("request_rate", None, Some(request_rate)),
        };
        SummaryEntry {
            name: trial.name.clone(),
            plan_index: None,
            test_name: trial.test_name.clone(),
            suffix: trial.entry.suffix.clone(),
            step: trial.step.label.clone(),
            kind,
            max_concurrency,
            request_rate,
            num_prompts: trial.step.num_prompts,
            marks: trial.marks.clone(),
            outcome,
            interrupted: false,
            ignored_reason: None,
            failures: Vec::new(),
            breaches: Vec::new(),
            warnings: Vec::new(),
            thresholds: trial.thresholds.items.clone(),
            thresholds_skipped: trial.thresholds.skipped.clone(),
            thresholds_note: trial.thresholds.note.clone(),
            needs_data: outcome != Outcome::Ignored
                && trial.thresholds.items.is_empty()
                && trial.entry.dialect != dfx_core::plan::Dialect::Contract,
            metrics: Map::new(),
            repeats: None,
            result: None,
            bench: None,
            result_source: None,
            server: None,
            server_started: None,
            seconds: 0.0,
        }
    }

    /// An ignored trial.
    pub fn ignored(trial: &Trial, reason: &str) -> Self {
        let mut e = SummaryEntry::new(trial, Outcome::Ignored);
        e.ignored_reason = Some(reason.to_string());
        e.needs_data = false;
        e
    }

    /// Copies the key metrics and the thresholded metrics of `doc`.
    pub fn take_metrics(&mut self, doc: &ResultDoc) {
        let thresholded = self.thresholds.iter().map(|t| t.metric.as_str());
        for key in KEY_METRICS.iter().copied().chain(thresholded) {
            if let Some(v) = doc.get(key) {
                self.metrics.insert(key.to_string(), v.clone());
            }
        }
        if let Some(r) = doc.get("repeats").and_then(Value::as_object) {
            let stats: Map<String, Value> = r
                .get("stats")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter(|(k, _)| self.metrics.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            self.repeats = Some(serde_json::json!({
                "count": r.get("count"), "with_result": r.get("with_result"),
                "ci_method": r.get("ci_method"), "stats": stats}));
        }
    }
}

/// The whole of `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub run_id: String,
    pub hardware: String,
    pub assert_baseline: bool,
    pub passed: usize,
    pub failed: usize,
    pub ignored: usize,
    /// Trials that ran without any threshold for the hardware ("needs data").
    pub needs_data: usize,
    /// Trials left out by the name filter / `--skip` / `--ignored`.
    pub filtered_out: usize,
    /// Servers started during the run.
    pub server_starts: usize,
    /// Run-level remarks (a server found dead between trials, stop errors).
    pub notes: Vec<String>,
    /// Set when the run was interrupted (SIGINT / SIGTERM) before its last trial.
    pub interrupted: Option<Interruption>,
    pub trials: Vec<SummaryEntry>,
}

/// How far an interrupted run got.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interruption {
    /// The trial that was running (`None`: the signal came between trials).
    pub trial: Option<String>,
    /// How long that trial had run, in seconds.
    pub trial_seconds: Option<f64>,
    /// Selected trials that never started, in plan order.
    pub not_run: Vec<String>,
}

impl Summary {
    /// Counts outcomes of `trials`.
    pub fn new(
        run_id: &str,
        hardware: &str,
        assert_baseline: bool,
        filtered_out: usize,
        server_starts: usize,
        notes: Vec<String>,
        trials: Vec<SummaryEntry>,
    ) -> Self {
        let count = |o: Outcome| trials.iter().filter(|t| t.outcome == o).count();
        Summary {
            run_id: run_id.into(),
            hardware: hardware.into(),
            assert_baseline,
            passed: count(Outcome::Passed),
            failed: count(Outcome::Failed),
            ignored: count(Outcome::Ignored),
            needs_data: trials.iter().filter(|t| t.needs_data).count(),
            filtered_out,
            server_starts,
            notes,
            interrupted: None,
            trials,
        }
    }
}

#[cfg(test)]
mod tests {
    use dfx_core::baseline::Direction;

    use super::*;
    use crate::test_support::{concurrency_trial, threshold};

    #[test]
    fn a_trial_that_ran_without_thresholds_needs_data_and_is_counted() {
        let bare = concurrency_trial("t", "s", 1, 2);
        let mut judged = concurrency_trial("t", "s", 2, 2);
        judged.thresholds.items = vec![threshold("median_e2el_ms", 10.0, Direction::LowerIsBetter)];
        let entries = vec![
            SummaryEntry::new(&bare, Outcome::Passed),
            SummaryEntry::new(&judged, Outcome::Passed),
            SummaryEntry::new(&bare, Outcome::Failed),
            SummaryEntry::ignored(&bare, "no bench"),
        ];
        let flags: Vec<bool> = entries.iter().map(|e| e.needs_data).collect();
        assert_eq!(flags, [true, false, true, false]);
        let s = Summary::new("r", "H20", false, 0, 0, vec![], entries);
        assert_eq!(s.needs_data, 2);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["needs_data"], 2);
        assert_eq!(json["trials"][0]["needs_data"], true);
    }
}
