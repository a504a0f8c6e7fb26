//! The metrics reports and comparisons show by default, and the threshold gap.

use dfx_core::baseline::Direction;

use crate::run::TrialSummary;

/// A family of related result keys shown as one column / chart (TTFP, E2EL, …): the
/// registry's [`Group`], with its title, unit, headings and axis label.
pub(crate) use dfx_core::metrics::Group as Family;

/// TTFP, E2EL, RTF and audio throughput: what a TTS regression shows up in.
pub(crate) const FAMILIES: &[Family] = dfx_core::metrics::REPORT_GROUPS;

/// Which key of a [`Family`] a set of trials shows.
pub(crate) trait Pick {
    /// The key to show for these trials: the first key any of them has a threshold on
    /// (so the threshold can be drawn), else the first key any of them measured.
    fn pick<'a>(
        &self,
        trials: impl IntoIterator<Item = &'a TrialSummary> + Clone,
    ) -> Option<&'static str>;
}

impl Pick for Family {
    fn pick<'a>(
        &self,
        trials: impl IntoIterator<Item = &'a TrialSummary> + Clone,
    ) -> Option<&'static str> {
        let by_threshold = self
            .keys
            .iter()
            .find(|k| trials.clone().into_iter().any(|t| t.threshold(k).is_some()));
        by_threshold
            .or_else(|| {
                self.keys
                    .iter()
                    .find(|k| trials.clone().into_iter().any(|t| t.metric(k).is_some()))
            })
            .copied()
    }
}

/// Relative gap of `value` to `threshold`, signed toward worse: `+0.178` means 17.8 %
/// worse than the threshold (a breach), `-0.05` means 5 % headroom. Equality passes.
pub(crate) fn gap(value: f64, threshold: f64, direction: Direction) -> f64 {
    let denom = threshold.abs().max(f64::MIN_POSITIVE);
    match direction {
        Direction::LowerIsBetter => (value - threshold) / denom,
        Direction::HigherIsBetter => (threshold - value) / denom,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_is_positive_when_worse() {
        assert!((gap(412.3, 350.0, Direction::LowerIsBetter) - 0.178).abs() < 1e-3);
        assert!(gap(300.0, 350.0, Direction::LowerIsBetter) < 0.0);
        assert!((gap(30.0, 40.0, Direction::HigherIsBetter) - 0.25).abs() < 1e-9);
        assert_eq!(gap(40.0, 40.0, Direction::HigherIsBetter), 0.0);
    }
}
