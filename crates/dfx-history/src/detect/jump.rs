//! The jump rule: a run worse than the median of the (up to 5) runs before it by more
//! than `min_change` *and* `jump_factor` × their noise is far outside the cell's own
//! spread. The newest run alone is `suspected`; two such runs in a row are a change.
//! E-Divisive needs two runs on each side and a permutation test that five runs cannot
//! pass, and the consecutive rule three runs: this rule answers on the first night.

use dfx_core::baseline::Direction;

use super::series::{mad_noise, median};
use super::{Change, DetectOptions, Method, NoiseSource, Spanned, worse_by};

/// Runs before the judged one whose median is its baseline.
const WINDOW: usize = 5;

/// Every jump of `xs` (clean values, oldest first); `noise_before(i)` is the noise of the
/// values before `i` and where it comes from (repeats among them, else their run-to-run
/// spread within their E-Divisive segments, so an earlier shift is never noise).
pub(super) fn jumps(
    xs: &[f64],
    dir: Direction,
    o: &DetectOptions,
    noise_before: &dyn Fn(usize) -> (f64, NoiseSource),
) -> Vec<Spanned> {
    let mut out = Vec::new();
    let mut i = o.jump_baseline.max(2);
    while i < xs.len() {
        let window = &xs[i.saturating_sub(WINDOW)..i];
        let base = median(window);
        let (noise, noise_source) = noise_before(i);
        let margin = (o.min_change * base.abs()).max(o.jump_factor * noise);
        let beyond = |x: f64| worse_by(base, x, dir) > 0.0 && (x - base).abs() > margin;
        if !beyond(xs[i]) {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < xs.len() && beyond(xs[end]) {
            end += 1;
        }
        let confirmed = end - i >= 2;
        if confirmed || end == xs.len() {
            let after = median(&xs[i..end]);
            let change = Change {
                index: i,
                before: base,
                after,
                worse_by: worse_by(base, after, dir),
                noise,
                noise_source,
                suspected: !confirmed,
                methods: vec![Method::Jump],
            };
            out.push((change, i, end));
        }
        i = end;
    }
    out
}

/// The run-to-run noise of the values before `i`: 1.4826 × MAD pooled over the
/// E-Divisive segments they fall in (segments of one value carry no spread).
pub(super) fn prior_noise(xs: &[f64], bounds: &[usize], i: usize) -> f64 {
    let mut cuts: Vec<usize> = bounds.iter().copied().filter(|b| *b < i).collect();
    cuts.push(i);
    let segments: Vec<&[f64]> = cuts
        .windows(2)
        .map(|w| &xs[w[0]..w[1]])
        .filter(|s| s.len() >= 2)
        .collect();
    if segments.is_empty() {
        return 0.0;
    }
    mad_noise(&segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOWER: Direction = Direction::LowerIsBetter;

    fn jumps(xs: &[f64], dir: Direction, o: &DetectOptions, bounds: &[usize]) -> Vec<Spanned> {
        super::jumps(xs, dir, o, &|i| {
            (prior_noise(xs, bounds, i), NoiseSource::RunToRun)
        })
    }

    /// The series: TTFP of a c1 step, 6.41, 6.37, 6.49 ms, then +29 %.
    #[test]
    fn a_far_shift_is_suspected_first_then_confirmed() {
        let o = DetectOptions::default();
        let bounds = |n: usize| vec![0, n];
        let clean = [6.41, 6.37, 6.49];
        assert!(jumps(&clean, LOWER, &o, &bounds(3)).is_empty());
        let four = [6.41, 6.37, 6.49, 8.26];
        let j = jumps(&four, LOWER, &o, &bounds(4));
        assert_eq!(j.len(), 1, "{j:?}");
        assert!(j[0].0.suspected && j[0].0.index == 3 && (j[0].1, j[0].2) == (3, 4));
        let five = [6.41, 6.37, 6.49, 8.26, 8.32];
        let j = jumps(&five, LOWER, &o, &bounds(5));
        assert_eq!(j.len(), 1, "{j:?}");
        assert!(!j[0].0.suspected && j[0].0.index == 3 && j[0].2 == 5);
        assert!((j[0].0.worse_by - 0.28).abs() < 0.02, "{:?}", j[0].0);
    }

    #[test]
    fn a_one_night_outlier_that_recovers_is_dropped() {
        let xs = [100.0, 101.0, 99.0, 100.5, 140.0, 100.2, 99.8];
        let bounds = [0, xs.len()];
        let j = jumps(&xs, LOWER, &DetectOptions::default(), &bounds);
        assert!(j.is_empty(), "{j:?}");
    }

    #[test]
    fn a_shift_inside_the_noise_or_below_min_change_is_left_to_the_other_rules() {
        let o = DetectOptions::default();
        // 4 % above a quiet baseline: below --min-change.
        let small = [100.0, 100.1, 99.9, 104.0, 104.0];
        assert!(jumps(&small, LOWER, &o, &[0, 5]).is_empty());
        // 15 % above a baseline whose spread is about 5 %: inside 5 × noise.
        let noisy = [100.0, 106.0, 95.0, 103.0, 97.0, 115.0, 115.0];
        assert!(jumps(&noisy, LOWER, &o, &[0, 7]).is_empty());
        // Better, not worse: never a jump.
        let better = [100.0, 100.1, 99.9, 70.0, 70.0];
        assert!(jumps(&better, LOWER, &o, &[0, 5]).is_empty());
    }
}
