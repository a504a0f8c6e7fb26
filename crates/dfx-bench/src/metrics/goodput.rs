//! Goodput and SLO attainment of a step, for an entry with `goodput` (the SLOs are
//! parsed at load, [`dfx_core::goodput`]).
//!
//! - A request is **good** when it succeeded and meets every given SLO: its value of the
//!   SLO is at most the bound (`value <= bound`, the bound itself meets it). A figure the
//!   request does not have (a stream not measured for continuity) does not meet it.
//! - `request_goodput` = good requests / step duration; req/s, **higher is better**.
//! - `slo_attainment` = good requests / measured requests (completed + failed): a
//!   fraction from 0 to 1 (`null` with no measured request); **higher is better**. It
//!   answers how many of the step's users got the service the SLOs ask for.
//!
//! The per-request figures are the ones the step's statistics use (`SloValues` below);
//! `tpot` is 0 for a request with at most one output token (speech: always), as vllm
//! regards it.
//!
//! Upstream: vllm's `vllm/benchmarks/serve.py`, `calculate_metrics` (goodput counts
//! successful requests with `all(s >= r ...)` over the given SLOs, `tpot = 0` when
//! `output_len <= 1`, `request_goodput = good_completed / dur_s`) and `benchmark` (the
//! result's `request_goodput` is `None` without `--goodput`; the block prints `Request
//! goodput (req/s):` after the request throughput). vllm writes no attainment and no
//! per-SLO count; `slo_attainment` is dfx-perf's.

use dfx_core::goodput::{GoodputSpec, Slo};

use super::throughput;

/// One successful request's figures in the SLOs' units (ms; `audio_rtf` a ratio);
/// `None` where the request has no such figure.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct SloValues {
    /// Time to first token (speech: to the first audio bytes), ms.
    pub ttft_ms: Option<f64>,
    /// Time per output token after the first, ms (0 for at most one token).
    pub tpot_ms: Option<f64>,
    /// End-to-end latency, ms.
    pub e2el_ms: Option<f64>,
    /// Time to the first audio packet, ms.
    pub audio_ttfp_ms: Option<f64>,
    /// Real-time factor.
    pub audio_rtf: Option<f64>,
    /// Largest playback underrun of the stream, ms (continuity metric).
    pub underrun_ms: Option<f64>,
}

impl SloValues {
    fn of(&self, slo: Slo) -> Option<f64> {
        match slo {
            Slo::Ttft => self.ttft_ms,
            Slo::Tpot => self.tpot_ms,
            Slo::E2el => self.e2el_ms,
            Slo::AudioTtfp => self.audio_ttfp_ms,
            Slo::AudioRtf => self.audio_rtf,
            Slo::Continuity => self.underrun_ms,
        }
    }

    /// Whether the request meets every SLO of `spec`.
    pub(crate) fn good(&self, spec: &GoodputSpec) -> bool {
        spec.slos()
            .iter()
            .all(|b| self.of(b.slo).is_some_and(|v| b.met(v)))
    }
}

/// The good requests of a step among its measured ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Goodput {
    /// Successful requests meeting every SLO.
    pub good: usize,
    /// Measured requests, completed + failed.
    pub measured: usize,
}

impl Goodput {
    /// Counts the measured requests: `Some(values)` for a success, `None` for a failure.
    pub(crate) fn count(
        spec: &GoodputSpec,
        requests: impl Iterator<Item = Option<SloValues>>,
    ) -> Self {
        let mut g = Goodput {
            good: 0,
            measured: 0,
        };
        for r in requests {
            g.measured += 1;
            g.good += usize::from(r.is_some_and(|v| v.good(spec)));
        }
        g
    }

    /// `request_goodput`: good requests per second of the step (0 for a zero duration).
    pub(crate) fn request_goodput(&self, duration_s: f64) -> f64 {
        throughput::per_s(self.good as f64, duration_s)
    }

    /// `slo_attainment`: good / measured; `None` with no measured request.
    pub(crate) fn attainment(&self) -> Option<f64> {
        (self.measured > 0).then(|| self.good as f64 / self.measured as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(text: &str) -> GoodputSpec {
        GoodputSpec::parse(&json!(text)).unwrap()
    }

    fn chat(ttft_ms: f64, tpot_ms: f64, e2el_ms: f64) -> Option<SloValues> {
        Some(SloValues {
            ttft_ms: Some(ttft_ms),
            tpot_ms: Some(tpot_ms),
            e2el_ms: Some(e2el_ms),
            ..SloValues::default()
        })
    }

    /// Hand-made: SLOs ttft ≤ 100 ms and e2el ≤ 1000 ms over five requests.
    /// #0 (100, 1000) sits exactly on both bounds: good (vllm's `s >= r`).
    /// #1 (100.001, 500) misses ttft. #2 (50, 1000.5) misses e2el. #3 (10, 10) good.
    /// #4 failed. Good 2 of 5 → attainment 0.4; over 4 s, goodput 0.5 req/s.
    #[test]
    fn counts_requests_meeting_every_slo_bounds_included() {
        let s = spec("ttft:100 e2el:1000");
        let reqs = [
            chat(100.0, 999.0, 1000.0),
            chat(100.001, 0.0, 500.0),
            chat(50.0, 0.0, 1000.5),
            chat(10.0, 0.0, 10.0),
            None,
        ];
        let g = Goodput::count(&s, reqs.into_iter());
        assert_eq!(
            g,
            Goodput {
                good: 2,
                measured: 5
            }
        );
        assert_eq!(g.attainment(), Some(0.4));
        assert_eq!(g.request_goodput(4.0), 0.5);
        // tpot was not asked for: #0's 999 ms TPOT does not count.
        assert!(chat(100.0, 999.0, 1000.0).unwrap().good(&s));
        assert!(!chat(100.0, 999.0, 1000.0).unwrap().good(&spec("tpot:50")));
    }

    #[test]
    fn a_missing_figure_does_not_meet_its_slo() {
        let unmeasured = SloValues {
            e2el_ms: Some(10.0),
            underrun_ms: None,
            ..SloValues::default()
        };
        assert!(unmeasured.good(&spec("e2el:100")));
        assert!(!unmeasured.good(&spec("e2el:100 continuity:100")));
        let starved = SloValues {
            underrun_ms: Some(100.5),
            ..unmeasured
        };
        assert!(!starved.good(&spec("continuity:100")));
        let fine = SloValues {
            underrun_ms: Some(0.0),
            audio_rtf: Some(0.5),
            ..unmeasured
        };
        assert!(fine.good(&spec("continuity:100 audio_rtf:0.5")));
        assert!(!fine.good(&spec("audio_rtf:0.49")));
    }

    #[test]
    fn no_request_has_no_attainment_and_zero_duration_no_goodput() {
        let g = Goodput::count(&spec("ttft:1"), std::iter::empty());
        assert_eq!(g.attainment(), None);
        assert_eq!(g.request_goodput(0.0), 0.0);
        let all_failed = Goodput::count(&spec("ttft:1"), [None, None].into_iter());
        assert_eq!(all_failed.attainment(), Some(0.0));
    }
}
