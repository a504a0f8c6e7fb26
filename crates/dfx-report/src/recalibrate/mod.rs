//! Baseline recalibration: from one or more clean runs of one hardware, a new threshold
//! per trial and metric (median across runs, plus a margin by direction), a policy that
//! decides per threshold whether to change it, and `baselines/<hardware>.json`.
//!
//! Policy (as upstream maintainers used it): keep the old threshold unless the new one
//! is tighter by more than the tolerance; loosen only with `allow_loosen` (and then also
//! only beyond the tolerance). A threshold without an old value is added.

mod error;
mod policy;
mod render;
mod store;

pub use error::NotCalibrated;
pub use policy::{Decision, decide};
pub use render::{nothing_to_write, render_table};
pub use store::{read_store, store_file, write_store};

use std::collections::BTreeMap;
use std::path::PathBuf;

use dfx_core::baseline::{Direction, direction_of};
use serde::Serialize;

use crate::compare::stats::median;
use crate::run::{Outcome, Run, load_run};
use crate::{ReportError, fmt};

/// How to recalibrate.
#[derive(Debug, Clone, PartialEq)]
pub struct RecalibrateOptions {
    /// Folder of the `<hardware>.json` stores.
    pub baselines_dir: PathBuf,
    /// Margin applied to the median (0.25 = +25 % ceilings, −25 % floors).
    pub margin: f64,
    /// Per-metric margins overriding `margin`.
    pub metric_margins: BTreeMap<String, f64>,
    /// Metrics to calibrate besides those that already have thresholds.
    pub metrics: Vec<String>,
    /// Smallest relative change that replaces an old threshold (0.05 = 5 %).
    pub tolerance: f64,
    /// Allow thresholds to become looser.
    pub allow_loosen: bool,
    /// Leave trials that failed or fell back in some run unchanged instead of refusing.
    pub skip_failed: bool,
}

impl Default for RecalibrateOptions {
    fn default() -> Self {
        RecalibrateOptions {
            baselines_dir: PathBuf::from("baselines"),
            margin: 0.25,
            metric_margins: BTreeMap::new(),
            metrics: Vec::new(),
            tolerance: 0.05,
            allow_loosen: false,
            skip_failed: false,
        }
    }
}

/// [`OldThreshold::source`] of a threshold the runs read from a store entry that the
/// current store no longer has.
pub(crate) const RUNS_STORE: &str = "run's store";

/// The threshold in force before recalibration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OldThreshold {
    /// The threshold, in the metric's unit.
    pub value: f64,
    /// `store` (the current `baselines/<hw>.json`), or the source the run recorded:
    /// `inline`, or `run's store` (a store entry that the current store no longer has).
    pub source: String,
}

/// One trial and metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The trial's name.
    pub trial: String,
    /// The result key.
    pub metric: String,
    /// Which way is better: the threshold is a ceiling for lower-is-better metrics, a
    /// floor for higher-is-better ones.
    pub direction: Direction,
    /// Clean values, one per run that measured the trial.
    pub values: Vec<f64>,
    /// The level calibrated at: the median of `values` (the history's rolling baselines
    /// may pass another statistic of them).
    pub median: f64,
    /// The margin applied (`--margin-metric` for this metric, else `--margin`; 0.25 =
    /// 25 %).
    pub margin: f64,
    /// Median with the margin applied (rounded).
    pub proposed: f64,
    /// The threshold in force before, `None` for a metric that had none.
    pub old: Option<OldThreshold>,
    /// `(proposed − old) / old`.
    pub relative: Option<f64>,
    /// Keep, add, tighten or loosen, by the policy of [`decide`].
    pub decision: Decision,
    /// The threshold after the decision.
    pub result: f64,
}

impl Change {
    /// Whether the store gets this value.
    pub fn writes(&self) -> bool {
        self.decision.writes()
    }
}

/// A computed recalibration (nothing written yet).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recalibration {
    /// The hardware label of the runs (the store's file name comes from it).
    pub hardware: String,
    /// The store file, `<baselines_dir>/<hardware>.json`.
    pub store: PathBuf,
    /// The run ids calibrated from, in the order given.
    pub runs: Vec<String>,
    /// One per calibrated trial and metric, in trial order.
    pub changes: Vec<Change>,
    /// Trials or metrics left out, and why.
    pub notes: Vec<String>,
}

