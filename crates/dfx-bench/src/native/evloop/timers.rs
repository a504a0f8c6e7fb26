//! The requests' timeouts (read timeout, total timeout, error-body excerpt) in a heap
//! that only sets how long the event loop may sleep. (The open loop's send deadlines are
//! on a `timerfd`, `super::super::deadline::Clock`: epoll's own timeout rounds to whole
//! milliseconds.)
//!
//! A timeout entry is never removed: it names a stream and the request generation it was
//! set for, and an entry that no longer matches is dropped when it comes up. A request's
//! stall clock moves with every read, yet its entry is pushed once and moved only when it
//! comes up early, as the tokio client moved its one body timer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// A timeout: stream token and the generation of the request it was set for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Due {
    pub at: Instant,
    pub token: usize,
    pub generation: u64,
}

/// Pending timeouts, earliest first.
#[derive(Default)]
pub(super) struct Timeouts {
    heap: BinaryHeap<Reverse<Due>>,
}

impl Timeouts {
    /// Adds a timeout.
    pub(super) fn push(&mut self, due: Due) {
        self.heap.push(Reverse(due));
    }

    /// The earliest timeout at or before `now`, taken off the heap.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<Due> {
        let Reverse(top) = *self.heap.peek()?;
        (top.at <= now).then(|| {
            self.heap.pop();
            top
        })
    }

    /// How long until the earliest timeout (zero when one is due).
    pub(super) fn wait(&self, now: Instant) -> Option<Duration> {
        self.heap
            .peek()
            .map(|Reverse(d)| d.at.saturating_duration_since(now))
    }

    /// Drops every timeout (the phase ended; nothing is in flight).
    pub(super) fn clear(&mut self) {
        self.heap.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_come_up_in_order_and_only_when_due() {
        let now = Instant::now();
        let mut t = Timeouts::default();
        for (ms, token) in [(30, 3), (10, 1), (20, 2)] {
            t.push(Due {
                at: now + Duration::from_millis(ms),
                token,
                generation: 0,
            });
        }
        assert_eq!(t.wait(now), Some(Duration::from_millis(10)));
        assert!(t.pop_due(now).is_none());
        let later = now + Duration::from_millis(25);
        let got: Vec<usize> = std::iter::from_fn(|| t.pop_due(later).map(|d| d.token)).collect();
        assert_eq!(got, [1, 2]);
        assert_eq!(t.wait(later), Some(Duration::from_millis(5)));
        t.clear();
        assert_eq!(t.wait(later), None);
    }

    #[test]
    fn the_clock_never_fires_before_its_instant() {
        let mut c = crate::native::deadline::Clock::new().unwrap();
        for k in 1..=10u64 {
            let t = Instant::now() + Duration::from_micros(300 * k);
            c.arm(t).unwrap();
            // The timer is nonblocking: poll until it has expired.
            while c.read_expiry().is_err() {
                std::thread::yield_now();
            }
            assert!(Instant::now() >= t, "fired early at step {k}");
            assert_eq!(c.armed(), None);
        }
    }
}
