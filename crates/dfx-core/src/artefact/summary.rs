//! `summary.json`: one element per trial that ran or was ignored (filtered-out trials
//! are left out), written after the last trial, also when trials failed or panicked, and
//! when the run is interrupted (then with the trials done so far, the interrupted one
//! failed and marked `interrupted`, and an [`Interruption`] section).
//!
//! The same types read the file back (report, compare, recalibrate, history): fields a
//! run folder written by an older dfx-perf lacks take their defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::baseline::{Direction, Threshold, direction_of};
use crate::lenient;
use crate::plan::{Dialect, Trial};
use crate::repeats::MetricStats;
use crate::result::ResultDoc;
use crate::verdict::{Breach, FailureClass};

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// It ran and its verdict passed.
    Passed,
    /// It ran (or tried to) and failed; also the trial an interrupt stopped.
    Failed,
    /// It did not run (no bench for it, `#[ignore]`-style marks, `--assert-baseline`
    /// without data).
    Ignored,
}

impl Outcome {
    /// `passed` / `FAILED` / `ignored`.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "FAILED",
            Outcome::Ignored => "ignored",
        }
    }
}

/// Closed-loop (concurrency) or open-loop (request-rate) step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// `max_concurrency` requests in flight.
    Concurrency,
    /// Requests arrive at `request_rate` per second.
    RequestRate,
}

/// Result keys copied into the summary when present (besides every thresholded metric).
pub const KEY_METRICS: &[&str] = crate::metrics::SUMMARY_KEYS;

/// The repeats of one step, as the summary keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepeatsSummary {
    /// Repeats run.
    pub count: Option<u64>,
    /// Repeats that left a result.
    #[serde(default)]
    pub with_result: Option<u64>,
    /// How the confidence intervals were computed.
    #[serde(default)]
    pub ci_method: Option<String>,
    /// Per metric of `metrics` the repeats summarise: its statistics over the repeats,
    /// in the order the result lists them (kept as JSON so that order survives).
    #[serde(default)]
    #[schemars(with = "std::collections::BTreeMap<String, MetricStats>")]
    pub stats: Map<String, Value>,
}

/// One trial in `summary.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SummaryEntry {
    /// `<test_name>::<suffix>::<step>`.
    pub name: String,
    /// Position in the whole plan (0-based, filled in when the run closes): the order
    /// `dfx-perf merge` puts the trials of several shards back into.
    #[serde(default)]
    pub plan_index: Option<usize>,
    /// The config's test (file stem).
    #[serde(default)]
    pub test_name: String,
    /// The benchmark entry's name within the test.
    #[serde(default)]
    pub suffix: String,
    /// Step label (`c16`, `qps2.0`).
    #[serde(default)]
    pub step: String,
    /// `concurrency` or `request_rate`.
    #[serde(default)]
    pub kind: Option<StepKind>,
    /// The step's concurrency (concurrency steps).
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub max_concurrency: Option<u32>,
    /// The step's request rate (rate steps); an infinite rate is written as `null`.
    #[serde(default, deserialize_with = "lenient::opt_number")]
    pub request_rate: Option<f64>,
    /// Requests the step sends.
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    pub num_prompts: Option<u64>,
    /// The trial's marks (`tts`, `slow`, …).
    #[serde(default)]
    pub marks: Vec<String>,
    /// `failed`, with `interrupted: true`, for the trial that was running when the run
    /// was interrupted (SIGINT / SIGTERM).
    pub outcome: Outcome,
    /// The run was interrupted while this trial ran; its records are partial.
    #[serde(default)]
    pub interrupted: bool,
    /// Why the trial was ignored (or could not run under `--assert-baseline`).
    #[serde(default)]
    pub ignored_reason: Option<String>,
    /// Why it failed, one line per reason.
    #[serde(default)]
    pub failures: Vec<String>,
    /// A failed trial's class (as in its `verdict.json`); absent when it passed and in
    /// run folders older than the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_class: Option<FailureClass>,
    /// The class's one-line detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_detail: Option<String>,
    /// Baseline breaches (fatal under `--assert-baseline`, warnings otherwise).
    #[serde(default)]
    pub breaches: Vec<Breach>,
    /// Non-fatal remarks.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Resolved thresholds with direction and source.
    #[serde(default)]
    pub thresholds: Vec<Threshold>,
    /// Metrics whose baseline is `null`.
    #[serde(default)]
    pub thresholds_skipped: Vec<String>,
    /// Why there are no thresholds although the entry has a baseline.
    #[serde(default)]
    pub thresholds_note: Option<String>,
    /// It ran without any threshold for the run's hardware ("needs data"; never a contract
    /// trial, which has no metric to threshold): it can only fail on completion, never on
    /// a regression. Absent in run folders older than the flag (see
    /// [`SummaryEntry::needs_data`]).
    #[serde(default)]
    pub needs_data: Option<bool>,
    /// Key metrics of the result (see [`KEY_METRICS`]) plus every thresholded metric.
    #[serde(default)]
    pub metrics: Map<String, Value>,
    /// A step run as repeats: `count`, `ci_method` and, for each metric of `metrics` the
    /// repeats summarise, its statistics. Absent for a single run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<RepeatsSummary>,
    /// `trials/<dir>/result.json`, relative to the run folder.
    #[serde(default)]
    pub result: Option<String>,
    /// `native`, `vllm`, `fake`.
    #[serde(default)]
    pub bench: Option<String>,
    /// `native`, `vllm`, `template`, `fake`.
    #[serde(default)]
    pub result_source: Option<String>,
    /// `servers/<NN>-<name>`, relative to the run folder.
    #[serde(default)]
    pub server: Option<String>,
    /// Whether this trial started that server (false: reused a live one).
    #[serde(default)]
    pub server_started: Option<bool>,
    /// Wall time of the trial in seconds.
    #[serde(default)]
    pub seconds: Option<f64>,
}