impl Recalibration {
    /// The thresholds after recalibration for every calibrated trial and metric (new or
    /// kept), as `trial → metric → value`.
    pub fn final_thresholds(&self) -> BTreeMap<String, BTreeMap<String, f64>> {
        let mut out: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        for c in &self.changes {
            out.entry(c.trial.clone())
                .or_default()
                .insert(c.metric.clone(), c.result);
        }
        out
    }
}

/// Loads the run folders and computes the recalibration.
pub fn plan_from_dirs(
    dirs: &[PathBuf],
    opts: &RecalibrateOptions,
) -> Result<Recalibration, ReportError> {
    let runs = dirs
        .iter()
        .map(|d| load_run(d))
        .collect::<Result<Vec<_>, _>>()?;
    plan_recalibration(&runs, opts)
}

/// Computes new thresholds and decisions. Refuses mixed hardware, and (unless
/// `skip_failed`) trials that failed or fell back in any run.
pub(crate) fn plan_recalibration(
    runs: &[Run],
    opts: &RecalibrateOptions,
) -> Result<Recalibration, ReportError> {
    validate_options(opts)?;
    let Some(first) = runs.first() else {
        return Err(ReportError::Invalid(
            "recalibrate needs at least one run folder".into(),
        ));
    };
    refuse_mixed_hardware(runs)?;
    refuse_mixed_bench(runs)?;
    let store_path = store_file(&opts.baselines_dir, &first.hardware);
    let store = read_store(&store_path)?;
    let mut notes = Vec::new();
    let unclean = unclean_trials(runs);
    if !unclean.is_empty() && !opts.skip_failed {
        let list: Vec<String> = unclean
            .iter()
            .map(|(r, t, why)| format!("{t} in run {r}: {why}"))
            .collect();
        return Err(ReportError::Refused(format!(
            "refusing to recalibrate from failed or fallback trials (their numbers are not \
             measurements of a healthy server):\n  - {}\nRerun them, or pass --skip-failed to \
             leave their thresholds unchanged",
            list.join("\n  - ")
        )));
    }
    let skipped: Vec<&str> = unclean.iter().map(|(_, t, _)| t.as_str()).collect();
    for (r, t, why) in &unclean {
        notes.push(format!(
            "{t}: left unchanged (--skip-failed): run {r}: {why}"
        ));
    }
    let mut changes = Vec::new();
    for trial in trial_names(runs) {
        if skipped.contains(&trial.as_str()) {
            continue;
        }
        let measured = runs.iter().filter(|r| r.trial(&trial).is_some()).count();
        if measured < runs.len() {
            notes.push(format!(
                "{trial}: measured in {measured} of {} runs",
                runs.len()
            ));
        }
        for metric in metrics_for(runs, &trial, store.get(&trial), &opts.metrics) {
            match change_for(runs, &trial, &metric, &store, opts) {
                Ok(c) => changes.push(c),
                Err(note) => notes.push(note.to_string()),
            }
        }
    }
    Ok(Recalibration {
        hardware: first.hardware.clone(),
        store: store_path,
        runs: runs.iter().map(|r| r.run_id.clone()).collect(),
        changes,
        notes,
    })
}

fn validate_options(opts: &RecalibrateOptions) -> Result<(), ReportError> {
    let known = |m: &str, flag: &str| -> Result<(), ReportError> {
        if direction_of(m).is_none() {
            return Err(ReportError::Invalid(format!(
                "{flag} {m}: unknown metric (accepted: {})",
                dfx_core::metrics::ACCEPTED_HINT
            )));
        }
        Ok(())
    };
    for m in &opts.metrics {
        known(m, "--metrics")?;
    }
    for m in opts.metric_margins.keys() {
        known(m, "--margin-metric")?;
    }
    for (m, v) in std::iter::once(("(default)", &opts.margin))
        .chain(opts.metric_margins.iter().map(|(k, v)| (k.as_str(), v)))
    {
        if !v.is_finite() || *v < 0.0 {
            return Err(ReportError::Invalid(format!(
                "margin for {m} must be 0 % or more"
            )));
        }
    }
    Ok(())
}

