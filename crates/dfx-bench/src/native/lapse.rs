//! The time-lapse: against the simulator at `--sim-speed K` the whole workload runs K times
//! faster, so a sped-up run is the real-time experiment at 1/K of its duration. Every time
//! the schedule plans is divided by K on the way to the wall clock (open-loop offsets of
//! every load shape, soak durations, the realtime client's paced input audio and retry
//! backoff, the duplex client's `realtime_input`), and every time the client observes is
//! multiplied by K on the way back (send, end, chunk, token and turn times, queueing, lag,
//! connection set-up), so records, metrics and result keys are on the real-time scale: what
//! the run at speed 1 would report. One exception: a chat response's time to its headers
//! (uploading the body and the server parsing it, up to hundreds of MB of media) costs the
//! same wall time at any speed and is kept as it is (`TimeLapse::after_head`; the
//! simulator counts its parsing the same way). What it cannot reproduce: other costs that
//! do not scale with the simulator (loopback, HTTP and the client's own CPU, about 0.3–0.8
//! ms per request in release) are multiplied by K too, and the wall-clock limits (request
//! and read timeouts, the stall rule, handshakes) stay in wall seconds.

use std::time::{Duration, Instant};

use super::client::Exchange;
use super::record::Dispatch;

/// The factor K between the real-time scale and the wall clock (1 = real time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeLapse(f64);

impl TimeLapse {
    /// No time-lapse: the wall clock is the real-time scale.
    pub const REAL_TIME: TimeLapse = TimeLapse(1.0);

    /// A time-lapse of factor `k`; `None` unless `k` is finite and positive.
    pub fn new(k: f64) -> Option<TimeLapse> {
        (k.is_finite() && k > 0.0).then_some(TimeLapse(k))
    }

    /// The factor K.
    pub fn factor(self) -> f64 {
        self.0
    }

    /// Whether the wall clock is the real-time scale.
    pub fn is_real_time(self) -> bool {
        self.0 == 1.0
    }

    /// Planned real-time seconds as wall seconds (÷ K).
    pub(crate) fn to_wall_s(self, real_s: f64) -> f64 {
        real_s / self.0
    }

    /// Planned real-time time as a wall duration (÷ K; unchanged if it overflows).
    pub(crate) fn to_wall(self, real: Duration) -> Duration {
        Duration::try_from_secs_f64(real.as_secs_f64() / self.0).unwrap_or(real)
    }

    /// Observed wall seconds on the real-time scale (× K).
    pub(crate) fn to_real_s(self, wall_s: f64) -> f64 {
        wall_s * self.0
    }

    /// An observed wall duration on the real-time scale (× K; unchanged if it overflows).
    pub(crate) fn to_real(self, wall: Duration) -> Duration {
        Duration::try_from_secs_f64(wall.as_secs_f64() * self.0).unwrap_or(wall)
    }

    /// An observed instant `t` of a phase started at `base`, on the real-time scale: as far
    /// from `base` as the run at speed 1 would have seen it.
    pub(crate) fn instant(self, base: Instant, t: Instant) -> Instant {
        if self.is_real_time() {
            return t;
        }
        if t >= base {
            base.checked_add(self.to_real(t - base)).unwrap_or(t)
        } else {
            base.checked_sub(self.to_real(base - t)).unwrap_or(t)
        }
    }

    /// Observed seconds since a send on the real-time scale, the first `head` seconds (the
    /// upload and the server's parsing, which do not shrink with the simulator) kept and
    /// the rest × K.
    pub(crate) fn after_head(self, head: f64, t: f64) -> f64 {
        if t <= head {
            t
        } else {
            head + self.to_real_s(t - head)
        }
    }

    /// Observed seconds of a timeline (each × K).
    pub(crate) fn timeline(self, ts: &mut [f64]) {
        if !self.is_real_time() {
            ts.iter_mut().for_each(|t| *t = self.to_real_s(*t));
        }
    }
}

/// The observations of one request, mapped to the real-time scale from its phase's `base`.
impl TimeLapse {
    /// When the request was planned, taken up and given its slot.
    pub(crate) fn dispatch(self, base: Instant, d: &mut Dispatch) {
        d.planned = self.instant(base, d.planned);
        d.dispatched = self.instant(base, d.dispatched);
        d.slot = self.instant(base, d.slot);
    }

    /// A speech exchange: send and end, the chunk times (seconds since the send) and the
    /// connection set-up.
    pub(crate) fn exchange(self, base: Instant, x: &mut Exchange) {
        if self.is_real_time() {
            return;
        }
        x.send_at = self.instant(base, x.send_at);
        x.end_at = self.instant(base, x.end_at);
        x.chunks.iter_mut().for_each(|c| c.0 = self.to_real_s(c.0));
        x.connect = x.connect.map(|c| self.to_real(c));
    }
}

impl Default for TimeLapse {
    fn default() -> Self {
        TimeLapse::REAL_TIME
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_finite_positive_factors() {
        assert!(TimeLapse::new(0.0).is_none());
        assert!(TimeLapse::new(-2.0).is_none());
        assert!(TimeLapse::new(f64::NAN).is_none());
        assert!(TimeLapse::new(f64::INFINITY).is_none());
        assert_eq!(TimeLapse::new(10.0).map(TimeLapse::factor), Some(10.0));
    }

    #[test]
    fn plans_shrink_and_observations_grow_by_k() {
        let k = TimeLapse::new(10.0).unwrap();
        assert_eq!(k.to_wall_s(50.0), 5.0);
        assert_eq!(k.to_real_s(0.007), 0.07);
        assert_eq!(
            k.to_real(Duration::from_millis(7)),
            Duration::from_millis(70)
        );
        let base = Instant::now();
        let t = base + Duration::from_millis(12);
        assert_eq!(k.instant(base, t) - base, Duration::from_millis(120));
        let early = base.checked_sub(Duration::from_millis(1));
        if let Some(e) = early {
            assert_eq!(base - k.instant(base, e), Duration::from_millis(10));
        }
        assert_eq!(k.after_head(0.04, 0.03), 0.03);
        assert!((k.after_head(0.04, 0.05) - 0.14).abs() < 1e-12);
        let mut tl = vec![0.001, 0.002];
        k.timeline(&mut tl);
        assert_eq!(tl, vec![0.01, 0.02]);
        assert_eq!(TimeLapse::REAL_TIME.instant(base, t), t);
    }
}
