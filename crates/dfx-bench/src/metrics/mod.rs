//! The per-request metric definitions, one module each: the formula, its unit, which
//! way is better and the upstream code it follows are in each module's doc comment,
//! and every protocol (speech, chat-omni, realtime, native duplex; soaks and the
//! contract runner read the speech records) computes its figures through them.
//! Statistics over a step (`mean_`/`median_`/`pXX_` keys) are `native::keys` and
//! `native::stats`; these functions give the per-request samples they summarise.
//!
//! Upstream names below: vllm's `vllm/benchmarks/serve.py` (`calculate_metrics`),
//! vllm-omni's `vllm_omni/benchmarks/patch/patch.py` (the request functions
//! `async_request_openai_audio_speech`, `async_request_openai_chat_omni_completions`),
//! `vllm_omni/benchmarks/metrics/metrics.py` (its `calculate_metrics`) and
//! `vllm_omni/experimental/fullduplex/client.py` (`RealtimeEventCollector.timing_summary`).

use std::time::Instant;

pub(crate) mod audio_duration;
pub(crate) mod continuity;
pub(crate) mod e2el;
pub(crate) mod goodput;
pub(crate) mod itl;
pub(crate) mod rtf;
pub(crate) mod throughput;
pub(crate) mod tpot;
pub(crate) mod ttfa_audible;
pub(crate) mod ttfp;
pub(crate) mod ttft;

/// Seconds from `origin` to `at` (0 when `at` is earlier): the one clock difference
/// every latency here is.
pub(crate) fn elapsed_s(origin: Instant, at: Instant) -> f64 {
    at.saturating_duration_since(origin).as_secs_f64()
}

/// [`elapsed_s`] in milliseconds (the realtime and duplex per-turn unit).
pub(crate) fn elapsed_ms(origin: Instant, at: Instant) -> f64 {
    elapsed_s(origin, at) * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn elapsed_saturates_and_scales() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(250);
        assert_eq!(elapsed_s(t0, t1), 0.25);
        assert_eq!(elapsed_ms(t0, t1), 250.0);
        assert_eq!(elapsed_s(t1, t0), 0.0);
    }
}
