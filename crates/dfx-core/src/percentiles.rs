//! `percentile-metrics` and `metric-percentiles` of an entry, parsed once when the plan is
//! built ([`crate::config`]). The benches read [`PercentileKeys`], never the strings: a
//! value the plan holds is one they can use.

use serde::Serialize;

use crate::bounds::{MAX_PERCENTILES, PercentileError, parse_percentiles};

/// `metric-percentiles` when an entry has none.
pub(crate) const DEFAULT_PERCENTILES: [f64; 1] = [99.0];

/// What `metric-percentiles` accepts, for config errors.
pub(crate) fn accepted() -> String {
    format!(
        "a comma-separated list of up to {MAX_PERCENTILES} numbers from 0 to 100, e.g. \"50,90,99\""
    )
}

/// Which statistics an entry asks for: `percentile-metrics` (which blocks) and
/// `metric-percentiles` (which percentiles of each block).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PercentileKeys {
    /// `percentile-metrics` split at its commas, each name as written (not trimmed:
    /// upstream's chat client matches them untrimmed); `None` when the entry has none.
    /// Any name is accepted: each bench says which ones select nothing for it.
    metrics: Option<Vec<String>>,
    /// `metric-percentiles` parsed (each from 0 to 100, at most [`MAX_PERCENTILES`]);
    /// `None` when the entry has none or it lists no value.
    percentiles: Option<Vec<f64>>,
}

impl PercentileKeys {
    /// Parses the entry's strings; the error (of `metric-percentiles`, the only one that
    /// can be wrong) says which value is not a percentile.
    pub fn parse(
        metrics: Option<&str>,
        percentiles: Option<&str>,
    ) -> Result<Self, PercentileError> {
        let percentiles = match percentiles {
            Some(text) if text.split(',').any(|p| !p.trim().is_empty()) => {
                Some(parse_percentiles(text)?)
            }
            _ => None,
        };
        Ok(PercentileKeys {
            metrics: metrics.map(|m| m.split(',').map(String::from).collect()),
            percentiles,
        })
    }

    /// Whether the entry names its metrics (else each bench uses its default).
    #[cfg(test)]
    pub(crate) fn has_metrics(&self) -> bool {
        self.metrics.is_some()
    }

    /// The names of `percentile-metrics` as written between the commas (untrimmed, empty
    /// ones kept); `None` when the entry has none.
    pub fn metrics_as_written(&self) -> Option<&[String]> {
        self.metrics.as_deref()
    }

    /// The names of `percentile-metrics`, trimmed, empty ones left out, in the order
    /// written; `default` (comma separated) when the entry has none.
    pub fn metric_names<'a>(&'a self, default: &'a str) -> Vec<&'a str> {
        match &self.metrics {
            Some(names) => names
                .iter()
                .map(|n| n.trim())
                .filter(|n| !n.is_empty())
                .collect(),
            None => default
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect(),
        }
    }

    /// Whether `percentile-metrics` names `name` (trimmed); `false` when it is absent.
    pub fn names(&self, name: &str) -> bool {
        self.metrics
            .as_ref()
            .is_some_and(|m| m.iter().any(|n| n.trim() == name))
    }

    /// The percentiles to report: the entry's, else `DEFAULT_PERCENTILES`.
    pub fn percentiles(&self) -> &[f64] {
        self.percentiles.as_deref().unwrap_or(&DEFAULT_PERCENTILES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsed_once_with_defaults() {
        let k = PercentileKeys::parse(Some("ttft, e2el,,audio_rtf"), Some("50, 90,99.9")).unwrap();
        assert_eq!(k.percentiles(), [50.0, 90.0, 99.9]);
        assert_eq!(k.metric_names("x"), ["ttft", "e2el", "audio_rtf"]);
        assert_eq!(
            k.metrics_as_written().unwrap(),
            ["ttft", " e2el", "", "audio_rtf"]
        );
        assert!(k.names("e2el") && !k.names("itl"));
        let none = PercentileKeys::parse(None, None).unwrap();
        assert_eq!(none, PercentileKeys::default());
        assert_eq!(none.percentiles(), [99.0]);
        assert_eq!(none.metric_names("e2el, audio_rtf"), ["e2el", "audio_rtf"]);
        assert!(!none.has_metrics() && !none.names("e2el"));
        assert_eq!(
            PercentileKeys::parse(None, Some(" , "))
                .unwrap()
                .percentiles(),
            [99.0]
        );
        let why = PercentileKeys::parse(None, Some("99,p50")).unwrap_err();
        assert!(why.to_string().contains("\"p50\""), "{why}");
    }
}
