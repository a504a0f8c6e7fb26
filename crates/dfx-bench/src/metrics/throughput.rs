//! Throughputs: a step's totals per second of its duration, and the peak one-second
//! bucket.
//!
//! Per second; **higher is better**. [`per_s`] is `request_throughput` (completed /
//! duration), `output_throughput` (output tokens / duration), `total_token_throughput`
//! ((input + output tokens) / duration), `audio_throughput` (Σ audio duration /
//! duration), `image_throughput`, and the native duplex trial's `sessions_per_s`,
//! `responses_per_s` and `audio_seconds_per_s` over the trial's wall time.
//! [`fullest_second`] is `max_output_tokens_per_s`: token times in one-second buckets
//! from the first send, the fullest bucket.
//!
//! Upstream: vllm's `vllm/benchmarks/serve.py`, `calculate_metrics` (`completed /
//! dur_s`, `sum(actual_output_lens) / dur_s`, the `tokens_per_second` buckets) and
//! vllm-omni's `calculate_metrics` in `vllm_omni/benchmarks/metrics/metrics.py`
//! (`audio_throughput = sum(audio_duration) / dur_s`). dfx-perf differs deliberately:
//! a zero duration gives 0, not a division error.

use std::collections::BTreeMap;

/// `x` per second of `duration_s` (0 for a zero duration).
pub(crate) fn per_s(x: f64, duration_s: f64) -> f64 {
    if duration_s > 0.0 {
        x / duration_s
    } else {
        0.0
    }
}

/// The fullest one-second bucket of weighted events, `(seconds since the first send,
/// weight)`; negative times fall in the first bucket.
pub(crate) fn fullest_second(events: impl Iterator<Item = (f64, u64)>) -> u64 {
    let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
    for (t, w) in events {
        *buckets.entry(t.max(0.0) as u64).or_default() += w;
    }
    buckets.values().copied().max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_second_of_the_duration() {
        assert_eq!(per_s(12.0, 4.0), 3.0);
        assert_eq!(per_s(12.0, 0.0), 0.0);
    }

    #[test]
    fn fullest_second_sums_weights_per_bucket() {
        let ev = [(0.2, 3), (0.9, 4), (1.1, 5), (-0.1, 1)];
        assert_eq!(fullest_second(ev.into_iter()), 8);
        assert_eq!(fullest_second(std::iter::empty()), 0);
    }
}
