//! Streaming continuity and underrun, vllm-omni's playback rule: a player starts at the
//! first chunk and plays at the stream's byte rate with no pre-buffer; whenever a later
//! chunk arrives after the player has consumed everything received before it, the
//! listener heard a gap (an underrun).
//!
//! - `underrun_s` = max over chunks *i* > 0 of ((t_i − t_0) · bytes_per_s − bytes before
//!   *i*) / bytes_per_s, counting positive deficits only; seconds, **lower is better**.
//! - `underrun_events` = chunks with a positive deficit; count, lower is better.
//! - continuous at threshold *T* ⇔ `underrun_s ≤ T`; upstream's verdict uses 0.1 s;
//!   higher (continuous) is better.
//!
//! Upstream: `vllm_omni/benchmarks/patch/patch.py`, `async_request_openai_audio_speech`
//! (its silent player's `max_underrun_ms`, `underrun_event_count` and
//! `audio_continuity_ok = audio_underrun_s <= CONTINUITY_THRESHOLD_S`); the step's
//! `audio_continuity_ok_rate` is `calculate_metrics` in
//! `vllm_omni/benchmarks/metrics/metrics.py`. dfx-perf differs deliberately: an empty
//! stream has no verdict (upstream counts it continuous), and it also records the 50 ms
//! and 200 ms verdicts.

/// Underrun threshold (seconds) for the `continuous` verdict upstream uses.
pub(crate) const DEFAULT_THRESHOLD_S: f64 = 0.1;

/// Thresholds (seconds) dfx-perf records a verdict for (TheTalker convention).
pub(crate) const VERDICT_THRESHOLDS_S: [f64; 3] = [0.05, 0.1, 0.2];

/// Continuity of one stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Continuity {
    /// Largest deficit seen, in seconds of audio (0 when the player never starved).
    pub max_underrun_s: f64,
    /// Chunks that arrived after the player had run dry.
    pub underrun_events: u32,
}

impl Continuity {
    /// Whether the stream played without a gap longer than `threshold_s`.
    pub(crate) fn continuous(&self, threshold_s: f64) -> bool {
        self.max_underrun_s <= threshold_s
    }
}

/// Analyses a chunk timeline of `(seconds since send, bytes)` pairs (non-empty reads, in
/// arrival order) for a stream played at `bytes_per_s`. `None` for an empty timeline:
/// nothing was played, so continuity was not measured (upstream counts it as continuous;
/// dfx-perf reports it as not measured).
pub(crate) fn analyse(timeline: &[(f64, u64)], bytes_per_s: f64) -> Option<Continuity> {
    let (&(t0, first), rest) = timeline.split_first()?;
    let mut received = first as f64;
    let mut out = Continuity {
        max_underrun_s: 0.0,
        underrun_events: 0,
    };
    for &(t, bytes) in rest {
        let deficit = (t - t0) * bytes_per_s - received;
        // Deficits below a millionth of a byte are floating-point noise of exactly
        // on-time chunks, not starvation.
        if deficit > 1e-6 {
            out.underrun_events += 1;
            out.max_underrun_s = out.max_underrun_s.max(deficit / bytes_per_s);
        }
        received += bytes as f64;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Hand-computed: 24 kHz mono (48 000 B/s), 0.1 s chunks (4800 B).
    /// t=0.15: played 2400 B, had 4800 → fine. t=0.30: played 9600, had 9600 → deficit 0,
    /// not an underrun. t=0.90: played 38 400, had 14 400 → 24 000 B = 0.5 s.
    /// t=0.95: played 40 800, had 19 200 → 0.45 s. Max 0.5 s, 2 events.
    #[test]
    fn worked_example() {
        let tl = [
            (0.10, 4800),
            (0.15, 4800),
            (0.30, 4800),
            (0.90, 4800),
            (0.95, 4800),
        ];
        let c = analyse(&tl, 48_000.0).unwrap();
        assert!(close(c.max_underrun_s, 0.5), "{c:?}");
        assert_eq!(c.underrun_events, 2);
        for th in VERDICT_THRESHOLDS_S {
            assert!(!c.continuous(th));
        }
    }

    #[test]
    fn steady_stream_is_continuous_and_small_gap_passes_loose_thresholds() {
        // Chunks of 0.1 s arriving every 0.1 s: never starves.
        let tl: Vec<(f64, u64)> = (0..10).map(|i| (0.2 + 0.1 * i as f64, 4800)).collect();
        let c = analyse(&tl, 48_000.0).unwrap();
        assert_eq!(c.underrun_events, 0);
        assert_eq!(c.max_underrun_s, 0.0);
        // A 0.08 s late chunk: deficit 0.08 s → fails 0.05, passes 0.1 and 0.2.
        let tl = [(0.0, 4800), (0.18, 4800)];
        let c = analyse(&tl, 48_000.0).unwrap();
        assert!(close(c.max_underrun_s, 0.08));
        assert!(!c.continuous(0.05));
        assert!(c.continuous(DEFAULT_THRESHOLD_S));
        assert!(c.continuous(0.2));
    }

    #[test]
    fn empty_timeline_is_not_measured_and_single_chunk_is_continuous() {
        assert_eq!(analyse(&[], 48_000.0), None);
        let c = analyse(&[(0.3, 10)], 48_000.0).unwrap();
        assert_eq!(c.max_underrun_s, 0.0);
        assert!(c.continuous(0.05));
    }
}
