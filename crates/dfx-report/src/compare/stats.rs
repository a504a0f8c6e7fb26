//! The noise-aware verdict for one trial and metric across two sets of repeats.
//!
//! Rule: a change is called only when both sides have at least two repeats, the ranges
//! `[min, max]` of the two sides do not overlap, and the medians differ by more than the
//! tolerance. One run per side can never give more than "unconfirmed": two runs of the
//! same configuration on a shared machine routinely differ by a few percent.

use dfx_core::baseline::Direction;
use serde::Serialize;

/// Values of one side (one per run that measured the metric cleanly).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideStats {
    /// The values in the metric's unit, in run order (a run's `--repeats` each count).
    pub values: Vec<f64>,
    /// Median of `values` (mean of the middle two for even counts).
    pub median: f64,
    /// Smallest of `values`.
    pub min: f64,
    /// Largest of `values`.
    pub max: f64,
}

impl SideStats {
    /// `None` for an empty set.
    pub fn of(values: Vec<f64>) -> Option<SideStats> {
        if values.is_empty() {
            return None;
        }
        let median = median(&values);
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(SideStats {
            values,
            median,
            min,
            max,
        })
    }

    /// How many values (repeats) this side has.
    pub fn n(&self) -> usize {
        self.values.len()
    }
}

/// Median of a non-empty slice (mean of the middle two for even counts).
pub(crate) use dfx_core::repeats::median;

/// What the numbers support.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// B is worse than A beyond noise and tolerance.
    Regression,
    /// B is better than A beyond noise and tolerance.
    Improvement,
    /// Changed beyond noise and tolerance, but the metric's direction is unknown.
    Changed,
    /// The repeat ranges overlap: any difference is within run-to-run noise.
    WithinNoise,
    /// The ranges are apart but the medians differ by no more than the tolerance.
    BelowTolerance,
    /// Fewer than two repeats on a side: the ratio is shown, no verdict is given.
    Unconfirmed {
        /// Values (repeats) on side A.
        runs_a: usize,
        /// Values (repeats) on side B.
        runs_b: usize,
    },
    /// Not measured cleanly on one side (or both).
    NotMeasured {
        /// Which side has no clean value, or that A's median is 0.
        why: String,
    },
}

impl Verdict {
    /// Short label for tables.
    pub fn label(&self) -> String {
        match self {
            Verdict::Regression => "REGRESSION".into(),
            Verdict::Improvement => "improvement".into(),
            Verdict::Changed => "CHANGED (direction unknown)".into(),
            Verdict::WithinNoise => "no change (within noise)".into(),
            Verdict::BelowTolerance => "no change (below tolerance)".into(),
            Verdict::Unconfirmed {
                runs_a: 1,
                runs_b: 1,
            } => "single pair: unconfirmed".into(),
            Verdict::Unconfirmed { runs_a, runs_b } => {
                format!("unconfirmed ({runs_a} vs {runs_b} runs; need 2+ per side)")
            }
            Verdict::NotMeasured { why } => format!("not compared: {why}"),
        }
    }
}

/// `B / A` of the medians.
pub(crate) fn ratio(a: &SideStats, b: &SideStats) -> f64 {
    b.median / a.median
}

/// Relative change of B against A, signed toward worse when the direction is known
/// (`+0.12` = 12 % worse), plain `B/A - 1` otherwise.
pub(crate) fn change(a: f64, b: f64, direction: Option<Direction>) -> f64 {
    let raw = b / a - 1.0;
    match direction {
        Some(Direction::HigherIsBetter) => -raw,
        _ => raw,
    }
}

/// The range of the change allowed by the repeats (most optimistic to most pessimistic
/// pairing of A and B values), or `None` with a single run on both sides.
pub(crate) fn change_range(
    a: &SideStats,
    b: &SideStats,
    direction: Option<Direction>,
) -> Option<(f64, f64)> {
    if a.n() < 2 && b.n() < 2 {
        return None;
    }
    let x = change(a.max, b.min, direction);
    let y = change(a.min, b.max, direction);
    Some((x.min(y), x.max(y)))
}

/// The verdict for one metric. `tolerance` is a fraction (0.05 = 5 %).
pub(crate) fn verdict(
    a: &SideStats,
    b: &SideStats,
    direction: Option<Direction>,
    tolerance: f64,
) -> Verdict {
    if a.n() < 2 || b.n() < 2 {
        return Verdict::Unconfirmed {
            runs_a: a.n(),
            runs_b: b.n(),
        };
    }
    if a.min <= b.max && b.min <= a.max {
        return Verdict::WithinNoise;
    }
    let c = change(a.median, b.median, direction);
    if c.abs() <= tolerance {
        return Verdict::BelowTolerance;
    }
    match direction {
        None => Verdict::Changed,
        Some(_) if c > 0.0 => Verdict::Regression,
        Some(_) => Verdict::Improvement,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[f64]) -> SideStats {
        SideStats::of(v.to_vec()).unwrap()
    }

    const LOWER: Option<Direction> = Some(Direction::LowerIsBetter);
    const HIGHER: Option<Direction> = Some(Direction::HigherIsBetter);

    #[test]
    fn separated_repeats_beyond_tolerance_are_a_regression() {
        let v = verdict(
            &s(&[100.0, 102.0, 99.0]),
            &s(&[112.0, 115.0, 113.0]),
            LOWER,
            0.05,
        );
        assert_eq!(v, Verdict::Regression);
        let v = verdict(&s(&[40.0, 41.0]), &s(&[35.0, 36.0]), HIGHER, 0.05);
        assert_eq!(v, Verdict::Regression);
        let v = verdict(&s(&[40.0, 41.0]), &s(&[45.0, 46.0]), HIGHER, 0.05);
        assert_eq!(v, Verdict::Improvement);
    }

    #[test]
    fn overlap_or_small_change_is_no_change() {
        let v = verdict(&s(&[100.0, 110.0]), &s(&[108.0, 118.0]), LOWER, 0.05);
        assert_eq!(v, Verdict::WithinNoise);
        let v = verdict(&s(&[100.0, 101.0]), &s(&[103.0, 104.0]), LOWER, 0.05);
        assert_eq!(v, Verdict::BelowTolerance);
    }

    #[test]
    fn a_single_pair_is_never_a_verdict() {
        let v = verdict(&s(&[100.0]), &s(&[150.0]), LOWER, 0.05);
        assert_eq!(v.label(), "single pair: unconfirmed");
        let v = verdict(&s(&[100.0, 101.0]), &s(&[150.0]), LOWER, 0.05);
        assert!(v.label().starts_with("unconfirmed (2 vs 1 runs"));
    }

    #[test]
    fn change_is_signed_toward_worse() {
        assert!((change(40.0, 30.0, HIGHER) - 0.25).abs() < 1e-12);
        assert!((change(100.0, 112.0, LOWER) - 0.12).abs() < 1e-12);
        let r = change_range(&s(&[100.0, 104.0]), &s(&[110.0, 112.0]), LOWER).unwrap();
        assert!((r.0 - (110.0 / 104.0 - 1.0)).abs() < 1e-12 && (r.1 - 0.12).abs() < 1e-12);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
