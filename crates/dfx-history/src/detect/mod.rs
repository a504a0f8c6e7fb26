//! Change points per trial × metric: E-Divisive means (`edivisive`) filtered by
//! magnitude against the noise, plus the rule users asked for ("beyond X % for K
//! consecutive runs"). Failed and interrupted runs are gaps in a series, never values, so
//! a broken run is told apart from a slowdown.

pub(crate) mod edivisive;
pub(crate) mod series;

pub use edivisive::EdOptions;
pub use series::{Gap, Point};

use dfx_core::baseline::Direction;
use series::{mad_noise, median, repeat_noise};

/// Tuning of the detection.
#[derive(Debug, Clone, Copy)]
pub struct DetectOptions {
    /// E-Divisive settings.
    pub ed: EdOptions,
    /// Smallest relative change of the segment medians that counts (0.05 = 5 %).
    pub min_change: f64,
    /// A change must also exceed this many noise units (standard deviations).
    pub noise_factor: f64,
    /// The consecutive rule: relative change beyond which a run counts as worse.
    pub streak_change: f64,
    /// The consecutive rule: how many worse runs in a row flag a regression.
    pub streak_runs: usize,
}

impl Default for DetectOptions {
    fn default() -> Self {
        DetectOptions {
            ed: EdOptions::default(),
            min_change: 0.05,
            noise_factor: 3.0,
            streak_change: 0.10,
            streak_runs: 3,
        }
    }
}

/// Which method found a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// E-Divisive means with a permutation test.
    EDivisive,
    /// Beyond X % for K consecutive runs.
    Consecutive,
}

/// One change of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Index in the series' points of the first run after the change.
    pub index: usize,
    /// Median before the change, in the metric's unit (the segment before it, or up to
    /// five runs before a consecutive streak).
    pub before: f64,
    /// Median from `index` on, in the metric's unit (the segment, or the streak's runs).
    pub after: f64,
    /// Relative change toward worse (+0.3 = 30 % worse).
    pub worse_by: f64,
    /// The noise (one standard deviation, in the metric's unit) the change was judged
    /// against.
    pub noise: f64,
    /// Whether `noise` came from repeats (same commit and config, or `--repeats`) rather
    /// than from the series' robust spread (1.4826 × MAD).
    pub noise_from_repeats: bool,
    /// The methods that found it.
    pub methods: Vec<Method>,
}

impl Change {
    /// A change toward worse.
    pub(crate) fn is_regression(&self) -> bool {
        self.worse_by > 0.0
    }
}

fn worse_by(before: f64, after: f64, dir: Direction) -> f64 {
    let rel = (after - before) / before.abs().max(f64::MIN_POSITIVE);
    match dir {
        Direction::LowerIsBetter => rel,
        Direction::HigherIsBetter => -rel,
    }
}

/// The changes of `points` for a metric of direction `dir`, ascending by index.
pub fn detect(points: &[Point], dir: Direction, opts: &DetectOptions) -> Vec<Change> {
    let clean: Vec<(usize, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.value.as_ref().ok().map(|v| (i, *v)))
        .collect();
    let xs: Vec<f64> = clean.iter().map(|c| c.1).collect();
    let keys: Vec<Option<&str>> = clean
        .iter()
        .map(|(i, _)| points[*i].repeat_key.as_deref())
        .collect();
    let within: Vec<&[f64]> = clean
        .iter()
        .map(|(i, _)| points[*i].repeat_values.as_slice())
        .collect();
    let cps = edivisive::change_points(&xs, &opts.ed);
    let mut bounds = vec![0];
    bounds.extend(cps.iter().copied());
    bounds.push(xs.len());
    let mut out: Vec<Change> = Vec::new();
    for w in bounds.windows(3) {
        let (a, b) = (&xs[w[0]..w[1]], &xs[w[1]..w[2]]);
        let repeats = segment_repeat_noise(&xs, &keys, &within, w);
        let noise = repeats.unwrap_or_else(|| mad_noise(&[a, b]));
        if let Some(c) = judge(a, b, dir, noise, opts) {
            out.push(Change {
                index: clean[w[1]].0,
                noise_from_repeats: repeats.is_some(),
                methods: vec![Method::EDivisive],
                ..c
            });
        }
    }
    let all = [0, xs.len()];
    let k = opts.streak_runs.max(1);
    for c in streaks(
        &xs,
        dir,
        opts,
        segment_repeat_noise(&xs, &keys, &within, &all),
    ) {
        let same = out
            .iter()
            .position(|o| o.is_regression() && same_shift(&bounds, &clean, o.index, c.index, k));
        match same {
            Some(j) => out[j].methods.push(Method::Consecutive),
            None => out.push(Change {
                index: clean[c.index].0,
                ..c
            }),
        }
    }
    out.sort_by_key(|c| c.index);
    out
}

