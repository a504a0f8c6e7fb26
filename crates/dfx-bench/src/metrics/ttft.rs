//! TTFT, time to first token: the first text carrying tokens − the request's origin.
//!
//! Seconds (realtime and duplex turns: milliseconds); **lower is better**. Per protocol:
//! - chat-omni: the first `text` message carrying tokens − send, 0 when none came
//!   ([`or_zero`]; the stream parser marks that message);
//! - realtime turn: the first transcript or text delta − the turn start, unless the
//!   server reported its own `ttft_ms`; native duplex turn: the first non-empty text
//!   delta − the commit send ([`ttft_ms`]).
//! - speech: not defined (no text tokens), as upstream.
//!
//! Upstream: vllm's `vllm/benchmarks/serve.py`, `calculate_metrics` (`ttfts`, from each
//! request function's `output.ttft`); vllm-omni's
//! `async_request_openai_chat_omni_completions` (`vllm_omni/benchmarks/patch/patch.py`)
//! and `RealtimeEventCollector.timing_summary` for duplex turns.

use std::time::Instant;

/// TTFT of a chat request: the first token message's time since send, 0 without one
/// (upstream's `output.ttft` default).
pub(crate) fn or_zero(first_token_s: Option<f64>) -> f64 {
    first_token_s.unwrap_or(0.0)
}

/// TTFT of a turn in milliseconds, from `origin` to its first text delta.
pub(crate) fn ttft_ms(origin: Instant, first_text: Instant) -> f64 {
    super::elapsed_ms(origin, first_text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ttft_is_the_first_token_after_the_origin() {
        assert_eq!(or_zero(Some(0.1)), 0.1);
        assert_eq!(or_zero(None), 0.0);
        let t0 = Instant::now();
        assert_eq!(ttft_ms(t0, t0 + Duration::from_millis(75)), 75.0);
        assert_eq!(ttft_ms(t0 + Duration::from_millis(5), t0), 0.0);
    }
}
