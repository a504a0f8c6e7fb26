//! Noise per cell (trial × metric): the spread of its healthy runs (passed, clean, not
//! interrupted) and of its repeats, what the threshold in force can catch
//! (`min_detectable_change`) and how often it fires on noise alone (expected false-alarm
//! rate), with a flag when the threshold sits inside the noise (it will cry wolf) or the
//! noise hides a 10 % regression (it will miss it), and how many prompts or repeats would
//! fix that. Noise is treated as normal with the robust standard deviation
//! 1.4826 × MAD; a threshold is judged per run, one-sided.

use std::collections::BTreeMap;

use dfx_core::verdict::{MetricNoise, NoiseSource};
use serde::Serialize;

use crate::check;
use crate::detect::series::median;
use crate::model::{RunRecord, TrialOutcome, TrialRecord};

/// What the judgement of a cell assumes.
#[derive(Debug, Clone, Copy)]
pub struct NoiseOptions {
    /// The regression a threshold must catch (0.10 = 10 %).
    pub regression: f64,
    /// A threshold closer to the level than this many standard deviations cries wolf.
    pub cry_wolf_sigmas: f64,
    /// One-sided z of the catch probability behind `min_detectable_change` (1.645: 95 %).
    pub catch_z: f64,
    /// Fewest healthy values for a run-to-run estimate.
    pub min_runs: usize,
}

impl Default for NoiseOptions {
    fn default() -> Self {
        NoiseOptions {
            regression: 0.10,
            cry_wolf_sigmas: 2.0,
            catch_z: 1.645,
            min_runs: 3,
        }
    }
}

/// Where a cell's noise estimate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CellNoiseSource {
    /// Healthy runs in the history (run-to-run).
    History,
    /// The runs' repeats (`--repeats`), larger than the run-to-run spread.
    Repeats,
}

/// A flag on a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseFlag {
    /// The threshold sits inside the cell's noise: it fires on noise alone.
    CryWolf,
    /// The noise hides a regression of [`NoiseOptions::regression`].
    WillMiss,
}

impl NoiseFlag {
    /// `cry wolf` / `will miss`.
    pub fn as_str(self) -> &'static str {
        match self {
            NoiseFlag::CryWolf => "cry wolf",
            NoiseFlag::WillMiss => "will miss",
        }
    }
}

/// One relative noise estimate of a metric of a trial.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RelNoise {
    /// One standard deviation of the trial's value, relative to its level (0.02 = 2 %).
    pub rel_sd: f64,
    /// Values it was estimated from (healthy runs, or repeats).
    pub samples: usize,
    /// Where it comes from.
    pub source: CellNoiseSource,
}

/// The noise of one cell and what it means for its threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellNoise {
    /// Trial name.
    pub trial: String,
    /// Result key.
    pub metric: String,
    /// Median of the healthy values, in the metric's unit.
    pub level: f64,
    /// Healthy runs with a value.
    pub runs: usize,
    /// Coefficient of variation of the healthy values (sample sd / mean).
    pub cv: f64,
    /// Median absolute deviation of the healthy values, in the metric's unit.
    pub mad: f64,
    /// The noise judged against: the larger of the run-to-run robust sd and the repeats'.
    pub noise: RelNoise,
    /// The threshold of the newest run that had one.
    pub threshold: Option<f64>,
    /// Relative distance from the level to the threshold toward worse (negative: the
    /// level is past it).
    pub headroom: Option<f64>,
    /// Smallest relative worsening the threshold catches in 95 % of runs.
    pub min_detectable_change: Option<f64>,
    /// Expected share of runs that breach on noise alone.
    pub false_alarm_rate: Option<f64>,
    /// Cry wolf / will miss.
    pub flags: Vec<NoiseFlag>,
    /// What would fix a flag (more prompts or repeats, or a threshold change).
    pub fix: Option<String>,
}

fn healthy(run: &RunRecord, t: &TrialRecord) -> bool {
    !run.interrupted && !t.interrupted && t.outcome == TrialOutcome::Passed && t.unclean.is_none()
}

