//! `history check`: every trial × metric of the stored runs of one hardware identity
//! through the detector, with failed runs counted apart (by failure class) and e2el
//! changes explained by audio length when the RTF did not move.

use std::collections::{BTreeMap, BTreeSet};

use dfx_core::baseline::{Direction, direction_of};
use serde::Serialize;

use crate::detect::{self, Change, DetectOptions, Gap, Point};
use crate::model::{RunRecord, TrialOutcome, TrialRecord};

/// Metrics checked in every trial besides those with a threshold.
pub(crate) const DEFAULT_METRICS: &[&str] = dfx_core::metrics::HISTORY_KEYS;

/// What a change is.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Worse beyond the noise: a regression.
    Regression,
    /// The newest run alone is far outside the noise (the jump rule): a regression if the
    /// next run confirms it.
    Suspected,
    /// Better beyond the noise.
    Improvement,
    /// An e2el change the audio length explains (the RTF did not move): not a regression.
    ExplainedByAudioLength(String),
}

impl Verdict {
    /// The word printed and written: `regression`, `suspected`, `improvement`,
    /// `explained`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Suspected => "suspected",
            Verdict::Improvement => "improvement",
            Verdict::ExplainedByAudioLength(_) => "explained",
        }
    }

    /// Rank for "the worst of a trial's findings": regression first.
    pub(crate) fn rank(&self) -> u8 {
        match self {
            Verdict::Regression => 0,
            Verdict::Suspected => 1,
            Verdict::Improvement => 2,
            Verdict::ExplainedByAudioLength(_) => 3,
        }
    }
}

/// One change found in one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Trial name.
    pub trial: String,
    /// Result key.
    pub metric: String,
    /// The first run after the change.
    pub run_id: String,
    /// Its position among the checked runs (0-based).
    pub run_index: usize,
    /// What it is.
    pub verdict: Verdict,
    /// The numbers.
    pub change: Change,
}

/// A run in which at least one trial failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailedRun {
    /// Run id.
    pub run_id: String,
    /// Its position among the checked runs (0-based).
    pub run_index: usize,
    /// Every trial that ran failed: a broken run whose values are gaps, not a slowdown.
    pub all_failed: bool,
    /// Trials that ran (not ignored).
    pub ran: usize,
    /// The failed trials by failure class (`unclassified` for runs without classes), in
    /// natural step order.
    pub classes: BTreeMap<String, Vec<String>>,
    /// The first failure of its first failed trial.
    pub reason: String,
}

impl FailedRun {
    /// How many trials failed.
    pub fn failed(&self) -> usize {
        self.classes.values().map(Vec::len).sum()
    }