impl SummaryEntry {
    /// An entry with the trial's identity and thresholds; outcome to be filled in.
    pub fn new(trial: &Trial, outcome: Outcome) -> Self {
        let (kind, max_concurrency, request_rate) = match trial.step.kind {
            crate::plan::StepKind::Concurrency { max_concurrency } => {
                (StepKind::Concurrency, Some(max_concurrency.get()), None)
            }
            crate::plan::StepKind::RequestRate { request_rate } => {
                (StepKind::RequestRate, None, Some(request_rate))
            }
        };
        SummaryEntry {
            name: trial.name.clone(),
            plan_index: None,
            test_name: trial.test_name.clone(),
            suffix: trial.entry.suffix.clone(),
            step: trial.step.label.clone(),
            kind: Some(kind),
            max_concurrency,
            request_rate,
            num_prompts: Some(trial.step.num_prompts.get()),
            marks: trial.marks.clone(),
            outcome,
            interrupted: false,
            ignored_reason: None,
            failures: Vec::new(),
            failure_class: None,
            failure_detail: None,
            breaches: Vec::new(),
            warnings: Vec::new(),
            thresholds: trial.thresholds.items.clone(),
            thresholds_skipped: trial.thresholds.skipped.clone(),
            thresholds_note: trial.thresholds.note.clone(),
            needs_data: Some(
                outcome != Outcome::Ignored
                    && trial.thresholds.items.is_empty()
                    && trial.entry.dialect != Dialect::Contract,
            ),
            metrics: Map::new(),
            repeats: None,
            result: None,
            bench: None,
            result_source: None,
            server: None,
            server_started: None,
            seconds: Some(0.0),
        }
    }

    /// An ignored trial.
    pub fn ignored(trial: &Trial, reason: &str) -> Self {
        let mut e = SummaryEntry::new(trial, Outcome::Ignored);
        e.ignored_reason = Some(reason.to_string());
        e.needs_data = Some(false);
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
        let section = doc.get("repeats").cloned();
        if let Some(mut r) = section.and_then(|v| serde_json::from_value::<RepeatsSummary>(v).ok())
        {
            r.stats.retain(|k, _| self.metrics.contains_key(k));
            self.repeats = Some(r);
        }
    }

    /// A numeric metric (`None` when absent, `null` or not a number).
    pub fn metric(&self, key: &str) -> Option<f64> {
        self.metrics.get(key).and_then(Value::as_f64)
    }

    /// Every repeat's value of `key` when the step ran as repeats (finite values only;
    /// empty for a single run).
    pub fn repeat_values(&self, key: &str) -> Vec<f64> {
        let values = self
            .repeats
            .as_ref()
            .and_then(|r| r.stats.get(key)?.get("values")?.as_array());
        values
            .into_iter()
            .flatten()
            .filter_map(Value::as_f64)
            .filter(|v| v.is_finite())
            .collect()
    }

    /// The threshold on `metric`, if any.
    pub fn threshold(&self, metric: &str) -> Option<&Threshold> {
        self.thresholds.iter().find(|t| t.metric == metric)
    }

    /// The breach on `metric`, if any.
    pub fn breach(&self, metric: &str) -> Option<&Breach> {
        self.breaches.iter().find(|b| b.metric == metric)
    }

    /// Why an ignored trial did not run: `ignored_reason`, else its first failure or
    /// warning.
    pub fn ignored_text(&self) -> String {
        self.ignored_reason
            .clone()
            .or_else(|| self.failures.first().cloned())
            .or_else(|| self.warnings.first().cloned())
            .unwrap_or_else(|| "no reason recorded".into())
    }

    /// It ran without any threshold for the run's hardware ("needs data"): judged on
    /// completion only. Run folders older than the flag: derived from the outcome and
    /// the thresholds.
    pub fn needs_data(&self) -> bool {
        self.needs_data
            .unwrap_or_else(|| self.outcome != Outcome::Ignored && self.thresholds.is_empty())
    }

    /// Whether the result is the template fallback (the bench left nothing).
    pub fn is_fallback(&self) -> bool {
        self.result_source.as_deref() == Some("template")
    }