/// The healthy values of `trial`'s `metric` over `runs`, oldest first.
fn healthy_values(runs: &[RunRecord], trial: &str, metric: &str) -> Vec<f64> {
    runs.iter()
        .filter_map(|r| {
            let t = r.trial(trial)?;
            healthy(r, t).then(|| t.metrics.get(metric).copied())?
        })
        .filter(|x| x.is_finite())
        .collect()
}

/// Pooled sd of each healthy run's repeats and the repeat count, when runs had repeats.
fn repeats_sd(runs: &[RunRecord], trial: &str, metric: &str) -> Option<(f64, usize, usize)> {
    let (mut ss, mut df, mut n, mut count) = (0.0, 0usize, 0usize, 0usize);
    for r in runs {
        let Some(t) = r.trial(trial).filter(|t| healthy(r, t)) else {
            continue;
        };
        let Some(v) = t.repeats.get(metric).filter(|v| v.len() >= 2) else {
            continue;
        };
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        ss += v.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
        df += v.len() - 1;
        n += v.len();
        count = v.len();
    }
    (df > 0).then(|| ((ss / df as f64).sqrt(), n, count))
}

/// Relative noise of `trial`'s `metric`: the run-to-run robust sd of the healthy runs,
/// or the repeats' sd of a run's median (1.2533 × sd / √repeats) when larger. `None`
/// without enough data (fewer than `min_runs` healthy runs and no repeats).
pub fn metric_noise(
    runs: &[RunRecord],
    trial: &str,
    metric: &str,
    min_runs: usize,
) -> Option<RelNoise> {
    let xs = healthy_values(runs, trial, metric);
    let level = median(&xs);
    if xs.is_empty() || level == 0.0 || !level.is_finite() {
        return None;
    }
    let history = (xs.len() >= min_runs.max(2)).then(|| RelNoise {
        rel_sd: 1.4826 * mad(&xs) / level.abs(),
        samples: xs.len(),
        source: CellNoiseSource::History,
    });
    let repeats = repeats_sd(runs, trial, metric).map(|(sd, n, r)| RelNoise {
        rel_sd: 1.2533 * sd / (r as f64).sqrt() / level.abs(),
        samples: n,
        source: CellNoiseSource::Repeats,
    });
    match (history, repeats) {
        (Some(h), Some(r)) if r.rel_sd > h.rel_sd => Some(r),
        (Some(h), _) => Some(h),
        (None, r) => r,
    }
}

/// Two-sided z of the 95 % band a breach's gap is judged against: the trial's repeats
/// give half the 95 % interval of their median, so one run's spread is widened alike.
const BAND_Z: f64 = 1.96;

/// Per-metric noise of `trial` over `runs` (one hardware identity), for every metric the
/// history checks (the defaults and the thresholded ones), as the half-width of the 95 %
/// band of one run's value ([`metric_noise`]'s relative sd × 1.96) with the number of
/// healthy runs it comes from: what a breach is compared with to say whether it is inside
/// the cell's own noise (`breach_within_noise`).
pub fn relative_noise(runs: &[RunRecord], trial: &str) -> BTreeMap<String, MetricNoise> {
    let min_runs = NoiseOptions::default().min_runs;
    check::metrics_of(runs, trial, &[])
        .into_iter()
        .filter_map(|m| {
            let n = metric_noise(runs, trial, &m, min_runs)?;
            let runs = healthy_values(runs, trial, &m).len();
            let noise = MetricNoise {
                rel: BAND_Z * n.rel_sd,
                source: NoiseSource::History { runs },
            };
            Some((m, noise))
        })
        .collect()
}

fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let devs: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&devs)
}

fn cv(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 || mean == 0.0 {
        return 0.0;
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt() / mean.abs()
}

/// `history noise --format json`: an array of `{"hardware", "cells"}`, cells worst first.
pub fn json_document(tables: &[(String, Vec<CellNoise>)]) -> String {
    let doc: Vec<serde_json::Value> = tables
        .iter()
        .map(|(hw, cells)| serde_json::json!({ "hardware": hw, "cells": cells }))
        .collect();
    serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "[]".into())
}

mod judge;
pub use judge::{cell_noise, noise_table};

#[cfg(test)]
mod tests;
