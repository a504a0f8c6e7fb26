//! Change points per trial × metric: E-Divisive means (`edivisive`) filtered by
//! magnitude against the noise, the rule users asked for ("beyond X % for K consecutive
//! runs"), and the jump rule (`jump`): a shift far outside the noise is suspected on the
//! first run that shows it and a regression when the next confirms it. Failed and
//! interrupted runs are gaps in a series, never values, so a broken run is told apart
//! from a slowdown.

pub(crate) mod edivisive;
mod jump;
#[cfg(test)]
mod rates;
pub(crate) mod series;

pub use edivisive::EdOptions;
pub use series::{Gap, Point};

use dfx_core::baseline::Direction;
use serde::Serialize;
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
    /// The jump rule: a run this many noise units (and `min_change`) worse than the runs
    /// before it is suspected at once, and a regression when the next run is too.
    pub jump_factor: f64,
    /// The jump rule: clean runs needed before a run can be judged by it.
    pub jump_baseline: usize,
}

impl Default for DetectOptions {
    fn default() -> Self {
        DetectOptions {
            ed: EdOptions::default(),
            min_change: 0.05,
            noise_factor: 3.0,
            streak_change: 0.10,
            streak_runs: 3,
            jump_factor: 5.0,
            jump_baseline: 3,
        }
    }
}

/// Which method found a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// E-Divisive means with a permutation test.
    EDivisive,
    /// Beyond X % for K consecutive runs.
    Consecutive,
    /// Far outside the noise of the runs before ([`DetectOptions::jump_factor`]).
    Jump,
}

impl Method {
    /// The name printed and written: `e-divisive`, `consecutive`, `jump`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::EDivisive => "e-divisive",
            Method::Consecutive => "consecutive",
            Method::Jump => "jump",
        }
    }
}

/// Where the noise a change was judged against came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseSource {
    /// The runs' own repeats of the step (`--repeats`), pooled with runs of one commit,
    /// config and flags when there are such.
    Repeats,
    /// Runs of one commit, config and flags (the history's run-to-run spread among
    /// identical setups).
    SameSetupRuns,
    /// The series' run-to-run spread: 1.4826 × the median absolute deviation around its
    /// segment medians.
    RunToRun,
}

impl NoiseSource {
    /// In words, for the terminal and the reports.
    pub fn describe(self) -> &'static str {
        match self {
            NoiseSource::Repeats => "repeats within the runs",
            NoiseSource::SameSetupRuns => "run-to-run history (runs of one commit and config)",
            NoiseSource::RunToRun => "run-to-run history (robust spread of the series)",
        }
    }
}

/// One change of a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Index in the series' points of the first run after the change.
    pub index: usize,
    /// Median before the change, in the metric's unit (the segment before it, or up to
    /// five runs before a consecutive streak or a jump).
    pub before: f64,
    /// Median from `index` on, in the metric's unit (the segment, or the streak's runs).
    pub after: f64,
    /// Relative change toward worse (+0.3 = 30 % worse).
    pub worse_by: f64,
    /// The noise (one standard deviation, in the metric's unit) the change was judged
    /// against.
    pub noise: f64,
    /// Where `noise` came from.
    pub noise_source: NoiseSource,
    /// Only the newest run shows it (the jump rule): the next run confirms or clears it.
    pub suspected: bool,
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

