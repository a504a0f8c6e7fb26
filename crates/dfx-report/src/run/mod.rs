//! A run folder as the harness writes it (`<results-dir>/<run-id>/`), read into typed
//! structs: `run.json` ([`RunInfo`]) and `summary.json` ([`TrialSummary`] per trial).

mod load;
mod serde_helpers;

pub use load::load_run;

use std::path::PathBuf;

use dfx_core::baseline::{Direction, direction_of};
use serde::Deserialize;
use serde_json::{Map, Value};

/// One run folder, loaded.
#[derive(Debug, Clone)]
pub struct Run {
    /// The folder itself.
    pub dir: PathBuf,
    /// `run.json` (defaults when the file is missing).
    pub info: RunInfo,
    /// The run id (`summary.json`'s `run_id`, else the folder name).
    pub run_id: String,
    /// The hardware label the run was made on.
    pub hardware: String,
    /// Trials in plan order.
    pub trials: Vec<TrialSummary>,
    /// Notes about how the folder was read (e.g. summary reconstructed from trials/).
    pub notes: Vec<String>,
}

impl Run {
    /// The trial with this name.
    pub fn trial(&self, name: &str) -> Option<&TrialSummary> {
        self.trials.iter().find(|t| t.name == name)
    }

    /// `SIM (speed 10)` for simulated runs with a speed factor, else the hardware label:
    /// two runs are only comparable when this is equal.
    pub fn hardware_identity(&self) -> String {
        match self.info.sim_speed {
            Some(s) => format!("{} (sim speed {})", self.hardware, crate::fmt::num(s)),
            None => self.hardware.clone(),
        }
    }
}

/// `run.json`: what ran, where and when.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunInfo {
    pub dfx_perf_version: Option<String>,
    pub git_sha: Option<String>,
    pub hardware: Option<String>,
    /// Simulator speed factor, when the simulator was the server.
    pub sim_speed: Option<f64>,
    /// The suite flags the run was started with.
    pub flags: Value,
    /// The perf-config files of the run: paths, or objects with `path` (and optionally a
    /// content hash such as `sha256`).
    pub config_files: Vec<Value>,
    pub started: Option<String>,
    pub finished: Option<String>,
    pub hostname: Option<String>,
    /// The load generator (`native`, `vllm`).
    pub bench_tool: Option<String>,
}

impl RunInfo {
    /// One comparable identity per config file: its file name, plus its content hash
    /// when `run.json` records one.
    pub fn config_identities(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .config_files
            .iter()
            .map(|v| match v {
                Value::String(p) => file_name(p),
                Value::Object(o) => {
                    let path = o.get("path").and_then(Value::as_str).unwrap_or("?");
                    let hash = ["sha256", "hash", "digest"]
                        .iter()
                        .find_map(|k| o.get(*k).and_then(Value::as_str));
                    match hash {
                        Some(h) => format!("{} ({})", file_name(path), short(h)),
                        None => file_name(path),
                    }
                }
                other => other.to_string(),
            })
            .collect();
        out.sort();
        out
    }
}

fn file_name(p: &str) -> String {
    std::path::Path::new(p)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_string())
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Concurrency,
    RequestRate,
}

/// One baseline breach as the verdict recorded it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Breach {
    pub metric: String,
    pub value: f64,
    pub threshold: f64,
    /// Relative gap toward "worse" (+0.178 = 17.8 % worse than the threshold).
    pub gap: f64,
}

/// One threshold a trial was judged against.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ThresholdEntry {
    pub metric: String,
    pub value: f64,
    #[serde(deserialize_with = "serde_helpers::direction")]
    pub direction: Direction,
    /// `inline` / `store` (as recorded: a string or `{"from": …}`).
    #[serde(default)]
    pub source: Value,
}

impl ThresholdEntry {
    /// `inline`, `store` or whatever the run recorded.
    pub fn source_label(&self) -> String {
        match &self.source {
            Value::String(s) => s.clone(),
            Value::Object(o) => o
                .get("from")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string(),
            Value::Null => "?".into(),
            other => other.to_string(),
        }
    }

    /// Whether the threshold came from `baselines/<hw>.json`.
    pub fn from_store(&self) -> bool {
        self.source_label() == "store"
    }
}

