//! ITL, inter-token latency: the gaps between a stream's token arrivals.
//!
//! Seconds per token; **lower is better**. Each text message after the first that
//! carries k tokens adds k equal samples, (its time − the previous token message's
//! time) / k; a first message of k tokens adds k − 1 zeros (its tokens arrived
//! together). Chat-omni only (speech has no tokens; realtime and duplex turns report
//! none).
//!
//! Upstream: vllm's `vllm/benchmarks/serve.py`, `calculate_metrics` (`itls += output.itl`)
//! over the request function's `output.itl` (vllm-omni's
//! `async_request_openai_chat_omni_completions`, `vllm_omni/benchmarks/patch/patch.py`).
//! dfx-perf differs: the newest upstream request function appends one gap per text
//! message (`timestamp - most_recent_timestamp`); here a message bundling k tokens
//! gives k samples, so the ITL count matches the token count (`docs/bench.md`,
//! "openai-chat-omni"). Σ ITL, and so the text latency, is the same either way.

/// The ITL samples a token message adds: `(value, count)`. `previous_s` is the time of
/// the previous message that carried tokens (`None` for the first), `t_s` this one's,
/// `tokens` its token count (> 0).
pub(crate) fn message_itls(previous_s: Option<f64>, t_s: f64, tokens: u64) -> (f64, u64) {
    match previous_s {
        None => (0.0, tokens.saturating_sub(1)),
        Some(p) => ((t_s - p) / tokens as f64, tokens),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_of_k_tokens_adds_k_equal_shares() {
        // First message with 3 tokens: two zero gaps.
        assert_eq!(message_itls(None, 0.125, 3), (0.0, 2));
        assert_eq!(message_itls(None, 0.125, 1), (0.0, 0));
        // 0.25 → 0.75 s with 4 tokens: 4 gaps of 0.125 s.
        assert_eq!(message_itls(Some(0.25), 0.75, 4), (0.125, 4));
    }
}
