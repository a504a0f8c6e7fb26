//! Rolling baselines (`dfx-perf recalibrate --from-history`): thresholds proposed from
//! the last N good runs of each trial in the history, with every run that was used or
//! rejected and why, as a [`Recalibration`] that `dfx-perf recalibrate` renders and
//! writes like one made from run folders.
//!
//! A run is *good* for a trial when the trial passed with clean numbers in a run that
//! closed normally and in which not every trial failed. Among the good runs' values of a
//! metric, outliers are rejected with the modified z-score of Iglewicz and Hoaglin
//! (|0.6745 · (x − median) / MAD| > 3.5), so one bad night does not move a threshold.
//! Fewer good values than the minimum leave the threshold alone ("needs data").

use std::collections::BTreeMap;

use dfx_core::baseline::{Direction, direction_of};
use dfx_report::recalibrate::{
    Change, NotCalibrated, OldThreshold, RecalibrateOptions, Recalibration, change_from_level,
    read_store, store_file,
};

use crate::HistoryError;
use crate::check::DEFAULT_METRICS;
use crate::detect::series::median;
use crate::model::{RunRecord, TrialOutcome, TrialRecord};

/// How a threshold is derived from the good runs' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The median of the values, plus the margin.
    Median,
    /// The worst value (highest for lower-is-better metrics, lowest otherwise), plus the
    /// margin: a threshold every good run would have met.
    Worst,
}

/// A `--policy` spelling [`Policy::parse`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: accepted policies are median, worst")]
pub struct UnknownPolicy(pub String);

impl Policy {
    /// `median` / `worst`.
    pub fn parse(s: &str) -> Result<Self, UnknownPolicy> {
        match s {
            "median" => Ok(Policy::Median),
            "worst" => Ok(Policy::Worst),
            _ => Err(UnknownPolicy(s.to_string())),
        }
    }

    /// The spelling [`Policy::parse`] accepts.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Median => "median",
            Policy::Worst => "worst",
        }
    }
}

/// Options of a rolling recalibration.
#[derive(Debug, Clone, PartialEq)]
pub struct RollingOptions {
    /// The recalibration policy shared with `recalibrate RUN…` (margin, tolerance, …).
    pub base: RecalibrateOptions,
    /// How many of the latest good runs are used per trial.
    pub window: usize,
    /// Fewest good values a threshold is set from.
    pub min_runs: usize,
    /// Median or worst of the values.
    pub policy: Policy,
    /// Modified z-score beyond which a value is an outlier.
    pub outlier_z: f64,
}

impl Default for RollingOptions {
    fn default() -> Self {
        RollingOptions {
            base: RecalibrateOptions::default(),
            window: 10,
            min_runs: 5,
            policy: Policy::Median,
            outlier_z: 3.5,
        }
    }
}

/// One run considered for a trial (and metric, for outliers), and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunUse {
    /// Trial name.
    pub trial: String,
    /// Metric, for per-metric rejections (outliers, not measured); `None` for the trial.
    pub metric: Option<String>,
    /// The run.
    pub run_id: String,
    /// `None` when used, else why not.
    pub rejected: Option<String>,
}

/// A rolling recalibration: the proposal plus the run-by-run account.
#[derive(Debug, Clone, PartialEq)]
pub struct Rolling {
    /// Thresholds and decisions, as `recalibrate RUN…` computes them.
    pub recalibration: Recalibration,
    /// Every run considered, in the order considered (newest first per trial).
    pub uses: Vec<RunUse>,
    /// Trials that had no threshold in the latest run ("needs data").
    pub needs_data: Vec<String>,
}

/// Why a trial's numbers in `run` cannot feed a baseline, or `None` when they can.
fn rejection(run: &RunRecord, t: &TrialRecord) -> Option<String> {
    if run.interrupted || t.interrupted {
        return Some("interrupted".into());
    }
    if run.all_failed() {
        return Some("every trial of the run failed".into());
    }
    if t.outcome == TrialOutcome::Failed {
        let why = t.failures.first().map_or("failed", String::as_str);
        return Some(format!("failed: {why}"));
    }
    t.unclean.as_ref().map(|why| format!("not clean: {why}"))
}

