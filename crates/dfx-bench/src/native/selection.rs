//! Which statistics blocks a step reports, from the entry's `percentile-metrics` and
//! `metric-percentiles` ([`PercentileKeys`], parsed and checked when the plan was built).

use dfx_core::bounds::PercentileError;
use dfx_core::plan::PercentileKeys;

/// A `metric-percentiles` string [`Selection::parse`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("metric-percentiles: {0} (accepted: a comma-separated list such as 50,90,99)")]
pub struct BadPercentiles(#[source] pub PercentileError);

/// An audio metric that can be selected in `percentile-metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioMetric {
    /// `audio_rtf`: end-to-end latency / audio duration.
    Rtf,
    /// `audio_ttfp`: time to the first non-empty body read, ms.
    Ttfp,
    /// `audio_duration`: audio seconds per request.
    Duration,
    /// `audio_underrun`: largest playback deficit per request, seconds.
    Underrun,
}

/// A metric with a statistics block in the result and the stdout summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// `e2el`: send to end of body, ms.
    E2el,
    /// One of the audio metrics.
    Audio(AudioMetric),
}

impl Metric {
    /// Result-key stem (`mean_<stem>`, `median_<stem>`, `p99_<stem>`).
    pub fn stem(self) -> &'static str {
        match self {
            Metric::E2el => "e2el_ms",
            Metric::Audio(AudioMetric::Rtf) => "audio_rtf",
            Metric::Audio(AudioMetric::Ttfp) => "audio_ttfp_ms",
            Metric::Audio(AudioMetric::Duration) => "audio_duration_s",
            Metric::Audio(AudioMetric::Underrun) => "audio_underrun_s",
        }
    }

    /// Section title, label and unit of the stdout block.
    pub fn display(self) -> (&'static str, &'static str, Option<&'static str>) {
        match self {
            Metric::E2el => ("End-to-end Latency", "E2EL", Some("ms")),
            Metric::Audio(AudioMetric::Rtf) => ("Real Time Factor", "AUDIO_RTF", None),
            Metric::Audio(AudioMetric::Ttfp) => ("Time to First Packet", "AUDIO_TTFP", Some("ms")),
            Metric::Audio(AudioMetric::Duration) => ("Audio Duration", "AUDIO_DURATION", Some("s")),
            Metric::Audio(AudioMetric::Underrun) => {
                ("Streaming Audio Underrun", "AUDIO_UNDERRUN", Some("s"))
            }
        }
    }
}

/// `percentile-metrics` used when an entry has none.
pub(crate) const DEFAULT_PERCENTILE_METRICS: &str = "e2el,audio_rtf,audio_ttfp,audio_duration";

/// Which statistics blocks a step reports, in upstream order: the text metrics first
/// (only `e2el` applies to TTS: vllm-omni writes no ttft keys, and tpot/itl have no
/// meaning for audio), then the audio metrics in the order the entry lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// The metrics with a block, in report order.
    pub metrics: Vec<Metric>,
    /// `metric-percentiles` values (default `[99]`).
    pub percentiles: Vec<f64>,
    /// Names that select nothing for TTS (`ttft`, `tpot`, `itl`, unknown names).
    pub ignored: Vec<String>,
}

impl Selection {
    /// The selection of an entry's keys, parsed and checked when the plan was built.
    pub fn of(keys: &PercentileKeys) -> Self {
        let names = keys.metric_names(DEFAULT_PERCENTILE_METRICS);
        let mut out = Vec::new();
        let mut ignored = Vec::new();
        if names.contains(&"e2el") {
            out.push(Metric::E2el);
        }
        for name in &names {
            let m = match *name {
                "audio_rtf" => AudioMetric::Rtf,
                "audio_ttfp" => AudioMetric::Ttfp,
                "audio_duration" => AudioMetric::Duration,
                "audio_underrun" => AudioMetric::Underrun,
                "e2el" => continue,
                other => {
                    ignored.push(other.to_string());
                    continue;
                }
            };
            if !out.contains(&Metric::Audio(m)) {
                out.push(Metric::Audio(m));
            }
        }
        Selection {
            metrics: out,
            percentiles: keys.percentiles().to_vec(),
            ignored,
        }
    }

    /// Parses the strings as the plan does ([`PercentileKeys::parse`]), then
    /// [`Selection::of`]; for tests and tools that start from the strings.
    pub fn parse(metrics: Option<&str>, percentiles: Option<&str>) -> Result<Self, BadPercentiles> {
        let keys = PercentileKeys::parse(metrics, percentiles).map_err(BadPercentiles)?;
        Ok(Selection::of(&keys))
    }

    /// Whether `m` is selected.
    pub fn has(&self, m: Metric) -> bool {
        self.metrics.contains(&m)
    }
}

/// `p99` for 99.0, `p99.9` for 99.9 (Python's `int(p)` when whole, else `str(p)`).
pub(crate) fn percentile_word(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as i64)
    } else {
        format!("{p}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_order_and_defaults() {
        let s =
            Selection::parse(Some("ttft,audio_ttfp,e2el,audio_rtf,audio_duration"), None).unwrap();
        assert_eq!(
            s.metrics,
            vec![
                Metric::E2el,
                Metric::Audio(AudioMetric::Ttfp),
                Metric::Audio(AudioMetric::Rtf),
                Metric::Audio(AudioMetric::Duration)
            ]
        );
        assert_eq!(s.percentiles, vec![99.0]);
        assert_eq!(s.ignored, vec!["ttft"]);
        let s = Selection::parse(None, Some("50, 90,99.9")).unwrap();
        assert_eq!(s.metrics.len(), 4);
        assert_eq!(s.percentiles, vec![50.0, 90.0, 99.9]);
        assert!(
            Selection::parse(None, Some("p99"))
                .unwrap_err()
                .to_string()
                .contains("p99")
        );
        assert_eq!(percentile_word(99.0), "99");
        assert_eq!(percentile_word(99.9), "99.9");
    }
}
