//! TTFP, time to first audio packet: first audio − the request's origin.
//!
//! Seconds (realtime and duplex turns: milliseconds); **lower is better**. The origin
//! and the "first audio" event per protocol:
//! - speech: the first non-empty body read − send ([`first_read_s`]);
//! - chat-omni: the first `audio` message − send, 0 without audio ([`or_zero`]);
//! - realtime turn: the first audio delta − the turn start (first append); native duplex
//!   turn: the first audio delta − the `input_audio_buffer.commit` send ([`ttfp_ms`]).
//!
//! Upstream: `vllm_omni/benchmarks/patch/patch.py`, `async_request_openai_audio_speech`
//! (`output.audio_ttfp = timestamp - st` at the first non-empty chunk) and
//! `async_request_openai_chat_omni_completions` (first audio chunk); the duplex turn is
//! `RealtimeEventCollector.timing_summary` (`vllm_omni/experimental/fullduplex/client.py`).

use std::time::Instant;

/// Time of the first entry of a body-read timeline (`(seconds since send, bytes)` of
/// the non-empty reads); `None` when nothing arrived.
pub(crate) fn first_read_s(timeline: &[(f64, u64)]) -> Option<f64> {
    timeline.first().map(|c| c.0)
}

/// The first audio message's time since send, or 0 without audio (upstream leaves its
/// `audio_ttfp` at 0.0 then).
pub(crate) fn or_zero(first_audio_s: Option<f64>) -> f64 {
    first_audio_s.unwrap_or(0.0)
}

/// TTFP of a turn in milliseconds, from `origin` to its first audio delta.
pub(crate) fn ttfp_ms(origin: Instant, first_audio: Instant) -> f64 {
    super::elapsed_ms(origin, first_audio)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ttfp_is_the_first_audio_after_the_origin() {
        assert_eq!(first_read_s(&[(0.120, 4800), (0.250, 4800)]), Some(0.120));
        assert_eq!(first_read_s(&[]), None);
        assert_eq!(or_zero(Some(0.3)), 0.3);
        assert_eq!(or_zero(None), 0.0);
        let t0 = Instant::now();
        assert_eq!(ttfp_ms(t0, t0 + Duration::from_millis(420)), 420.0);
    }
}
