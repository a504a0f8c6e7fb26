//! Why one trial's metric is not calibrated (reported as a note; the others still are).

/// Why [`super::change_from_level`] (or a caller gathering its values) left a metric alone.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotCalibrated {
    /// No run says whether lower or higher is better for the metric.
    #[error("{trial} {metric}: unknown metric direction, not calibrated")]
    UnknownDirection {
        /// The trial.
        trial: String,
        /// The metric.
        metric: String,
    },
    /// No run has a finite value.
    #[error("{trial} {metric}: not measured in any run, not calibrated")]
    NotMeasured {
        /// The trial.
        trial: String,
        /// The metric.
        metric: String,
    },
    /// A floor (higher is better) with a margin of 100 % or more.
    #[error(
        "{trial} {metric}: a margin of {:.0} % would put a floor at or below zero, not calibrated",
        margin * 100.0
    )]
    FloorMargin {
        /// The trial.
        trial: String,
        /// The metric.
        metric: String,
        /// The margin as a fraction.
        margin: f64,
    },
    /// The proposed threshold is one the suite would refuse when it loads the store.
    #[error(
        "{trial} {metric}: proposed threshold {proposed} (from {level}): {why}, not calibrated"
    )]
    OutOfBounds {
        /// The trial.
        trial: String,
        /// The metric.
        metric: String,
        /// The rounded threshold.
        proposed: f64,
        /// The level it was derived from.
        level: f64,
        /// [`dfx_core::metrics::bound_problem`]'s reason.
        why: String,
    },
    /// Fewer good runs than `--min-runs` (rolling recalibration).
    #[error(
        "{trial} {metric}: needs data: {kept} good run(s), at least {wanted} wanted (--min-runs); threshold unchanged"
    )]
    NeedsData {
        /// The trial.
        trial: String,
        /// The metric.
        metric: String,
        /// Good runs left after outliers.
        kept: usize,
        /// `--min-runs`.
        wanted: usize,
    },
}
