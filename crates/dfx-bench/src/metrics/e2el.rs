//! E2EL, end-to-end latency: the end of the response − send.
//!
//! Seconds; **lower is better**; successes only. Per protocol:
//! - speech: end of body − send ([`e2el_s`]);
//! - chat-omni: the last JSON message (not `[DONE]`) − send, 0 when the stream had none
//!   ([`last_message_s`]);
//! - realtime: the whole request, first connect to last close of every turn
//!   ([`e2el_s`] over the request's span).
//!
//! Upstream: vllm's `vllm/benchmarks/serve.py`, `calculate_metrics` (`e2els`, each
//! request's `output.latency`); vllm-omni's `async_request_openai_audio_speech`
//! (`output.latency = end_time - st`, `vllm_omni/benchmarks/patch/patch.py`).

use std::time::Instant;

/// E2EL of a request sent at `send` that ended at `end`.
pub(crate) fn e2el_s(send: Instant, end: Instant) -> f64 {
    super::elapsed_s(send, end)
}

/// E2EL of a chat stream: its last JSON message's time since send, 0 without one.
pub(crate) fn last_message_s(last_message_s: Option<f64>) -> f64 {
    last_message_s.unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn e2el_is_end_minus_send() {
        let t0 = Instant::now();
        assert_eq!(e2el_s(t0, t0 + Duration::from_millis(350)), 0.35);
        assert_eq!(last_message_s(Some(1.25)), 1.25);
        assert_eq!(last_message_s(None), 0.0);
    }
}