fn refuse_mixed_hardware(runs: &[Run]) -> Result<(), ReportError> {
    let first = runs[0].hardware_identity();
    if runs.iter().all(|r| r.hardware_identity() == first) {
        return Ok(());
    }
    let list: Vec<String> = runs
        .iter()
        .map(|r| format!("{} ({})", r.run_id, r.hardware_identity()))
        .collect();
    Err(ReportError::Refused(format!(
        "refusing to recalibrate from runs of different hardware: {}. Baselines are per \
         hardware label (baselines/<hardware>.json); recalibrate each hardware separately",
        list.join(", ")
    )))
}

fn refuse_mixed_bench(runs: &[Run]) -> Result<(), ReportError> {
    let first = &runs[0].info.bench_tool;
    if runs.iter().all(|r| &r.info.bench_tool == first) {
        return Ok(());
    }
    let list: Vec<String> = runs
        .iter()
        .map(|r| {
            format!(
                "{} ({})",
                r.run_id,
                r.info.bench_tool.as_deref().unwrap_or("?")
            )
        })
        .collect();
    Err(ReportError::Refused(format!(
        "refusing to recalibrate from runs of different bench tools: {}. The load \
         generators measure slightly differently; calibrate from runs of one tool",
        list.join(", ")
    )))
}

/// `(run id, trial, reason)` for every trial that is not a clean measurement.
fn unclean_trials(runs: &[Run]) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for r in runs {
        for t in r.trials.iter().filter(|t| t.outcome != Outcome::Ignored) {
            if let Some(why) = crate::run::unclean_reason(t) {
                out.push((r.run_id.clone(), t.name.clone(), why));
            }
        }
    }
    out
}

/// Trial names in first-appearance order (ignored trials left out).
fn trial_names(runs: &[Run]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in runs {
        for t in r.trials.iter().filter(|t| t.outcome != Outcome::Ignored) {
            if !out.contains(&t.name) {
                out.push(t.name.clone());
            }
        }
    }
    out
}

/// The metrics that have a threshold (in a run or the store) plus the extra ones.
fn metrics_for(
    runs: &[Run],
    trial: &str,
    stored: Option<&BTreeMap<String, f64>>,
    extra: &[String],
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |m: &str| {
        if !out.iter().any(|x| x == m) {
            out.push(m.to_string());
        }
    };
    for r in runs {
        if let Some(t) = r.trial(trial) {
            t.thresholds.iter().for_each(|th| add(&th.metric));
        }
    }
    stored
        .into_iter()
        .flat_map(|m| m.keys())
        .for_each(|m| add(m));
    extra.iter().for_each(|m| add(m));
    out
}

fn change_for(
    runs: &[Run],
    trial: &str,
    metric: &str,
    store: &BTreeMap<String, BTreeMap<String, f64>>,
    opts: &RecalibrateOptions,
) -> Result<Change, NotCalibrated> {
    let trials: Vec<_> = runs.iter().filter_map(|r| r.trial(trial)).collect();
    let direction = trials
        .iter()
        .find_map(|t| t.direction(metric))
        .ok_or_else(|| NotCalibrated::UnknownDirection {
            trial: trial.into(),
            metric: metric.into(),
        })?;
    let values: Vec<f64> = trials
        .iter()
        .filter_map(|t| t.metric(metric))
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() {
        return Err(NotCalibrated::NotMeasured {
            trial: trial.into(),
            metric: metric.into(),
        });
    }
    let m = median(&values);
    let old = store
        .get(trial)
        .and_then(|s| s.get(metric))
        .map(|v| OldThreshold {
            value: *v,
            source: "store".into(),
        })
        .or_else(|| {
            trials
                .iter()
                .find_map(|t| t.threshold(metric))
                .map(|th| OldThreshold {
                    value: th.value,
                    source: if matches!(
                        th.source,
                        dfx_core::baseline::ThresholdSource::Store { .. }
                    ) {
                        RUNS_STORE.into()
                    } else {
                        th.source.label().to_string()
                    },
                })
        });
    change_from_level(trial, metric, direction, values, m, old, opts)
}

