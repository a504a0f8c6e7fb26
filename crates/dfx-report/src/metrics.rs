//! The metrics reports and comparisons show by default, and the threshold gap.

use dfx_core::baseline::Direction;

use crate::run::TrialSummary;

/// A family of related result keys shown as one column / chart (TTFP, E2EL, …).
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// Short identifier (`ttfp`), used in chart ids.
    pub id: &'static str,
    /// Column / chart title.
    pub title: &'static str,
    /// Unit for the axis (empty for ratios).
    pub unit: &'static str,
    /// Result keys of the family, preferred first.
    pub keys: &'static [&'static str],
}

/// TTFP, E2EL, RTF and audio throughput: what a TTS regression shows up in.
pub const FAMILIES: [Family; 4] = [
    Family {
        id: "ttfp",
        title: "TTFP",
        unit: "ms",
        keys: &[
            "median_audio_ttfp_ms",
            "mean_audio_ttfp_ms",
            "p99_audio_ttfp_ms",
        ],
    },
    Family {
        id: "e2el",
        title: "E2EL",
        unit: "ms",
        keys: &["median_e2el_ms", "mean_e2el_ms", "p99_e2el_ms"],
    },
    Family {
        id: "rtf",
        title: "RTF",
        unit: "",
        keys: &["median_audio_rtf", "mean_audio_rtf", "p99_audio_rtf"],
    },
    Family {
        id: "audio_throughput",
        title: "Audio throughput",
        unit: "audio s / s",
        keys: &["audio_throughput"],
    },
];

impl Family {
    /// The key to show for these trials: the first key any of them has a threshold on
    /// (so the threshold can be drawn), else the first key any of them measured.
    pub fn pick<'a>(
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

impl Family {
    /// `TTFP p50 (ms)`: the column heading for `key`.
    pub fn heading(&self, key: &str) -> String {
        let stat = if key.starts_with("median_") {
            " p50"
        } else if key.starts_with("mean_") {
            " mean"
        } else if key.starts_with("p99_") {
            " p99"
        } else {
            ""
        };
        if self.unit.is_empty() {
            format!("{}{stat}", self.title)
        } else {
            format!("{}{stat} ({})", self.title, self.unit)
        }
    }

    /// Axis label: the unit, or the title for unitless ratios.
    pub fn axis_label(&self) -> &'static str {
        if self.unit.is_empty() {
            self.title
        } else {
            self.unit
        }
    }
}

/// Relative gap of `value` to `threshold`, signed toward worse: `+0.178` means 17.8 %
/// worse than the threshold (a breach), `-0.05` means 5 % headroom. Equality passes.
pub fn gap(value: f64, threshold: f64, direction: Direction) -> f64 {
    let denom = threshold.abs().max(f64::MIN_POSITIVE);
    match direction {
        Direction::LowerIsBetter => (value - threshold) / denom,
        Direction::HigherIsBetter => (threshold - value) / denom,
    }
}

/// `≤` for a ceiling, `≥` for a floor.
pub fn bound_word(direction: Direction) -> &'static str {
    match direction {
        Direction::LowerIsBetter => "max",
        Direction::HigherIsBetter => "min",
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