    /// `2 breach, 1 server_start`, most frequent class first.
    pub fn classes_text(&self) -> String {
        let mut by: Vec<(&String, usize)> =
            self.classes.iter().map(|(c, t)| (c, t.len())).collect();
        by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        by.iter()
            .map(|(c, n)| format!("{n} {c}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The class name of a failed trial without a recorded class.
pub const UNCLASSIFIED: &str = "unclassified";

/// The result of checking one hardware identity.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The hardware identity.
    pub hardware: String,
    /// The runs checked, oldest first.
    pub runs: Vec<String>,
    /// Runs in which a trial failed (those in which every trial failed are gaps, not
    /// slowdowns).
    pub failed_runs: Vec<FailedRun>,
    /// Interrupted runs (their unfinished trials are gaps).
    pub interrupted_runs: Vec<String>,
    /// Every change found.
    pub findings: Vec<Finding>,
}

impl CheckReport {
    /// The regressions among the findings.
    pub fn regressions(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.verdict == Verdict::Regression)
    }

    /// The suspected regressions among the findings (the newest run only).
    pub fn suspected(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.verdict == Verdict::Suspected)
    }
}

/// The point of `trial`'s `metric` in `run`.
fn point(run: &RunRecord, trial: Option<&TrialRecord>, metric: &str) -> Point {
    let value = if run.all_failed() {
        let why = trial
            .and_then(|t| t.failures.first().cloned())
            .unwrap_or_else(|| "every trial failed".into());
        Err(Gap::RunFailed(why))
    } else {
        match trial {
            None => Err(Gap::Missing),
            Some(t) if t.interrupted => Err(Gap::Interrupted),
            Some(t) if t.outcome == TrialOutcome::Ignored => Err(Gap::Missing),
            Some(t) => match (&t.unclean, t.metrics.get(metric)) {
                (Some(why), _) => Err(Gap::TrialFailed(why.clone())),
                (None, Some(v)) => Ok(*v),
                (None, None) => Err(Gap::Missing),
            },
        }
    };
    let fp = &run.fingerprint;
    let repeat_key = fp.git_sha.as_ref().map(|sha| {
        let configs: Vec<&String> = fp.config_hashes.values().collect();
        format!("{sha} {configs:?} {}", flags_key(&fp.flags))
    });
    let repeat_values = match (&value, trial) {
        (Ok(_), Some(t)) => t.repeats.get(metric).cloned().unwrap_or_default(),
        _ => Vec::new(),
    };
    Point {
        run_id: run.run_id.clone(),
        value,
        repeat_key,
        repeat_values,
    }
}

/// The run's flags without those that do not change what is measured (where results
/// and the history go).
fn flags_key(flags: &serde_json::Value) -> String {
    let Some(list) = flags.as_array() else {
        return flags.to_string();
    };
    list.iter()
        .filter(|f| {
            let name = f.get("flag").and_then(serde_json::Value::as_str);
            !matches!(name, Some("--results-dir" | "--history"))
        })
        .map(|f| format!("{}={}", f["flag"], f["value"]))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The points of `trial`'s `metric` over `runs`.
pub fn series(runs: &[RunRecord], trial: &str, metric: &str) -> Vec<Point> {
    runs.iter()
        .map(|r| point(r, r.trial(trial), metric))
        .collect()
}

/// The metrics to check for `trial`: the defaults, those with thresholds, `extra`.
pub(crate) fn metrics_of(runs: &[RunRecord], trial: &str, extra: &[String]) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = DEFAULT_METRICS.iter().map(|s| s.to_string()).collect();
    out.extend(extra.iter().cloned());
    for t in runs.iter().filter_map(|r| r.trial(trial)) {
        out.extend(t.thresholds.iter().map(|th| th.metric.clone()));
    }
    out
}

/// `median_e2el_ms` → (`median_audio_duration_s`, `median_audio_rtf`).
fn length_companions(metric: &str) -> Option<(String, String)> {
    let stat = metric.strip_suffix("_e2el_ms")?;
    Some((
        format!("{stat}_audio_duration_s"),
        format!("{stat}_audio_rtf"),
    ))
}

/// The explanation of an e2el change by audio length: the audio got longer (shorter) by
/// at least half the e2el change while the RTF stayed within `min_change`.
fn explain(
    runs: &[RunRecord],
    trial: &str,
    metric: &str,
    c: &Change,
    min_change: f64,
) -> Option<String> {
    let (len_key, rtf_key) = length_companions(metric)?;
    let level = |key: &str, range: std::ops::Range<usize>| -> Option<f64> {
        let xs: Vec<f64> = runs[range]
            .iter()
            .filter_map(|r| r.trial(trial)?.clean_metric(key))
            .collect();
        (!xs.is_empty()).then(|| detect::series::median(&xs))
    };
    let (lo, hi) = (0..c.index, c.index..runs.len());
    let len_ratio = level(&len_key, hi.clone())? / level(&len_key, lo.clone())?;
    let rtf_ratio = level(&rtf_key, hi)? / level(&rtf_key, lo)?;
    let e2el_ratio = c.after / c.before;
    let same_way = (len_ratio.ln() * e2el_ratio.ln()) > 0.0;
    let covers = len_ratio.ln().abs() >= 0.5 * e2el_ratio.ln().abs();
    if same_way && covers && (rtf_ratio - 1.0).abs() <= min_change {
        let pct = |r: f64| format!("{:+.1} %", (r - 1.0) * 100.0);
        let word = if len_ratio > 1.0 { "longer" } else { "shorter" };
        return Some(format!(
            "{word} audio, same RTF: audio length {}, {rtf_key} {}",
            pct(len_ratio),
            pct(rtf_ratio)
        ));
    }
    None
}

/// Checks `runs` (one hardware identity, oldest first).
pub fn check(
    hardware: &str,
    runs: &[RunRecord],
    opts: &DetectOptions,
    extra: &[String],
) -> CheckReport {
    let trials = trial_names(runs);
    let mut findings = Vec::new();
    for trial in trials {
        for metric in metrics_of(runs, trial, extra) {
            let Some(dir) = direction(runs, trial, &metric) else {
                continue;
            };
            for c in detect::detect(&series(runs, trial, &metric), dir, opts) {
                let verdict = match explain(runs, trial, &metric, &c, opts.min_change) {
                    Some(why) => Verdict::ExplainedByAudioLength(why),
                    None if c.is_regression() && c.suspected => Verdict::Suspected,
                    None if c.is_regression() => Verdict::Regression,
                    None => Verdict::Improvement,
                };
                findings.push(Finding {
                    trial: trial.to_string(),
                    metric: metric.clone(),
                    run_id: runs[c.index].run_id.clone(),
                    run_index: c.index,
                    verdict,
                    change: c,
                });
            }
        }
    }
    CheckReport {
        hardware: hardware.to_string(),
        runs: runs.iter().map(|r| r.run_id.clone()).collect(),
        failed_runs: failed_runs(runs),
        interrupted_runs: runs
            .iter()
            .filter(|r| r.interrupted)
            .map(|r| r.run_id.clone())
            .collect(),
        findings,
    }
}

/// The direction of `metric`: known by name, else from a stored threshold.
pub fn direction(runs: &[RunRecord], trial: &str, metric: &str) -> Option<Direction> {
    direction_of(metric).or_else(|| {
        let th = runs
            .iter()
            .filter_map(|r| r.trial(trial))
            .flat_map(|t| &t.thresholds)
            .find(|th| th.metric == metric)?;
        match th.direction.as_str() {
            "higher_is_better" => Some(Direction::HigherIsBetter),
            "lower_is_better" => Some(Direction::LowerIsBetter),
            _ => None,
        }
    })
}

fn failed_runs(runs: &[RunRecord]) -> Vec<FailedRun> {
    runs.iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let ran: Vec<&TrialRecord> = r
                .trials
                .iter()
                .filter(|t| t.outcome != TrialOutcome::Ignored)
                .collect();
            let failed: Vec<&&TrialRecord> = ran
                .iter()
                .filter(|t| t.outcome == TrialOutcome::Failed)
                .collect();
            let first = failed.first()?;
            let mut classes: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for t in &failed {
                let class = t.failure_class.as_deref().unwrap_or(UNCLASSIFIED);
                classes
                    .entry(class.into())
                    .or_default()
                    .push(t.name.clone());
            }
            for names in classes.values_mut() {
                names.sort_by(|a, b| crate::order::natural_cmp(a, b));
            }
            Some(FailedRun {
                run_id: r.run_id.clone(),
                run_index: i,
                all_failed: r.all_failed(),
                ran: ran.len(),
                classes,
                reason: first
                    .failures
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "failed".into()),
            })
        })
        .collect()
}

/// The trial names of `runs`, in natural step order (`c1`, `c8`, `c16`, `c64`).
pub fn trial_names(runs: &[RunRecord]) -> Vec<&str> {
    let set: BTreeSet<&str> = runs
        .iter()
        .flat_map(|r| r.trials.iter().map(|t| t.name.as_str()))
        .collect();
    let mut names: Vec<&str> = set.into_iter().collect();
    names.sort_by(|a, b| crate::order::natural_cmp(a, b));
    names
}