/// The change of one trial and metric calibrated at `level` (the median of `values`, or
/// another statistic of them): the margin by direction, the proposed threshold, and the
/// keep / tighten / loosen decision against `old`. Shared by `recalibrate RUN…` and the
/// history's rolling baselines.
pub fn change_from_level(
    trial: &str,
    metric: &str,
    direction: Direction,
    values: Vec<f64>,
    level: f64,
    old: Option<OldThreshold>,
    opts: &RecalibrateOptions,
) -> Result<Change, NotCalibrated> {
    let margin = opts
        .metric_margins
        .get(metric)
        .copied()
        .unwrap_or(opts.margin);
    if direction == Direction::HigherIsBetter && margin >= 1.0 {
        return Err(NotCalibrated::FloorMargin {
            trial: trial.into(),
            metric: metric.into(),
            margin,
        });
    }
    let proposed = round_threshold(match direction {
        Direction::LowerIsBetter => level * (1.0 + margin),
        Direction::HigherIsBetter => level * (1.0 - margin),
    });
    // The suite refuses such a bound when it loads the store: never write one.
    if let Some(why) = dfx_core::metrics::bound_problem(metric, proposed) {
        return Err(NotCalibrated::OutOfBounds {
            trial: trial.into(),
            metric: metric.into(),
            proposed,
            level,
            why,
        });
    }
    let (decision, relative) = decide(
        old.as_ref().map(|o| o.value),
        proposed,
        direction,
        opts.tolerance,
        opts.allow_loosen,
    );
    let result = if decision.writes() {
        proposed
    } else {
        old.as_ref().map(|o| o.value).unwrap_or(proposed)
    };
    Ok(Change {
        trial: trial.to_string(),
        metric: metric.to_string(),
        direction,
        values,
        median: level,
        margin,
        proposed,
        old,
        relative,
        decision,
        result,
    })
}

/// Thresholds keep 4 decimals (as upstream's configs do), or 6 significant digits for
/// values below 0.01.
pub fn round_threshold(x: f64) -> f64 {
    if x.abs() >= 0.01 {
        (x * 1e4).round() / 1e4
    } else if x == 0.0 {
        0.0
    } else {
        let digits = 6 - 1 - x.abs().log10().floor() as i32;
        let f = 10f64.powi(digits);
        (x * f).round() / f
    }
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The store file (written only when `written + restored > 0`).
    pub store: PathBuf,
    /// Number of thresholds written (added, tightened or loosened).
    pub written: usize,
    /// Kept thresholds that the runs read from the store but the store file no longer
    /// holds (deleted or moved since), written back so that keeping one never drops it.
    pub restored: usize,
}

/// Writes the changed thresholds into the store (merging with what it holds; sorted,
/// stable formatting; atomic), and restores kept thresholds that only the runs' store
/// still had. Does not touch the file when nothing changes.
pub fn apply(r: &Recalibration) -> Result<Applied, ReportError> {
    let mut store = read_store(&r.store)?;
    let (mut written, mut restored) = (0, 0);
    for c in &r.changes {
        let from_runs_store = c.old.as_ref().is_some_and(|o| o.source == RUNS_STORE);
        if !c.writes() && !from_runs_store {
            continue;
        }
        store
            .entry(c.trial.clone())
            .or_default()
            .insert(c.metric.clone(), c.result);
        if c.writes() {
            written += 1;
        } else {
            restored += 1;
        }
    }
    if written + restored > 0 {
        write_store(&r.store, &store)?;
    }
    Ok(Applied {
        store: r.store.clone(),
        written,
        restored,
    })
}

/// `+25 %` style text of a margin.
pub(crate) fn margin_text(m: f64, d: Direction) -> String {
    let sign = match d {
        Direction::LowerIsBetter => "+",
        Direction::HigherIsBetter => "-",
    };
    format!("{sign}{} %", fmt::tick(m * 100.0))
}
