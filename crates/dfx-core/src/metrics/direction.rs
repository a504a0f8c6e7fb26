//! Which way is better for each metric. Upstream guessed by substring (`throughput` →
//! higher); dfx-perf reads the registry ([`super::table`]) and refuses names it does not
//! know.
//!
//! The registry covers the result keys of `vllm bench serve --omni` (and dfx-perf's own
//! extra keys) that make sense as thresholds:
//! - higher is better: the throughputs, `rtfx`, `request_goodput`, `slo_attainment`,
//!   `completed`, `audio_continuity_ok_rate`;
//! - lower is better: `<stat>_<family>` for every stat in `mean`, `median`, `std`, `pNN`
//!   (`p99`, `p99.9`) and every lower-is-better family of [`super::table::FAMILIES`]
//!   (latencies, RTF, underrun, peak memory, video generation), plus `duration`, `failed`,
//!   `generator_lag_p99_ms`.
//!
//! Informational keys of the registry (`total_audio_duration_s`, `mean_audio_duration_s`)
//! have no direction and are refused as thresholds like unknown names.

use serde::{Deserialize, Serialize};

/// Whether larger or smaller values are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughputs, `rtfx`, goodput, `completed`, continuity rates.
    HigherIsBetter,
    /// Latencies, RTF, TTFP/TTFT/TPOT/ITL, durations of waiting, memory.
    LowerIsBetter,
}

impl Direction {
    /// `<=` for lower-is-better (the value may not exceed the threshold), `>=` otherwise.
    pub fn symbol(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => ">=",
            Direction::LowerIsBetter => "<=",
        }
    }

    /// Whether `value` is worse than `threshold` (equality passes).
    pub fn breached(self, value: f64, threshold: f64) -> bool {
        match self {
            Direction::HigherIsBetter => value < threshold,
            Direction::LowerIsBetter => value > threshold,
        }
    }
}

/// A short list of accepted names for error messages.
pub const ACCEPTED_HINT: &str = "a result key with a known direction: audio_throughput, \
request_throughput, output_throughput, total_token_throughput, request_goodput, slo_attainment, \
max_output_tokens_per_s, image_throughput, video_throughput, rtfx, completed, \
audio_continuity_ok_rate, capacity_request_rate, median_responses_per_s, median_audio_seconds_per_s, \
median_sessions_per_s, throughput_qps (higher is better); duration, failed, \
generator_lag_p99_ms, latency_{mean,median,p50,p90,p95,p99}, \
peak_memory_mb_{mean,median,max}, peak_memory_mb, gpu_mean_memory_mb, \
{mean,median,std,pNN}_{e2el_ms,ttft_ms,tpot_ms,itl_ms,audio_ttfp_ms,ttfp_ms,ttfa_audible_ms,\
audio_rtf,audio_underrun_s,peak_memory_mb,video_rtf,video_generation_ms,\
denoise_step_latency_ms} (lower is better)";

