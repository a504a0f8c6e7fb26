//! The registry's data: every result key dfx-perf names anywhere (thresholds, summaries,
//! reports, parity, history), with its direction, unit and label.

use super::Direction::{HigherIsBetter as Higher, LowerIsBetter as Lower};
use super::Metric;

const fn m(
    name: &'static str,
    direction: Option<super::Direction>,
    unit: &'static str,
    label: &'static str,
) -> Metric {
    Metric {
        name,
        direction,
        unit,
        label,
    }
}

/// Result keys matched by their exact name.
pub(crate) const EXACT: &[Metric] = &[
    m(
        "audio_throughput",
        Some(Higher),
        "audio s / s",
        "Audio throughput",
    ),
    m(
        "request_throughput",
        Some(Higher),
        "req/s",
        "Request throughput",
    ),
    m(
        "output_throughput",
        Some(Higher),
        "tok/s",
        "Output throughput",
    ),
    m(
        "total_token_throughput",
        Some(Higher),
        "tok/s",
        "Total token throughput",
    ),
    m("request_goodput", Some(Higher), "req/s", "Request goodput"),
    // the native bench's `goodput` (dfx-perf): good requests / all measured requests
    m("slo_attainment", Some(Higher), "", "SLO attainment"),
    m(
        "max_output_tokens_per_s",
        Some(Higher),
        "tok/s",
        "Peak output tokens",
    ),
    m(
        "image_throughput",
        Some(Higher),
        "images/s",
        "Image throughput",
    ),
    m(
        "video_throughput",
        Some(Higher),
        "videos/s",
        "Video throughput",
    ),
    m("rtfx", Some(Higher), "", "RTFx"),
    m("completed", Some(Higher), "requests", "Completed"),
    m(
        "audio_continuity_ok_rate",
        Some(Higher),
        "",
        "Audio continuity OK rate",
    ),
    // a capacity search (dfx-perf): the highest rate meeting its criteria
    m(
        "capacity_request_rate",
        Some(Higher),
        "req/s",
        "Capacity request rate",
    ),
    // native-duplex runner (upstream 2026): medians over repeats
    m(
        "median_responses_per_s",
        Some(Higher),
        "responses/s",
        "Responses per second",
    ),
    m(
        "median_audio_seconds_per_s",
        Some(Higher),
        "audio s / s",
        "Audio seconds per second",
    ),
    m(
        "median_sessions_per_s",
        Some(Higher),
        "sessions/s",
        "Sessions per second",
    ),
    // upstream's diffusion benchmark script
    m("throughput_qps", Some(Higher), "req/s", "Throughput"),
    m("duration", Some(Lower), "s", "Duration"),
    m("failed", Some(Lower), "requests", "Failed"),
    m(
        "generator_lag_p99_ms",
        Some(Lower),
        "ms",
        "Generator lag p99",
    ),
    // upstream's diffusion benchmark script (latencies in seconds, memory in MB)
    m("latency_mean", Some(Lower), "s", "Latency mean"),
    m("latency_median", Some(Lower), "s", "Latency median"),
    m("latency_p50", Some(Lower), "s", "Latency p50"),
    m("latency_p90", Some(Lower), "s", "Latency p90"),
    m("latency_p95", Some(Lower), "s", "Latency p95"),
    m("latency_p99", Some(Lower), "s", "Latency p99"),
    m("peak_memory_mb_mean", Some(Lower), "MB", "Peak memory mean"),
    m(
        "peak_memory_mb_median",
        Some(Lower),
        "MB",
        "Peak memory median",
    ),
    m("peak_memory_mb_max", Some(Lower), "MB", "Peak memory max"),
    // GPU samples beside a local server (dfx-perf, MiB)
    m("peak_memory_mb", Some(Lower), "MiB", "Peak GPU memory"),
    m("gpu_mean_memory_mb", Some(Lower), "MiB", "Mean GPU memory"),
    // informational: shown, never a threshold
    m("total_audio_duration_s", None, "s", "Total audio duration"),
    m(
        "max_concurrent_requests",
        None,
        "requests",
        "Max concurrent requests",
    ),
];

/// Metric families, named in results with a statistic prefix (`mean_`, `median_`, `std_`,
/// `p<N>_`): `median_audio_ttfp_ms` is the median of the `audio_ttfp_ms` family.
pub(crate) const FAMILIES: &[Metric] = &[
    m("e2el_ms", Some(Lower), "ms", "E2EL"),
    m("ttft_ms", Some(Lower), "ms", "TTFT"),
    m("tpot_ms", Some(Lower), "ms", "TPOT"),
    m("itl_ms", Some(Lower), "ms", "ITL"),
    m("audio_ttfp_ms", Some(Lower), "ms", "TTFP"),
    m("ttfp_ms", Some(Lower), "ms", "TTFP"),
    m("ttfa_audible_ms", Some(Lower), "ms", "TTFA (audible)"),
    m("audio_rtf", Some(Lower), "", "RTF"),
    m("audio_underrun_s", Some(Lower), "s", "Audio underrun"),
    m("peak_memory_mb", Some(Lower), "MB", "Peak memory"),
    m("video_rtf", Some(Lower), "", "Video RTF"),
    m("video_generation_ms", Some(Lower), "ms", "Video generation"),
    m(
        "denoise_step_latency_ms",
        Some(Lower),
        "ms",
        "Denoise step latency",
    ),
    // informational: shown, never a threshold
    m("audio_duration_s", None, "s", "Audio duration"),
];

/// Every key with a direction is never negative (latencies, throughputs, RTF, durations,
/// counts, memory). These are the ones that can also be exactly 0 when measured, so a
/// ceiling of 0 can hold ("no failures", "no underrun"): exact names, then family stems.
/// Any `std_` statistic can be 0 too.
pub(crate) const CAN_BE_ZERO: &[&str] = &["failed", "generator_lag_p99_ms", "audio_underrun_s"];
