//! One sentence per registry entry: what the number is (`docs/bench.md` has the full
//! definitions and where each bench measures it). The generated reference
//! (`docs/reference/metrics.md`) prints them; a test keeps this table and the registry
//! (`table`) naming the same keys.

/// Exact keys: (name, definition).
const EXACT: &[(&str, &str)] = &[
    (
        "audio_throughput",
        "Σ audio duration of the successes / step duration: audio seconds per wall second (aggregate RTFx)",
    ),
    ("request_throughput", "completed requests / step duration"),
    ("output_throughput", "output tokens / step duration"),
    (
        "total_token_throughput",
        "input + output tokens / step duration",
    ),
    (
        "request_goodput",
        "successful requests meeting every `goodput` SLO (value <= bound; realtime: sessions whose every turn does) / step duration (`vllm bench`, native bench)",
    ),
    (
        "slo_attainment",
        "native bench, with `goodput`: requests meeting every SLO (realtime: sessions whose every turn does) / measured requests (completed + failed), a fraction 0..1",
    ),
    (
        "max_output_tokens_per_s",
        "the fullest one-second bucket of output tokens over the step",
    ),
    (
        "image_throughput",
        "images generated per second (diffusion entries)",
    ),
    (
        "video_throughput",
        "videos generated per second (diffusion entries)",
    ),
    (
        "rtfx",
        "upstream's real-time factor key of the result (0 for TTS, where `audio_throughput` is the aggregate)",
    ),
    (
        "completed",
        "measured requests that succeeded (warmups excluded)",
    ),
    (
        "audio_continuity_ok_rate",
        "share of measured streams whose largest playback deficit (`underrun_s`) is at most 0.1 s",
    ),
    (
        "capacity_request_rate",
        "a capacity search's highest request rate that met its criteria",
    ),
    (
        "median_responses_per_s",
        "native-duplex: median over the repeats of responses per second",
    ),
    (
        "median_audio_seconds_per_s",
        "native-duplex: median over the repeats of audio seconds per second",
    ),
    (
        "median_sessions_per_s",
        "native-duplex: median over the repeats of sessions per second",
    ),
    (
        "throughput_qps",
        "diffusion script: completed requests per second",
    ),
    (
        "duration",
        "wall time of the measured part of the step: its start to the last request's end",
    ),
    (
        "failed",
        "measured requests that failed (HTTP, stream, stall, timeout, …)",
    ),
    (
        "generator_lag_p99_ms",
        "p99 of the open-loop send lag: actual send − planned send − slot wait",
    ),
    ("latency_mean", "diffusion script: mean request latency"),
    ("latency_median", "diffusion script: median request latency"),
    ("latency_p50", "diffusion script: p50 request latency"),
    ("latency_p90", "diffusion script: p90 request latency"),
    ("latency_p95", "diffusion script: p95 request latency"),
    ("latency_p99", "diffusion script: p99 request latency"),
    (
        "peak_memory_mb_mean",
        "diffusion script: mean of the server's reported peak memory",
    ),
    (
        "peak_memory_mb_median",
        "diffusion script: median of the server's reported peak memory",
    ),
    (
        "peak_memory_mb_max",
        "diffusion script: largest reported peak memory",
    ),
    (
        "peak_memory_mb",
        "largest GPU memory used by the server's GPUs over the trial (`nvidia-smi` samples every 0.5 s)",
    ),
    (
        "gpu_mean_memory_mb",
        "mean GPU memory used by the server's GPUs over the trial",
    ),
    (
        "total_audio_duration_s",
        "Σ audio duration of the successes",
    ),
    (
        "max_concurrent_requests",
        "most successes in flight at once",
    ),
];

/// Families (named `<stat>_<family>`): (stem, definition of one request's value).
const FAMILIES: &[(&str, &str)] = &[
    (
        "e2el_ms",
        "end-to-end latency: last byte of the response − send",
    ),
    (
        "ttft_ms",
        "time to first token: first non-empty text output − send",
    ),
    (
        "tpot_ms",
        "time per output token after the first: (E2EL − TTFT) / (output tokens − 1)",
    ),
    (
        "itl_ms",
        "inter-token latency: the gaps between consecutive output chunks",
    ),
    (
        "audio_ttfp_ms",
        "time to first audio packet: first audio byte − send",
    ),
    (
        "ttfp_ms",
        "realtime / native-duplex: first non-empty audio delta − commit (or turn start)",
    ),
    (
        "ttfa_audible_ms",
        "time to audible audio: TTFP + the clip's leading silence (5 ms RMS windows, 5 % of its peak)",
    ),
    (
        "audio_rtf",
        "real-time factor: E2EL / audio duration (below 1 is faster than real time)",
    ),
    (
        "audio_underrun_s",
        "playback continuity: the largest deficit of a player that starts at the first chunk with no pre-buffer",
    ),
    (
        "peak_memory_mb",
        "peak memory as the bench reports it per request or sample (diffusion script)",
    ),
    (
        "video_rtf",
        "diffusion script: generation time / video duration",
    ),
    (
        "video_generation_ms",
        "diffusion script: time to generate one video",
    ),
    (
        "denoise_step_latency_ms",
        "diffusion script: time of one denoising step",
    ),
    (
        "audio_duration_s",
        "audio duration of one response (PCM bytes / (rate · 2 · channels))",
    ),
];

/// The definition of an exact registry key.
pub fn exact_definition(name: &str) -> Option<&'static str> {
    EXACT.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// The definition of one request's value of a registry family.
pub fn family_definition(stem: &str) -> Option<&'static str> {
    FAMILIES.iter().find(|(n, _)| *n == stem).map(|(_, d)| *d)
}

#[cfg(test)]
mod tests {
    use super::super::table;
    use super::*;

    #[test]
    fn every_registry_entry_has_exactly_one_definition() {
        for (defs, entries) in [(EXACT, table::EXACT), (FAMILIES, table::FAMILIES)] {
            let names: Vec<&str> = entries.iter().map(|m| m.name).collect();
            let defined: Vec<&str> = defs.iter().map(|(n, _)| *n).collect();
            for n in &names {
                assert_eq!(defined.iter().filter(|d| *d == n).count(), 1, "{n}");
            }
            for d in &defined {
                assert!(names.contains(d), "{d} is defined but not in the registry");
            }
        }
    }
}
