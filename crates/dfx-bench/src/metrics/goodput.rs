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
//! - A realtime step counts sessions (a user: one benchmark request of several turns):
//!   a session is good when it succeeded and every turn meets every SLO with the turn's
//!   own figures ([`Goodput::count_sessions`]; a request is a session of one part).
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

/// Whether a successful unit is good: at least one part, and every part meets every SLO.
fn every_part_good(spec: &GoodputSpec, parts: impl IntoIterator<Item = SloValues>) -> bool {
    let mut any = false;
    for p in parts {
        if !p.good(spec) {
            return false;
        }
        any = true;
    }
    any
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
        Self::count_sessions(spec, requests.map(|r| r.map(std::iter::once)))
    }

    /// Counts measured units of several parts (a realtime session of turns):
    /// `Some(parts)` for a success, good when it has a part and every part meets every
    /// SLO; `None` for a failure.
    pub(crate) fn count_sessions<P: IntoIterator<Item = SloValues>>(
        spec: &GoodputSpec,
        sessions: impl Iterator<Item = Option<P>>,
    ) -> Self {
        let mut g = Goodput {
            good: 0,
            measured: 0,
        };
        for s in sessions {
            g.measured += 1;
            g.good += usize::from(s.is_some_and(|parts| every_part_good(spec, parts)));
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

    /// A session is good when every turn meets every SLO: #0 both turns within
    /// (one exactly on the bound), #1 its second turn misses ttfp by 1 µs, #2 failed,
    /// #3 succeeded with no turn (nothing was measured, so nothing was met).
    /// Good 1 of 4.
    #[test]
    fn a_session_is_good_when_every_turn_is() {
        let s = spec("audio_ttfp:200 e2el:1000");
        let turn = |ttfp: f64, e2el: f64| SloValues {
            audio_ttfp_ms: Some(ttfp),
            e2el_ms: Some(e2el),
            ..SloValues::default()
        };
        let sessions = [
            Some(vec![turn(200.0, 900.0), turn(10.0, 1000.0)]),
            Some(vec![turn(10.0, 100.0), turn(200.001, 100.0)]),
            None,
            Some(vec![]),
        ];
        let g = Goodput::count_sessions(&s, sessions.into_iter());
        assert_eq!(
            g,
            Goodput {
                good: 1,
                measured: 4
            }
        );
        assert_eq!(g.attainment(), Some(0.25));
        // One turn per session reads as the request count does.
        let one = [Some(turn(1.0, 1.0)), Some(turn(300.0, 1.0)), None];
        assert_eq!(
            Goodput::count(&s, one.into_iter()),
            Goodput::count_sessions(&s, one.map(|t| t.map(|t| [t])).into_iter())
        );
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
