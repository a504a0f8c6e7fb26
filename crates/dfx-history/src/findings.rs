//! `history check`'s findings grouped as a reader wants them: one per (run, trial), with
//! every metric that moved there, and the JSON document of `history check --format json`.

use serde::Serialize;

use crate::check::{CheckReport, FailedRun, Finding, Verdict};
use crate::detect::{Method, NoiseSource};
use crate::order::natural_cmp;

/// One metric of a [`TrialFinding`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricFinding {
    /// Result key.
    pub metric: String,
    /// `regression`, `suspected`, `improvement`, `explained`.
    pub verdict: &'static str,
    /// Why it is not a regression (`explained`), else `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// Median before, in the metric's unit.
    pub before: f64,
    /// Median after.
    pub after: f64,
    /// Relative change toward worse (+0.3 = 30 % worse).
    pub worse_by: f64,
    /// The noise (one standard deviation, in the metric's unit) it was judged against.
    pub noise: f64,
    /// Where that noise came from.
    pub noise_source: NoiseSource,
    /// The methods that found it.
    pub methods: Vec<Method>,
}

/// Every change of one trial at one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialFinding {
    /// Trial name.
    pub trial: String,
    /// The first run after the change.
    pub run_id: String,
    /// Its position among the checked runs (0-based).
    pub run_index: usize,
    /// The worst verdict of its metrics (regression, then suspected, …).
    pub verdict: &'static str,
    /// The metrics, worst verdict first, then by how much worse.
    pub metrics: Vec<MetricFinding>,
}

impl TrialFinding {
    /// The distinct noise sources of its metrics, in words (`; `-separated).
    pub fn noise_sources(&self) -> String {
        let mut seen: Vec<NoiseSource> = Vec::new();
        for m in &self.metrics {
            if !seen.contains(&m.noise_source) {
                seen.push(m.noise_source);
            }
        }
        seen.iter()
            .map(|s| s.describe())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn metric_finding(f: &Finding) -> MetricFinding {
    let c = &f.change;
    MetricFinding {
        metric: f.metric.clone(),
        verdict: f.verdict.as_str(),
        explanation: match &f.verdict {
            Verdict::ExplainedByAudioLength(why) => Some(why.clone()),
            _ => None,
        },
        before: c.before,
        after: c.after,
        worse_by: c.worse_by,
        noise: c.noise,
        noise_source: c.noise_source,
        methods: c.methods.clone(),
    }
}

/// The findings of `r` grouped by (run, trial): oldest run first, trials in natural step
/// order.
pub fn by_trial(r: &CheckReport) -> Vec<TrialFinding> {
    let mut sorted: Vec<&Finding> = r.findings.iter().collect();
    sorted.sort_by(|a, b| {
        a.run_index
            .cmp(&b.run_index)
            .then_with(|| natural_cmp(&a.trial, &b.trial))
            .then_with(|| a.verdict.rank().cmp(&b.verdict.rank()))
            .then_with(|| b.change.worse_by.total_cmp(&a.change.worse_by))
    });
    let mut out: Vec<TrialFinding> = Vec::new();
    for f in sorted {
        match out.last_mut() {
            Some(g) if g.run_index == f.run_index && g.trial == f.trial => {
                g.metrics.push(metric_finding(f));
            }
            _ => out.push(TrialFinding {
                trial: f.trial.clone(),
                run_id: f.run_id.clone(),
                run_index: f.run_index,
                verdict: f.verdict.as_str(),
                metrics: vec![metric_finding(f)],
            }),
        }
    }
    out
}

/// How many (run, trial) findings of `r` are regressions, and how many suspected: what
/// the summaries count (one cause moving five metrics is one regression).
pub fn counts(r: &CheckReport) -> (usize, usize) {
    let grouped = by_trial(r);
    let count = |v: &str| grouped.iter().filter(|f| f.verdict == v).count();
    (count("regression"), count("suspected"))
}

/// One hardware identity in `history check --format json`.
#[derive(Debug, Clone, Serialize)]
pub struct CheckJson {
    /// The hardware identity.
    pub hardware: String,
    /// The runs checked, oldest first.
    pub runs: Vec<String>,
    /// Runs with failed trials, with their classes.
    pub failed_runs: Vec<FailedRun>,
    /// Interrupted runs.
    pub interrupted_runs: Vec<String>,
    /// How many (run, trial) findings are regressions.
    pub regressions: usize,
    /// How many are suspected (the newest run only).
    pub suspected: usize,
    /// One per (run, trial).
    pub findings: Vec<TrialFinding>,
}

impl CheckJson {
    /// `history check --format json`: an array with one object per hardware identity.
    pub fn document(reports: &[CheckReport]) -> String {
        let doc: Vec<CheckJson> = reports.iter().map(CheckJson::new).collect();
        serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "[]".into())
    }

    /// The JSON view of `r`.
    pub fn new(r: &CheckReport) -> Self {
        let findings = by_trial(r);
        let count = |v: &str| findings.iter().filter(|f| f.verdict == v).count();
        CheckJson {
            hardware: r.hardware.clone(),
            runs: r.runs.clone(),
            failed_runs: r.failed_runs.clone(),
            interrupted_runs: r.interrupted_runs.clone(),
            regressions: count("regression"),
            suspected: count("suspected"),
            findings,
        }
    }
}
