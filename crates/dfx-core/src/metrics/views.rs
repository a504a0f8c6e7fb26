//! Ordered selections of registry keys: what the summary copies, the reports show, the
//! parity comparison prints and the history checks by default. Every name here is a
//! registry key (tested), so each view's directions, units and labels come from the one
//! table.

use super::lookup;

/// Result keys copied into the summary when present (besides every thresholded metric).
pub const SUMMARY_KEYS: &[&str] = &[
    "completed",
    "failed",
    "duration",
    "request_throughput",
    "audio_throughput",
    "mean_audio_ttfp_ms",
    "median_audio_ttfp_ms",
    "p99_audio_ttfp_ms",
    "mean_audio_rtf",
    "median_audio_rtf",
    "p99_audio_rtf",
    "mean_e2el_ms",
    "median_e2el_ms",
    "p99_e2el_ms",
    "audio_continuity_ok_rate",
];

/// The metrics the native / `vllm bench` parity comparison shows by default, in order.
pub const PARITY_KEYS: &[&str] = &[
    "completed",
    "failed",
    "duration",
    "request_throughput",
    "audio_throughput",
    "total_audio_duration_s",
    "max_concurrent_requests",
    "mean_e2el_ms",
    "median_e2el_ms",
    "p99_e2el_ms",
    "mean_audio_ttfp_ms",
    "median_audio_ttfp_ms",
    "p99_audio_ttfp_ms",
    "mean_audio_rtf",
    "median_audio_rtf",
    "p99_audio_rtf",
    "mean_audio_duration_s",
    "median_audio_duration_s",
    "p99_audio_duration_s",
    "mean_ttft_ms",
    "mean_tpot_ms",
    "mean_itl_ms",
];

/// Metrics `history check` (and the rolling baselines) look at in every trial besides
/// those with a threshold.
pub const HISTORY_KEYS: &[&str] = &[
    "median_audio_ttfp_ms",
    "median_e2el_ms",
    "mean_e2el_ms",
    "median_audio_rtf",
    "audio_throughput",
];

/// Columns of `dfx-perf history show` when no metric is named.
pub const HISTORY_TABLE_KEYS: &[&str] = &[
    "median_audio_ttfp_ms",
    "median_e2el_ms",
    "median_audio_rtf",
    "audio_throughput",
];

/// The per-batch figures a `vllm bench` soak keeps (when the batch's result has them).
pub const SOAK_BATCH_KEYS: &[&str] = &[
    "median_e2el_ms",
    "median_ttft_ms",
    "median_audio_ttfp_ms",
    "median_audio_rtf",
    "request_throughput",
];

/// Related keys shown as one report column / chart (TTFP, E2EL, …), preferred key first;
/// its title and unit are the registry's for the first key.
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// Short identifier (`ttfp`), used in chart ids.
    pub id: &'static str,
    /// Result keys of the group, preferred first (all of one registry entry or family).
    pub keys: &'static [&'static str],
}

/// TTFP, E2EL, RTF and audio throughput: what a TTS regression shows up in.
pub const REPORT_GROUPS: &[Group] = &[
    Group {
        id: "ttfp",
        keys: &[
            "median_audio_ttfp_ms",
            "mean_audio_ttfp_ms",
            "p99_audio_ttfp_ms",
        ],
    },
    Group {
        id: "e2el",
        keys: &["median_e2el_ms", "mean_e2el_ms", "p99_e2el_ms"],
    },
    Group {
        id: "rtf",
        keys: &["median_audio_rtf", "mean_audio_rtf", "p99_audio_rtf"],
    },
    Group {
        id: "audio_throughput",
        keys: &["audio_throughput"],
    },
];

impl Group {
    /// Column / chart title: the registry label of the group's keys.
    pub fn title(&self) -> &'static str {
        lookup(self.keys[0]).map_or(self.id, |k| k.label())
    }

    /// Unit for the axis (empty for ratios).
    pub fn unit(&self) -> &'static str {
        lookup(self.keys[0]).map_or("", |k| k.unit())
    }

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
        match self.unit() {
            "" => format!("{}{stat}", self.title()),
            unit => format!("{}{stat} ({unit})", self.title()),
        }
    }

    /// Axis label: the unit, or the title for unitless ratios.
    pub fn axis_label(&self) -> &'static str {
        match self.unit() {
            "" => self.title(),
            unit => unit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_view_names_registry_keys() {
        let groups = REPORT_GROUPS.iter().flat_map(|g| g.keys.iter());
        let all = [
            SUMMARY_KEYS,
            PARITY_KEYS,
            HISTORY_KEYS,
            HISTORY_TABLE_KEYS,
            SOAK_BATCH_KEYS,
        ];
        for key in all.iter().flat_map(|v| v.iter()).chain(groups) {
            assert!(lookup(key).is_some(), "{key} is not in the registry");
        }
    }

    #[test]
    fn a_group_is_one_entry() {
        for g in REPORT_GROUPS {
            let first = lookup(g.keys[0]).unwrap().entry();
            for k in g.keys {
                assert_eq!(lookup(k).unwrap().entry(), first, "{k} in {}", g.id);
            }
        }
    }

    #[test]
    fn report_headings_and_axes() {
        let [ttfp, _, rtf, thr] = REPORT_GROUPS else {
            panic!("four groups")
        };
        assert_eq!(ttfp.heading("median_audio_ttfp_ms"), "TTFP p50 (ms)");
        assert_eq!(ttfp.heading("p99_audio_ttfp_ms"), "TTFP p99 (ms)");
        assert_eq!(rtf.heading("mean_audio_rtf"), "RTF mean");
        assert_eq!(rtf.axis_label(), "RTF");
        assert_eq!(
            thr.heading("audio_throughput"),
            "Audio throughput (audio s / s)"
        );
        assert_eq!(thr.axis_label(), "audio s / s");
    }
}
