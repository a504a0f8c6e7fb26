//! TPOT, time per output token after the first.
//!
//! Seconds per token; **lower is better**; chat-omni only, and only for successes with
//! more than one output token. The first rule that gives a positive value wins:
//! 1. the mean ITL;
//! 2. (text latency − TTFT) / (output tokens − 1), text latency being TTFT + Σ ITL
//!    ([`text_latency_s`]);
//! 3. stage `"0"`'s own timings when its `num_tokens_out` equals the output tokens: its
//!    `vllm_itls_ms` (exactly output − 1 values, which then replace the ITLs), else its
//!    positive `vllm_tpot_ms`.
//!
//! Upstream: vllm-omni's `calculate_metrics` in `vllm_omni/benchmarks/metrics/metrics.py`
//! (mean ITL, else `(text_latency - ttft) / (output_len - 1)`), after vllm's
//! `vllm/benchmarks/serve.py` `calculate_metrics` (`(latency - ttft) / (output_len -
//! 1)`); rule 3 follows the stage metrics vllm-omni 0.30's stream carries (`docs/bench.md`,
//! "openai-chat-omni").

/// Stage 0's own timings from a stream's stage metrics (rule 3).
#[derive(Debug, Clone, Default)]
pub(crate) struct Stage0 {
    /// Its `num_tokens_out`.
    pub tokens_out: Option<u64>,
    /// Its `vllm_itls_ms`, the numeric entries.
    pub itls_ms: Option<Vec<f64>>,
    /// Its `vllm_tpot_ms`.
    pub tpot_ms: Option<f64>,
}

/// What a request's TPOT is, and the ITLs when stage 0's replaced the client's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tpot {
    /// TPOT in seconds; `None` when not measurable.
    pub tpot_s: Option<f64>,
    /// Stage 0's ITLs in seconds when rule 3 used them.
    pub stage_itl_s: Option<Vec<f64>>,
}

/// Text latency: `ttft_s + Σ itl_s`.
pub(crate) fn text_latency_s(ttft_s: f64, itl_s: &[f64]) -> f64 {
    ttft_s + itl_s.iter().sum::<f64>()
}

/// TPOT of a request of `output_len` tokens. `mean` is the statistics' mean
/// (`native::stats::mean`, numpy's), passed in so the definitions stay below the
/// statistics.
pub(crate) fn tpot(
    output_len: u64,
    itl_s: &[f64],
    (ttft_s, text_latency_s): (f64, f64),
    stage0: Option<&Stage0>,
    mean: fn(&[f64]) -> f64,
) -> Tpot {
    let found = |tpot_s| Tpot {
        tpot_s,
        stage_itl_s: None,
    };
    if output_len <= 1 {
        return found(None);
    }
    if !itl_s.is_empty() {
        let m = mean(itl_s);
        if m > 0.0 {
            return found(Some(m));
        }
    }
    let x = (text_latency_s - ttft_s) / (output_len - 1) as f64;
    if x > 0.0 {
        return found(Some(x));
    }
    let Some(s0) = stage0.filter(|s| s.tokens_out == Some(output_len)) else {
        return found(None);
    };
    if let Some(ms) = s0
        .itls_ms
        .as_ref()
        .filter(|v| v.len() as u64 == output_len - 1)
    {
        let itl: Vec<f64> = ms.iter().map(|m| m / 1000.0).collect();
        return Tpot {
            tpot_s: Some(mean(&itl)),
            stage_itl_s: Some(itl),
        };
    }
    found(s0.tpot_ms.filter(|t| *t > 0.0).map(|t| t / 1000.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean(xs: &[f64]) -> f64 {
        xs.iter().sum::<f64>() / xs.len() as f64
    }

    #[test]
    fn mean_itl_then_text_latency_then_stage_zero() {
        let none = |t: Tpot| t.tpot_s;
        // Rule 1: ITLs 0.02 and 0.04 → 0.03.
        assert_eq!(
            none(tpot(3, &[0.02, 0.04], (0.1, 0.16), None, mean)),
            Some(0.03)
        );
        // One token: not measurable.
        assert_eq!(none(tpot(1, &[0.02], (0.1, 0.12), None, mean)), None);
        // Rule 2: zero ITLs; (0.5 − 0.1) / (5 − 1) = 0.1.
        assert_eq!(none(tpot(5, &[0.0; 4], (0.1, 0.5), None, mean)), Some(0.1));
        // Rule 3: stage 0 with matching tokens and 2 ITLs of 30 and 50 ms → 0.04 s.
        let s0 = Stage0 {
            tokens_out: Some(3),
            itls_ms: Some(vec![30.0, 50.0]),
            tpot_ms: Some(7.0),
        };
        let t = tpot(3, &[], (0.1, 0.1), Some(&s0), mean);
        assert_eq!(t.tpot_s, Some(0.04));
        assert_eq!(t.stage_itl_s, Some(vec![0.03, 0.05]));
        // Wrong ITL count: its vllm_tpot_ms; other token count: nothing.
        let s0 = Stage0 {
            itls_ms: Some(vec![30.0]),
            ..s0
        };
        assert_eq!(none(tpot(3, &[], (0.1, 0.1), Some(&s0), mean)), Some(0.007));
        assert_eq!(none(tpot(4, &[], (0.1, 0.1), Some(&s0), mean)), None);
        assert_eq!(text_latency_s(0.25, &[0.25, 0.5]), 1.0);
    }
}
