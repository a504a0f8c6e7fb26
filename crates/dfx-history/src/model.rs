//! What the history stores per run: a fingerprint of where and with what it ran, and
//! every trial's outcome, metrics and thresholds. Built from a run folder by
//! [`crate::ingest`], validated there, and written as is by the stores.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How a stored trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialOutcome {
    /// Passed its checks.
    Passed,
    /// Failed (completion, breaches under `--assert-baseline`, a crash…).
    Failed,
    /// Could not run.
    Ignored,
}

impl TrialOutcome {
    /// The stored spelling: `passed`, `failed`, `ignored`.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialOutcome::Passed => "passed",
            TrialOutcome::Failed => "failed",
            TrialOutcome::Ignored => "ignored",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "passed" => Some(TrialOutcome::Passed),
            "failed" => Some(TrialOutcome::Failed),
            "ignored" => Some(TrialOutcome::Ignored),
            _ => None,
        }
    }
}

/// GPU facts from `nvidia-smi` when the run recorded them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    /// GPU 0's name as nvidia-smi reports it.
    pub name: Option<String>,
    /// Driver version.
    pub driver: Option<String>,
    /// Memory in MiB.
    pub memory_mib: Option<f64>,
}

/// Where and with what a run was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// `dfx_perf_version` of run.json.
    pub dfx_perf_version: Option<String>,
    /// The repository's commit.
    pub git_sha: Option<String>,
    /// The hardware label.
    pub hardware: String,
    /// Simulator speed factor, for simulated runs.
    pub sim_speed: Option<f64>,
    /// The load generator.
    pub bench_tool: Option<String>,
    /// The machine's host name.
    pub hostname: Option<String>,
    /// GPU facts, when the run recorded them.
    pub gpu: Option<Gpu>,
    /// Versions the server environment told (`vllm_omni`, `vllm`, `torch`, …).
    pub server_versions: BTreeMap<String, String>,
    /// sha256 of every perf-config file used, by path.
    pub config_hashes: BTreeMap<String, String>,
    /// sha256 of every deploy file the servers were started with, by file name.
    pub deploy_hashes: BTreeMap<String, String>,
    /// The suite flags as run.json recorded them.
    pub flags: serde_json::Value,
}

/// One threshold a trial was judged against, and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// Result key.
    pub metric: String,
    /// The bound.
    pub value: f64,
    /// `higher_is_better` / `lower_is_better`.
    pub direction: String,
    /// `inline`, `store`, … as the run recorded it.
    pub source: String,
}

/// One trial of a stored run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// `<test_name>::<suffix>::<step>`.
    pub name: String,
    /// Position in the run's plan order.
    pub seq: i64,
    /// How it ended.
    pub outcome: TrialOutcome,
    /// The run was interrupted while this trial ran.
    pub interrupted: bool,
    /// Why its numbers are not a clean measurement (failed requests, fallback, …).
    pub unclean: Option<String>,
    /// Its failures, as the verdict recorded them.
    pub failures: Vec<String>,
    /// The failure class `verdict.json` recorded for a failed trial (`breach`,
    /// `server_start`, …); `None` when it passed or the run predates classes. Left out of
    /// the content hash when `None`, so older runs hash as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_class: Option<String>,
    /// Every finite numeric metric of its summary entry and result file.
    pub metrics: BTreeMap<String, f64>,
    /// A step run as repeats (`--repeats`): every repeat's value of each metric the
    /// summary lists, in repeat order; their spread is the run's own noise. Empty for a
    /// single run (and then left out of the content hash).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub repeats: BTreeMap<String, Vec<f64>>,
    /// The thresholds in force.
    pub thresholds: Vec<Threshold>,
    /// It ran without any threshold for its hardware ("needs data").
    pub needs_data: bool,
}

impl TrialRecord {
    /// It failed on its thresholds only: clean numbers, class `breach` or
    /// `breach_within_noise`.
    pub(crate) fn breached_only(&self) -> bool {
        self.unclean.is_none()
            && matches!(
                self.failure_class.as_deref(),
                Some("breach" | "breach_within_noise")
            )
    }

    /// The value of `metric` when the measurement is clean.
    pub(crate) fn clean_metric(&self, metric: &str) -> Option<f64> {
        if self.unclean.is_some() {
            return None;
        }
        self.metrics.get(metric).copied()
    }
}

/// One run as the history stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run id (folder name), unique in a history.
    pub run_id: String,
    /// The hardware label, plus ` (sim speed K)` for sped-up simulated runs: runs are
    /// only compared within one identity.
    pub hardware_identity: String,
    /// Start time as run.json recorded it.
    pub started: Option<String>,
    /// Start time in UTC (`%Y-%m-%dT%H:%M:%S%.6fZ`), else the run id: the sort key.
    pub sort_key: String,
    /// Finish time, `None` when the run never closed.
    pub finished: Option<String>,
    /// Closed by a signal.
    pub interrupted: bool,
    /// Where and with what it ran.
    pub fingerprint: Fingerprint,
    /// Trials in plan order.
    pub trials: Vec<TrialRecord>,
}

impl RunRecord {
    /// sha256 (hex) of the record's canonical JSON: equal runs hash equal, so adding a
    /// run twice stores it once.
    pub fn content_hash(&self) -> String {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        dfx_core::artefact::manifest::sha256_hex(&bytes)
    }

    /// The trial with this name.
    pub fn trial(&self, name: &str) -> Option<&TrialRecord> {
        self.trials.iter().find(|t| t.name == name)
    }

    /// Every trial that ran failed without a measurement (a broken run, not a slowdown):
    /// a trial that failed only on its thresholds (`breach`, `breach_within_noise`, clean
    /// numbers) measured a slowdown, which must stay a value.
    pub(crate) fn all_failed(&self) -> bool {
        let ran: Vec<&TrialRecord> = self
            .trials
            .iter()
            .filter(|t| t.outcome != TrialOutcome::Ignored)
            .collect();
        !ran.is_empty()
            && ran
                .iter()
                .all(|t| t.outcome == TrialOutcome::Failed && !t.breached_only())
    }
}
