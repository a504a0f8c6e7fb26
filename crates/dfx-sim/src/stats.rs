//! Counters and the scheduler-lag histogram behind `/sim/stats` and the periodic log line.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::engine::EngineSnapshot;

/// Buckets per power of two of the lag histogram (≈ 19 % resolution).
const PER_OCTAVE: f64 = 4.0;
const BUCKETS: usize = 4 * 40;

/// Lateness of chunk emissions against the model's own schedule.
#[derive(Debug)]
struct LagHist {
    count: u64,
    sum_us: u64,
    max_us: u64,
    buckets: Vec<u64>,
}

impl LagHist {
    fn bucket(us: u64) -> usize {
        ((((us + 1) as f64).log2() * PER_OCTAVE) as usize).min(BUCKETS - 1)
    }

    fn upper_us(b: usize) -> f64 {
        (2f64.powf((b + 1) as f64 / PER_OCTAVE) - 1.0).max(0.0)
    }

    fn percentile_us(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Self::upper_us(b).min(self.max_us as f64);
            }
        }
        self.max_us as f64
    }
}

/// Shared counters of one simulator instance.
#[derive(Debug)]
pub(crate) struct Stats {
    pub speech_requests: AtomicU64,
    /// `POST /v1/chat/completions` requests admitted (omni profiles).
    pub chat_requests: AtomicU64,
    pub rejected: AtomicU64,
    pub injected_500: AtomicU64,
    pub inflight: AtomicUsize,
    pub peak_inflight: AtomicUsize,
    pub completed: AtomicU64,
    pub cancelled: AtomicU64,
    pub chunks: AtomicU64,
    pub pcm_bytes: AtomicU64,
    lag: Mutex<LagHist>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            speech_requests: AtomicU64::new(0),
            chat_requests: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            injected_500: AtomicU64::new(0),
            inflight: AtomicUsize::new(0),
            peak_inflight: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            chunks: AtomicU64::new(0),
            pcm_bytes: AtomicU64::new(0),
            lag: Mutex::new(LagHist {
                count: 0,
                sum_us: 0,
                max_us: 0,
                buckets: vec![0; BUCKETS],
            }),
        }
    }
}

/// A point-in-time copy for `/sim/stats`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StatsView {
    pub speech_requests: u64,
    pub chat_requests: u64,
    pub rejected_400: u64,
    pub injected_500: u64,
    pub inflight: usize,
    pub peak_inflight: usize,
    pub completed: u64,
    pub cancelled: u64,
    pub chunks_emitted: u64,
    pub pcm_bytes: u64,
    /// Emission lateness against the model's schedule, wall-clock milliseconds.
    pub lag_ms: LagView,
    pub engine: EngineSnapshot,
}

/// Lag summary in milliseconds (percentiles from a log histogram, ±19 %).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LagView {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Stats {
    pub(crate) fn record_lag(&self, lag: Duration) {
        let us = lag.as_micros().min(u128::from(u64::MAX)) as u64;
        let mut h = self.lag.lock().expect("lag lock");
        h.count += 1;
        h.sum_us += us;
        h.max_us = h.max_us.max(us);
        h.buckets[LagHist::bucket(us)] += 1;
    }

    /// Counts an admitted request; returns the new in-flight count.
    pub(crate) fn enter(&self) -> usize {
        let n = self.inflight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak_inflight.fetch_max(n, Ordering::SeqCst);
        n
    }

    /// The counters, with the TTS engine's latest figures.
    pub(crate) fn view(&self, engine: EngineSnapshot) -> StatsView {
        let h = self.lag.lock().expect("lag lock");
        let ld = |us: f64| (us / 1000.0 * 1000.0).round() / 1000.0;
        let lag_ms = LagView {
            count: h.count,
            mean: if h.count == 0 {
                0.0
            } else {
                ld(h.sum_us as f64 / h.count as f64)
            },
            p50: ld(h.percentile_us(50.0)),
            p99: ld(h.percentile_us(99.0)),
            max: ld(h.max_us as f64),
        };
        drop(h);
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatsView {
            speech_requests: get(&self.speech_requests),
            chat_requests: get(&self.chat_requests),
            rejected_400: get(&self.rejected),
            injected_500: get(&self.injected_500),
            inflight: self.inflight.load(Ordering::Relaxed),
            peak_inflight: self.peak_inflight.load(Ordering::Relaxed),
            completed: get(&self.completed),
            cancelled: get(&self.cancelled),
            chunks_emitted: get(&self.chunks),
            pcm_bytes: get(&self.pcm_bytes),
            lag_ms,
            engine,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_percentiles_are_close() {
        let s = Stats::default();
        for us in 1..=1000u64 {
            s.record_lag(Duration::from_micros(us));
        }
        let v = s.view(EngineSnapshot::default()).lag_ms;
        assert_eq!(v.count, 1000);
        assert!((v.p50 - 0.5).abs() < 0.12, "{v:?}");
        assert!((v.p99 - 0.99).abs() < 0.2, "{v:?}");
        assert_eq!(v.max, 1.0);
        assert!((v.mean - 0.5005).abs() < 0.001);
    }
}