/// The direction of a result key, or `None` for names the registry does not know or
/// holds as informational only (a config error).
pub fn direction_of(metric: &str) -> Option<Direction> {
    super::lookup(metric)?.direction()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::*;

    #[test]
    fn higher_is_better_names() {
        for m in [
            "audio_throughput",
            "request_throughput",
            "output_throughput",
            "total_token_throughput",
            "request_goodput",
            "slo_attainment",
            "max_output_tokens_per_s",
            "image_throughput",
            "video_throughput",
            "rtfx",
            "completed",
            "audio_continuity_ok_rate",
        ] {
            assert_eq!(direction_of(m), Some(HigherIsBetter), "{m}");
        }
    }

    #[test]
    fn lower_is_better_names() {
        for m in [
            "mean_e2el_ms",
            "median_e2el_ms",
            "std_e2el_ms",
            "p99_e2el_ms",
            "p50_ttft_ms",
            "p99.9_tpot_ms",
            "mean_itl_ms",
            "median_audio_ttfp_ms",
            "p90_ttfa_audible_ms",
            "mean_audio_rtf",
            "median_audio_rtf",
            "p99_audio_rtf",
            "mean_audio_underrun_s",
            "p99_audio_underrun_s",
            "duration",
            "failed",
            "generator_lag_p99_ms",
            "mean_peak_memory_mb",
            "median_peak_memory_mb",
            "mean_video_rtf",
            "median_video_generation_ms",
            "mean_denoise_step_latency_ms",
        ] {
            assert_eq!(direction_of(m), Some(LowerIsBetter), "{m}");
        }
    }

    #[test]
    fn upstream_2026_names() {
        for m in [
            "median_responses_per_s",
            "throughput_qps",
            "median_audio_seconds_per_s",
        ] {
            assert_eq!(direction_of(m), Some(HigherIsBetter), "{m}");
        }
        for m in [
            "median_ttfp_ms",
            "latency_mean",
            "latency_p99",
            "peak_memory_mb_max",
        ] {
            assert_eq!(direction_of(m), Some(LowerIsBetter), "{m}");
        }
    }

    #[test]
    fn unknown_names_are_refused() {
        for m in [
            "",
            "throughput",
            "audio_throughput_x",
            "median_audio_ttfp",
            "p_e2el_ms",
            "p101_e2el_ms",
            "p99x_e2el_ms",
            "p99._e2el_ms",
            "max_e2el_ms",
            "mean_audio_duration_s",
            "total_audio_duration_s",
            "latency_avg",
            "throughput_rps",
            "MEAN_E2EL_MS",
        ] {
            assert_eq!(direction_of(m), None, "{m}");
        }
    }

    #[test]
    fn equality_is_not_a_breach() {
        assert!(!LowerIsBetter.breached(350.0, 350.0));
        assert!(!HigherIsBetter.breached(24.2, 24.2));
        assert!(LowerIsBetter.breached(350.1, 350.0));
        assert!(HigherIsBetter.breached(24.1, 24.2));
        assert!(!LowerIsBetter.breached(349.0, 350.0));
        assert!(!HigherIsBetter.breached(25.0, 24.2));
    }

    /// Every name the hint spells out, with its `{a,b}` groups expanded (`pNN` kept).
    fn hint_names() -> Vec<String> {
        fn expand(token: &str) -> Vec<String> {
            let Some(open) = token.find('{') else {
                return vec![token.to_string()];
            };
            let close = open + token[open..].find('}').unwrap();
            let (head, tail) = (&token[..open], &token[close + 1..]);
            token[open + 1..close]
                .split(',')
                .flat_map(|alt| expand(&format!("{head}{alt}{tail}")))
                .collect()
        }
        let body = ACCEPTED_HINT
            .strip_prefix("a result key with a known direction: ")
            .unwrap()
            .replace(" (higher is better);", ",")
            .replace(" (lower is better)", "");
        let (mut tokens, mut depth, mut start) = (Vec::new(), 0, 0);
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    tokens.push(body[start..i].trim().to_string());
                    start = i + 1;
                }
                _ => {}
            }
        }
        tokens.push(body[start..].trim().to_string());
        tokens.iter().flat_map(|t| expand(t)).collect()
    }

    #[test]
    fn the_hint_names_exactly_the_registry_keys_with_a_direction() {
        let hinted = hint_names();
        for m in crate::metrics::table::EXACT {
            let in_hint = hinted.iter().any(|h| h == m.name);
            assert_eq!(in_hint, m.direction.is_some(), "{}", m.name);
        }
        for f in crate::metrics::table::FAMILIES {
            let in_hint = hinted.iter().any(|h| *h == format!("mean_{}", f.name));
            assert_eq!(in_hint, f.direction.is_some(), "{}", f.name);
        }
        for h in &hinted {
            let name = h.replace("pNN", "p99");
            assert!(direction_of(&name).is_some(), "{h}");
        }
    }
}