    /// The sweep coordinate of this step: concurrency for concurrency steps, request
    /// rate for rate steps.
    pub fn x(&self) -> Option<f64> {
        match self.kind? {
            StepKind::Concurrency => self.max_concurrency.map(f64::from),
            StepKind::RequestRate => self.request_rate.filter(|r| r.is_finite()),
        }
    }

    /// The direction of `metric`: the table in dfx-core, else the one this run recorded
    /// with the threshold.
    pub fn direction(&self, metric: &str) -> Option<Direction> {
        direction_of(metric).or_else(|| self.threshold(metric).map(|t| t.direction))
    }
}

/// The whole of `summary.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// The run folder's name.
    #[serde(default)]
    pub run_id: Option<String>,
    /// The hardware label of the run.
    #[serde(default)]
    pub hardware: Option<String>,
    /// `--assert-baseline` was given.
    #[serde(default)]
    pub assert_baseline: bool,
    /// Trials that passed.
    #[serde(default)]
    pub passed: usize,
    /// Trials that failed.
    #[serde(default)]
    pub failed: usize,
    /// Failed trials per failure class (`{"breach": 2, "server_start": 1}`), classes in
    /// precedence order; empty in run folders older than the key.
    #[serde(default)]
    #[schemars(with = "std::collections::BTreeMap<String, usize>")]
    pub failure_classes: Map<String, Value>,
    /// Trials that did not run.
    #[serde(default)]
    pub ignored: usize,
    /// Trials that ran without any threshold for the hardware ("needs data").
    #[serde(default)]
    pub needs_data: usize,
    /// Trials left out by the name filter / `--skip` / `--ignored`.
    #[serde(default)]
    pub filtered_out: usize,
    /// Servers started during the run.
    #[serde(default)]
    pub server_starts: usize,
    /// Run-level remarks (a server found dead between trials, stop errors).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Set when the run was interrupted (SIGINT / SIGTERM) before its last trial.
    #[serde(default)]
    pub interrupted: Option<Interruption>,
    /// The trials, in plan order.
    pub trials: Vec<SummaryEntry>,
}

/// Failed trials per class, in [`FailureClass::ALL`]'s order (classes with none left
/// out).
pub fn class_counts(trials: &[SummaryEntry]) -> Map<String, Value> {
    let failed = || trials.iter().filter(|t| t.outcome == Outcome::Failed);
    FailureClass::ALL
        .into_iter()
        .filter_map(|c| {
            let n = failed().filter(|t| t.failure_class == Some(c)).count();
            (n > 0).then(|| (c.as_str().to_string(), Value::from(n)))
        })
        .collect()
}

/// Trial names a [`failed_by_class`] group shows before "and N more".
const NAMES_PER_CLASS: usize = 3;

/// `3 failed: 2 breach (voice::c16, voice::c64), 1 server_start (clone::c1)`: the failed
/// trials grouped by class (most causal first), each named by entry and step; `None` when
/// none failed. Failed trials without a class (older run folders) count as `unclassified`.
pub fn failed_by_class(trials: &[SummaryEntry]) -> Option<String> {
    let failed: Vec<&SummaryEntry> = trials
        .iter()
        .filter(|t| t.outcome == Outcome::Failed)
        .collect();
    if failed.is_empty() {
        return None;
    }
    let classes = FailureClass::ALL.into_iter().map(Some).chain([None]);
    let groups: Vec<String> = classes
        .filter_map(|c| {
            let names: Vec<String> = failed
                .iter()
                .filter(|t| t.failure_class == c)
                .map(|t| short_name(t))
                .collect();
            if names.is_empty() {
                return None;
            }
            let mut shown = names[..names.len().min(NAMES_PER_CLASS)].join(", ");
            if names.len() > NAMES_PER_CLASS {
                shown.push_str(&format!(" and {} more", names.len() - NAMES_PER_CLASS));
            }
            let label = c.map_or("unclassified", FailureClass::as_str);
            Some(format!("{} {label} ({shown})", names.len()))
        })
        .collect();
    Some(format!("{} failed: {}", failed.len(), groups.join(", ")))
}

/// `suffix::step` (the test name is the file's, usually the same for the whole run).
fn short_name(t: &SummaryEntry) -> String {
    if t.suffix.is_empty() || t.step.is_empty() {
        return t.name.clone();
    }
    format!("{}::{}", t.suffix, t.step)
}

/// How far an interrupted run got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interruption {
    /// The trial that was running (`None`: the signal came between trials).
    pub trial: Option<String>,
    /// How long that trial had run, in seconds.
    pub trial_seconds: Option<f64>,
    /// Selected trials that never started, in plan order.
    #[serde(default)]
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
            run_id: Some(run_id.into()),
            hardware: Some(hardware.into()),
            assert_baseline,
            passed: count(Outcome::Passed),
            failed: count(Outcome::Failed),
            failure_classes: class_counts(&trials),
            ignored: count(Outcome::Ignored),
            needs_data: trials.iter().filter(|t| t.needs_data()).count(),
            filtered_out,
            server_starts,
            notes,
            interrupted: None,
            trials,
        }
    }
}
