//! What a cell's noise means for its threshold: headroom, `min_detectable_change`,
//! expected false-alarm rate, the flags and the sample size that would clear them.

use dfx_core::baseline::Direction;

use super::{
    CellNoise, CellNoiseSource, NoiseFlag, NoiseOptions, RelNoise, cv, healthy_values, mad,
    metric_noise,
};
use crate::check;
use crate::detect::series::median;
use crate::model::RunRecord;

/// The noise of `trial`'s `metric` and its threshold's judgement; `None` without enough
/// healthy data or a known direction.
pub fn cell_noise(
    runs: &[RunRecord],
    trial: &str,
    metric: &str,
    o: &NoiseOptions,
) -> Option<CellNoise> {
    let dir = check::direction(runs, trial, metric)?;
    let noise = metric_noise(runs, trial, metric, o.min_runs)?;
    let xs = healthy_values(runs, trial, metric);
    let level = median(&xs);
    let threshold = runs.iter().rev().find_map(|r| {
        let t = r.trial(trial)?;
        t.thresholds.iter().find(|th| th.metric == metric)
    });
    let mut cell = CellNoise {
        trial: trial.to_string(),
        metric: metric.to_string(),
        level,
        runs: xs.len(),
        cv: cv(&xs),
        mad: mad(&xs),
        noise,
        threshold: threshold.map(|t| t.value),
        headroom: None,
        min_detectable_change: None,
        false_alarm_rate: None,
        flags: Vec::new(),
        fix: None,
    };
    if let Some(t) = cell.threshold {
        judge(&mut cell, t, dir, o, sample_size(runs, trial, noise));
    }
    Some(cell)
}

/// Fills headroom, `min_detectable_change`, false-alarm rate, flags and the fix.
fn judge(c: &mut CellNoise, t: f64, dir: Direction, o: &NoiseOptions, n: Option<usize>) {
    let h = match dir {
        Direction::LowerIsBetter => (t - c.level) / c.level.abs(),
        Direction::HigherIsBetter => (c.level - t) / c.level.abs(),
    };
    let sd = c.noise.rel_sd;
    c.headroom = Some(h);
    c.min_detectable_change = Some((h + o.catch_z * sd).max(0.0));
    c.false_alarm_rate = Some(if sd > 0.0 {
        upper_tail(h / sd)
    } else if h > 0.0 {
        0.0
    } else {
        1.0
    });
    let cry_wolf = h < o.cry_wolf_sigmas * sd;
    let will_miss = h + o.catch_z * sd > o.regression;
    let mut target = f64::INFINITY;
    if cry_wolf {
        c.flags.push(NoiseFlag::CryWolf);
        target = target.min(h / o.cry_wolf_sigmas);
    }
    if will_miss {
        c.flags.push(NoiseFlag::WillMiss);
        target = target.min((o.regression - h) / o.catch_z);
    }
    if c.flags.is_empty() {
        return;
    }
    c.fix = Some(fix_text(c, h, sd, target, o, n));
}

/// What clears the flags: noise shrinks as 1/√n, so n × (sd / target)² samples; a
/// threshold on the wrong side of the level (or farther than the regression to catch)
/// needs moving instead.
fn fix_text(
    c: &CellNoise,
    h: f64,
    sd: f64,
    target: f64,
    o: &NoiseOptions,
    n: Option<usize>,
) -> String {
    if h <= 0.0 {
        return "the level is at or past the threshold: recalibrate it (no sample size helps)"
            .into();
    }
    if h >= o.regression {
        return format!(
            "the threshold is {:.1} % away from the level: tighten it below {:.0} % (no sample size helps)",
            h * 100.0,
            o.regression * 100.0
        );
    }
    let what = match c.noise.source {
        CellNoiseSource::History => "prompts",
        CellNoiseSource::Repeats => "repeats",
    };
    match n {
        Some(n) if target > 0.0 => {
            let need = (n as f64 * (sd / target).powi(2)).ceil();
            let need = if need.is_finite() {
                need as u64
            } else {
                u64::MAX
            };
            format!(
                "about {need} {what} (now {n}) bring the noise to {:.1} %",
                target * 100.0
            )
        }
        _ => format!("less noise: {:.1} % or below (more {what})", target * 100.0),
    }
}

/// How many prompts (run-to-run noise) or repeats (repeats' noise) the newest run had.
fn sample_size(runs: &[RunRecord], trial: &str, noise: RelNoise) -> Option<usize> {
    let t = runs.iter().rev().find_map(|r| r.trial(trial))?;
    match noise.source {
        CellNoiseSource::History => t
            .metrics
            .get("num_prompts")
            .filter(|n| **n >= 1.0 && n.fract() == 0.0)
            .map(|n| *n as usize),
        CellNoiseSource::Repeats => t.repeats.values().map(Vec::len).max(),
    }
}

/// P(Z > z) for a standard normal Z (Abramowitz & Stegun 7.1.26, error below 1.5e-7).
pub(crate) fn upper_tail(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    if z >= 0.0 {
        erfc / 2.0
    } else {
        1.0 - erfc / 2.0
    }
}

/// Every cell of `runs` (one hardware identity) with enough data: each trial's
/// thresholded metrics, the defaults and `extra`; worst first (flagged, then by expected
/// false-alarm rate, then by noise).
pub fn noise_table(runs: &[RunRecord], o: &NoiseOptions, extra: &[String]) -> Vec<CellNoise> {
    let mut out: Vec<CellNoise> = Vec::new();
    for trial in check::trial_names(runs) {
        for metric in check::metrics_of(runs, trial, extra) {
            out.extend(cell_noise(runs, trial, &metric, o));
        }
    }
    out.sort_by(|a, b| {
        b.flags
            .len()
            .cmp(&a.flags.len())
            .then_with(|| b.threshold.is_some().cmp(&a.threshold.is_some()))
            .then_with(|| {
                let far = |c: &CellNoise| c.false_alarm_rate.unwrap_or(0.0);
                far(b).total_cmp(&far(a))
            })
            .then_with(|| b.noise.rel_sd.total_cmp(&a.noise.rel_sd))
    });
    out
}