/// Proposes thresholds for `hardware` (a label, the store's file name) from `runs`
/// (one hardware identity, oldest first).
pub fn propose(
    hardware: &str,
    runs: &[RunRecord],
    opts: &RollingOptions,
) -> Result<Rolling, HistoryError> {
    if opts.window == 0 || opts.min_runs == 0 || opts.min_runs > opts.window {
        return Err(HistoryError::Invalid(format!(
            "--window {} / --min-runs {}: both must be at least 1 and the minimum no larger than the window",
            opts.window, opts.min_runs
        )));
    }
    let store_path = store_file(&opts.base.baselines_dir, hardware);
    let store = read_store(&store_path).map_err(|e| HistoryError::Invalid(e.to_string()))?;
    let mut out = Rolling {
        recalibration: Recalibration {
            hardware: hardware.to_string(),
            store: store_path,
            runs: Vec::new(),
            changes: Vec::new(),
            notes: Vec::new(),
        },
        uses: Vec::new(),
        needs_data: Vec::new(),
    };
    for name in trial_names(runs) {
        propose_trial(&name, runs, &store, opts, &mut out);
    }
    Ok(out)
}

/// Trial names of the latest run first (plan order), then those only older runs had.
fn trial_names(runs: &[RunRecord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in runs.iter().rev() {
        for t in r
            .trials
            .iter()
            .filter(|t| t.outcome != TrialOutcome::Ignored)
        {
            if !out.contains(&t.name) {
                out.push(t.name.clone());
            }
        }
    }
    out
}

fn propose_trial(
    name: &str,
    runs: &[RunRecord],
    store: &BTreeMap<String, BTreeMap<String, f64>>,
    opts: &RollingOptions,
    out: &mut Rolling,
) {
    let mut good: Vec<(&RunRecord, &TrialRecord)> = Vec::new();
    for run in runs.iter().rev() {
        let Some(t) = run
            .trial(name)
            .filter(|t| t.outcome != TrialOutcome::Ignored)
        else {
            continue;
        };
        if good.len() == opts.window {
            break;
        }
        let rejected = rejection(run, t);
        if rejected.is_none() {
            good.push((run, t));
            if !out.recalibration.runs.contains(&run.run_id) {
                out.recalibration.runs.push(run.run_id.clone());
            }
        }
        out.uses.push(RunUse {
            trial: name.into(),
            metric: None,
            run_id: run.run_id.clone(),
            rejected,
        });
    }
    let latest = runs.iter().rev().find_map(|r| r.trial(name));
    if latest.is_some_and(|t| t.needs_data) {
        out.needs_data.push(name.to_string());
    }
    for metric in metrics_for(&good, store.get(name), latest, &opts.base.metrics) {
        match change_for(name, &metric, &good, store, opts, &mut out.uses) {
            Ok(c) => out.recalibration.changes.push(c),
            Err(note) => out.recalibration.notes.push(note.to_string()),
        }
    }
}

/// Metrics with a threshold (latest run, good runs, store), the requested ones, and for
/// a trial without any threshold the defaults it measured.
fn metrics_for(
    good: &[(&RunRecord, &TrialRecord)],
    stored: Option<&BTreeMap<String, f64>>,
    latest: Option<&TrialRecord>,
    extra: &[String],
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |m: &str| {
        if !out.iter().any(|x| x == m) {
            out.push(m.to_string());
        }
    };
    latest
        .into_iter()
        .chain(good.iter().map(|(_, t)| *t))
        .flat_map(|t| &t.thresholds)
        .for_each(|th| add(&th.metric));
    stored
        .into_iter()
        .flat_map(|m| m.keys())
        .for_each(|m| add(m));
    extra.iter().for_each(|m| add(m));
    if out.is_empty() {
        let measured = |m: &str| good.iter().any(|(_, t)| t.metrics.contains_key(m));
        out = DEFAULT_METRICS
            .iter()
            .filter(|m| measured(m))
            .map(|m| m.to_string())
            .collect();
    }
    out
}

/// Indexes of values whose modified z-score exceeds `z`. Needs five values (with fewer,
/// the MAD is one of the deviations and flags ordinary jitter); the MAD is floored at 1 %
/// of the median so that a series of near-equal values does not call a 2 % step an
/// outlier.
pub fn outliers(values: &[f64], z: f64) -> Vec<usize> {
    if values.len() < 5 {
        return Vec::new();
    }
    let m = median(values);
    let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    let mad = median(&deviations).max(0.01 * m.abs());
    if mad <= 0.0 {
        return Vec::new();
    }
    (0..values.len())
        .filter(|&i| (0.6745 * deviations[i] / mad) > z)
        .collect()
}

fn direction_for(metric: &str, good: &[(&RunRecord, &TrialRecord)]) -> Option<Direction> {
    direction_of(metric).or_else(|| {
        let th = good
            .iter()
            .flat_map(|(_, t)| &t.thresholds)
            .find(|th| th.metric == metric)?;
        match th.direction.as_str() {
            "higher_is_better" => Some(Direction::HigherIsBetter),
            "lower_is_better" => Some(Direction::LowerIsBetter),
            _ => None,
        }
    })
}

fn change_for(
    name: &str,
    metric: &str,
    good: &[(&RunRecord, &TrialRecord)],
    store: &BTreeMap<String, BTreeMap<String, f64>>,
    opts: &RollingOptions,
    uses: &mut Vec<RunUse>,
) -> Result<Change, NotCalibrated> {
    let direction = direction_for(metric, good).ok_or_else(|| NotCalibrated::UnknownDirection {
        trial: name.into(),
        metric: metric.into(),
    })?;
    let mut reject = |run_id: &str, why: String| {
        uses.push(RunUse {
            trial: name.into(),
            metric: Some(metric.into()),
            run_id: run_id.into(),
            rejected: Some(why),
        })
    };
    let mut measured: Vec<(&str, f64)> = Vec::new();
    for (run, t) in good {
        match t.clean_metric(metric).filter(|v| v.is_finite()) {
            Some(v) => measured.push((&run.run_id, v)),
            None => reject(&run.run_id, "not measured".into()),
        }
    }
    let values: Vec<f64> = measured.iter().map(|(_, v)| *v).collect();
    let bad = outliers(&values, opts.outlier_z);
    let m = median(&values);
    for &i in &bad {
        let (run_id, v) = measured[i];
        reject(run_id, format!("outlier: {v} against a median of {m}"));
    }
    let kept: Vec<f64> = (0..values.len())
        .filter(|i| !bad.contains(i))
        .map(|i| values[i])
        .collect();
    if kept.len() < opts.min_runs {
        return Err(NotCalibrated::NeedsData {
            trial: name.into(),
            metric: metric.into(),
            kept: kept.len(),
            wanted: opts.min_runs,
        });
    }
    let level = match (opts.policy, direction) {
        (Policy::Median, _) => median(&kept),
        (Policy::Worst, Direction::LowerIsBetter) => kept.iter().copied().fold(f64::MIN, f64::max),
        (Policy::Worst, Direction::HigherIsBetter) => kept.iter().copied().fold(f64::MAX, f64::min),
    };
    let old = old_threshold(name, metric, good, store);
    change_from_level(name, metric, direction, kept, level, old, &opts.base)
}

/// The threshold in force before: the store's, else one a good run was judged against
/// that did not come from a store.
fn old_threshold(
    name: &str,
    metric: &str,
    good: &[(&RunRecord, &TrialRecord)],
    store: &BTreeMap<String, BTreeMap<String, f64>>,
) -> Option<OldThreshold> {
    store
        .get(name)
        .and_then(|s| s.get(metric))
        .map(|v| OldThreshold {
            value: *v,
            source: "store".into(),
        })
        .or_else(|| {
            good.iter()
                .flat_map(|(_, t)| &t.thresholds)
                .find(|th| th.metric == metric && th.source != "store")
                .map(|th| OldThreshold {
                    value: th.value,
                    source: th.source.clone(),
                })
        })
}

#[cfg(test)]
mod tests;