/// Whether a streak starting at clean index `streak` describes the same shift as the
/// E-Divisive change at point index `cp`: the streak runs across the change point (one
/// noisy run before it already looked worse) or starts inside the segment that follows
/// it (the first run after it was worse, but not by the streak's margin). Either way one
/// change, reported once, at the change point's estimated location.
fn same_shift(
    bounds: &[usize],
    clean: &[(usize, f64)],
    cp: usize,
    streak: usize,
    k: usize,
) -> bool {
    let Some(b) = bounds
        .iter()
        .position(|&b| b < clean.len() && clean[b].0 == cp)
    else {
        return false;
    };
    let (at, next) = (bounds[b], bounds.get(b + 1).copied().unwrap_or(clean.len()));
    (streak <= at && at < streak + k) || (at < streak && streak < next)
}

/// The spread of repeats within the segments `bounds` delimits: values that share a
/// repeat key *and* a segment, so a change between two runs of one commit (a fault, the
/// machine) never counts as noise, and each run's own repeats (`within`), one group per
/// run. The spread of single repeats over-states the noise of their median: the
/// detector errs toward calling fewer changes.
fn segment_repeat_noise(
    xs: &[f64],
    keys: &[Option<&str>],
    within: &[&[f64]],
    bounds: &[usize],
) -> Option<f64> {
    let mut keyed: Vec<(f64, String)> = Vec::new();
    for (seg, w) in bounds.windows(2).enumerate() {
        for i in w[0]..w[1] {
            if let Some(k) = keys[i] {
                keyed.push((xs[i], format!("{seg}:{k}")));
            }
            if within[i].len() > 1 {
                keyed.extend(within[i].iter().map(|v| (*v, format!("run:{i}"))));
            }
        }
    }
    let refs: Vec<(f64, &str)> = keyed.iter().map(|(x, k)| (*x, k.as_str())).collect();
    repeat_noise(&refs)
}

/// Whether the step from segment `a` to `b` is a real change: the medians differ by
/// more than `min_change` and `noise_factor` × noise, and most of `b` (at least two
/// points, two thirds) lies beyond that margin, so one outlier is never a change.
fn judge(a: &[f64], b: &[f64], dir: Direction, noise: f64, o: &DetectOptions) -> Option<Change> {
    let (before, after) = (median(a), median(b));
    let margin = (o.min_change * before.abs()).max(o.noise_factor * noise);
    if (after - before).abs() <= margin {
        return None;
    }
    let up = after > before;
    let beyond = b
        .iter()
        .filter(|x| {
            if up {
                **x > before + margin
            } else {
                **x < before - margin
            }
        })
        .count();
    if beyond < 2 || 3 * beyond < 2 * b.len() {
        return None;
    }
    Some(Change {
        index: 0,
        before,
        after,
        worse_by: worse_by(before, after, dir),
        noise,
        noise_from_repeats: false,
        methods: Vec::new(),
    })
}

/// The consecutive rule over clean values: `streak_runs` runs in a row worse than the
/// median of the (up to 5) runs before the streak by more than `streak_change`. Indices
/// are into `xs`.
fn streaks(xs: &[f64], dir: Direction, o: &DetectOptions, repeats: Option<f64>) -> Vec<Change> {
    let k = o.streak_runs.max(1);
    let mut out = Vec::new();
    let mut i = 2;
    while i + k <= xs.len() {
        let base = median(&xs[i.saturating_sub(5)..i]);
        let run = &xs[i..i + k];
        if run
            .iter()
            .all(|x| worse_by(base, *x, dir) > o.streak_change)
        {
            let after = median(run);
            out.push(Change {
                index: i,
                before: base,
                after,
                worse_by: worse_by(base, after, dir),
                noise: repeats.unwrap_or_else(|| mad_noise(&[&xs[i.saturating_sub(5)..i]])),
                noise_from_repeats: repeats.is_some(),
                methods: vec![Method::Consecutive],
            });
            i += k;
            while i < xs.len() && worse_by(base, xs[i], dir) > o.streak_change {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests;
