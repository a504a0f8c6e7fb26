//! RTF, real-time factor: generation time / audio duration, 0 without audio.
//!
//! Dimensionless; **lower is better** (below 1 the audio is produced faster than it
//! plays). The generation time per protocol:
//! - speech: E2EL (end of body − send);
//! - chat-omni: the last audio message − send (not E2EL);
//! - realtime turn: the last audio delta − the turn start, rounded to 6 places
//!   ([`round6`]); the request's RTF is the mean over its turns;
//! - native duplex turn: the last audio delta − the commit send, rounded to 6 places;
//!   `null` (not 0) without audio, as upstream's collector.
//!
//! Upstream: vllm-omni's `vllm_omni/benchmarks/patch/patch.py`,
//! `async_request_openai_audio_speech` (`output.audio_rtf = output.latency /
//! output.audio_duration`, else 0) and `async_request_openai_chat_omni_completions`
//! (`audio_generate_time / audio_duration`); `RealtimeEventCollector.timing_summary`
//! (`vllm_omni/experimental/fullduplex/client.py`) for duplex turns. Upstream's
//! `streaming_audio_rtf` ((latency − ttfp) / duration) is not computed here.

/// `generation / audio_duration` (both in the same unit); 0 when there is no audio.
pub(crate) fn rtf(generation: f64, audio_duration: f64) -> f64 {
    if audio_duration > 0.0 {
        generation / audio_duration
    } else {
        0.0
    }
}

/// Rounds to 6 decimals (upstream's rounding of the realtime and duplex RTF).
pub(crate) fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtf_is_generation_over_duration_and_zero_without_audio() {
        assert_eq!(rtf(0.3, 0.5), 0.6);
        assert_eq!(rtf(0.3, 0.0), 0.0);
        // 1234.5 ms of generation for 3000 ms of audio: 0.4115.
        assert_eq!(round6(rtf(1234.5, 3000.0)), 0.4115);
        assert_eq!(round6(2.0 / 3.0), 0.666667);
    }
}