/// One trial of `summary.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct TrialSummary {
    /// `<test_name>::<suffix>::<step>`.
    pub name: String,
    #[serde(default)]
    pub test_name: String,
    #[serde(default)]
    pub suffix: String,
    #[serde(default)]
    pub step: String,
    pub kind: Option<StepKind>,
    #[serde(default, deserialize_with = "serde_helpers::opt_number")]
    pub max_concurrency: Option<f64>,
    /// `None` when absent; `f64::INFINITY` for `"inf"`.
    #[serde(default, deserialize_with = "serde_helpers::opt_number")]
    pub request_rate: Option<f64>,
    #[serde(default, deserialize_with = "serde_helpers::opt_number")]
    pub num_prompts: Option<f64>,
    pub outcome: Outcome,
    /// Why an ignored trial did not run.
    #[serde(default)]
    pub ignored_reason: Option<String>,
    #[serde(default)]
    pub failures: Vec<String>,
    #[serde(default)]
    pub breaches: Vec<Breach>,
    #[serde(default)]
    pub warnings: Vec<String>,
    #[serde(default)]
    pub thresholds: Vec<ThresholdEntry>,
    #[serde(default)]
    pub metrics: Map<String, Value>,
    /// A step run as repeats: `count` and per-metric statistics (`stats.<metric>.values`
    /// holds every repeat's value). Absent for a single run.
    #[serde(default)]
    pub repeats: Option<Value>,
    /// The result file, relative to the run folder (`result` in summary.json).
    #[serde(default, alias = "result")]
    pub result_path: Option<String>,
    #[serde(default)]
    pub bench: Option<String>,
    #[serde(default)]
    pub result_source: Option<String>,
    /// Wall time of the trial in seconds.
    #[serde(default)]
    pub seconds: Option<f64>,
}

impl TrialSummary {
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
            .and_then(|r| r.get("stats")?.get(key)?.get("values")?.as_array().cloned());
        values
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_f64)
            .filter(|v| v.is_finite())
            .collect()
    }

    /// The threshold on `metric`, if any.
    pub fn threshold(&self, metric: &str) -> Option<&ThresholdEntry> {
        self.thresholds.iter().find(|t| t.metric == metric)
    }

    /// The breach on `metric`, if any.
    pub fn breach(&self, metric: &str) -> Option<&Breach> {
        self.breaches.iter().find(|b| b.metric == metric)
    }

    /// `test_name::suffix`: the benchmark entry this trial is a step of.
    pub fn entry_key(&self) -> String {
        format!("{}::{}", self.test_name, self.suffix)
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
    /// completion only. Derived, so runs written before the flag existed say it too.
    pub fn needs_data(&self) -> bool {
        self.outcome != Outcome::Ignored && self.thresholds.is_empty()
    }

    /// Whether the result is the template fallback (the bench left nothing).
    pub fn is_fallback(&self) -> bool {
        self.result_source.as_deref() == Some("template")
    }

    /// The sweep coordinate of this step: concurrency for concurrency steps, request
    /// rate for rate steps.
    pub fn x(&self) -> Option<f64> {
        match self.kind? {
            StepKind::Concurrency => self.max_concurrency,
            StepKind::RequestRate => self.request_rate.filter(|r| r.is_finite()),
        }
    }

    /// Why this trial's numbers are not a clean measurement (fallback result, failed
    /// requests, incomplete run, failure other than a baseline breach), or `None`.
    pub fn unclean_reason(&self) -> Option<String> {
        if self.outcome == Outcome::Ignored {
            return Some("ignored (not run)".into());
        }
        if self.is_fallback() {
            return Some(
                "fallback result (result_source template: the bench left no result)".into(),
            );
        }
        let failed = self.metric("failed").unwrap_or(0.0);
        if failed > 0.0 {
            return Some(format!("{} request(s) failed", crate::fmt::num(failed)));
        }
        if let (Some(done), Some(want)) = (self.metric("completed"), self.num_prompts)
            && done < want
        {
            return Some(format!(
                "only {} of {} requests completed",
                crate::fmt::num(done),
                crate::fmt::num(want)
            ));
        }
        if self.outcome == Outcome::Failed && self.breaches.is_empty() {
            let why = self.failures.first().cloned().unwrap_or_default();
            return Some(format!("failed: {why}"));
        }
        None
    }

    /// The direction of `metric`: the table in dfx-core, else the one this run recorded
    /// with the threshold.
    pub fn direction(&self, metric: &str) -> Option<Direction> {
        direction_of(metric).or_else(|| self.threshold(metric).map(|t| t.direction))
    }
}