/// A change and the clean indices `[start, end)` of the runs that show it.
type Spanned = (Change, usize, usize);

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
    let mut out: Vec<Spanned> = Vec::new();
    for w in bounds.windows(3) {
        let (a, b) = (&xs[w[0]..w[1]], &xs[w[1]..w[2]]);
        let repeats = segment_repeat_noise(&xs, &keys, &within, w);
        let (noise, noise_source) =
            repeats.unwrap_or_else(|| (mad_noise(&[a, b]), NoiseSource::RunToRun));
        if let Some(c) = judge(a, b, dir, noise, opts) {
            let c = Change {
                noise_source,
                methods: vec![Method::EDivisive],
                ..c
            };
            out.push((c, w[1], w[2]));
        }
    }
    let all = [0, xs.len()];
    let repeats = segment_repeat_noise(&xs, &keys, &within, &all);
    // A jump is judged against the noise of the runs before it only: the shift itself
    // must not widen the margin it is measured with.
    let noise_before = |i: usize| {
        let mut cuts: Vec<usize> = bounds.iter().copied().filter(|b| *b < i).collect();
        cuts.push(i);
        segment_repeat_noise(&xs[..i], &keys[..i], &within[..i], &cuts)
            .unwrap_or_else(|| (jump::prior_noise(&xs, &bounds, i), NoiseSource::RunToRun))
    };
    for c in jump::jumps(&xs, dir, opts, &noise_before) {
        merge(&mut out, c, 2);
    }
    for c in streaks(&xs, dir, opts, repeats) {
        merge(&mut out, c, opts.streak_runs.max(1));
    }
    let mut changes: Vec<Change> = out
        .into_iter()
        .map(|(c, start, _)| Change {
            index: clean[start].0,
            ..c
        })
        .collect();
    changes.sort_by_key(|c| c.index);
    changes
}

/// Adds `c` (a rule's change, whose first `k` runs are what it needs) to `out`, or adds
/// its method to a regression already there that is the same shift: `c` starts inside
/// that one's runs (its first run after the change was worse, but not by the rule's
/// margin), or that one starts within `c`'s first `k` runs (a noisy run just before the
/// change already looked worse). One shift is reported once, where the first method
/// (the change point's estimate before a rule's) puts it.
fn merge(out: &mut Vec<Spanned>, c: Spanned, k: usize) {
    let (change, start, end) = c;
    let same = out.iter_mut().find(|(o, s, e)| {
        o.is_regression()
            && change.is_regression()
            && ((*s <= start && start < *e) || (start <= *s && *s < (start + k).min(end)))
    });
    match same {
        Some((o, _, _)) => {
            o.methods.extend(change.methods);
            o.suspected &= change.suspected;
        }
        None => out.push((change, start, end)),
    }
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
) -> Option<(f64, NoiseSource)> {
    let mut keyed: Vec<(f64, String)> = Vec::new();
    let mut source = NoiseSource::SameSetupRuns;
    for (seg, w) in bounds.windows(2).enumerate() {
        for i in w[0]..w[1] {
            if let Some(k) = keys[i] {
                keyed.push((xs[i], format!("{seg}:{k}")));
            }
            if within[i].len() > 1 {
                source = NoiseSource::Repeats;
                keyed.extend(within[i].iter().map(|v| (*v, format!("run:{i}"))));
            }
        }
    }
    let refs: Vec<(f64, &str)> = keyed.iter().map(|(x, k)| (*x, k.as_str())).collect();
    repeat_noise(&refs).map(|n| (n, source))
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
        noise_source: NoiseSource::RunToRun,
        suspected: false,
        methods: Vec::new(),
    })
}

/// The consecutive rule over clean values: `streak_runs` runs in a row worse than the
/// median of the (up to 5) runs before the streak by more than `streak_change`. Indices
/// are into `xs`; each streak with the end of its runs.
fn streaks(
    xs: &[f64],
    dir: Direction,
    o: &DetectOptions,
    repeats: Option<(f64, NoiseSource)>,
) -> Vec<Spanned> {
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
            let (noise, noise_source) = repeats.unwrap_or_else(|| {
                (
                    mad_noise(&[&xs[i.saturating_sub(5)..i]]),
                    NoiseSource::RunToRun,
                )
            });
            let start = i;
            i += k;
            while i < xs.len() && worse_by(base, xs[i], dir) > o.streak_change {
                i += 1;
            }
            let change = Change {
                index: start,
                before: base,
                after,
                worse_by: worse_by(base, after, dir),
                noise,
                noise_source,
                suspected: false,
                methods: vec![Method::Consecutive],
            };
            out.push((change, start, i));
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
