//! The event loop's two kinds of time: the open loop's send deadlines on a `timerfd`
//! (absolute `CLOCK_MONOTONIC` expiry, nanosecond resolution, no timer slack: epoll's own
//! timeout rounds to whole milliseconds), and the requests' timeouts (read timeout, total
//! timeout, error-body excerpt) in a heap that only sets how long the loop may sleep.
//!
//! A timeout entry is never removed: it names a stream and the request generation it was
//! set for, and an entry that no longer matches is dropped when it comes up. A request's
//! stall clock moves with every read, yet its entry is pushed once and moved only when it
//! comes up early, as the tokio client moved its one body timer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

/// A one-shot timer armed at an [`Instant`].
pub(super) struct Clock {
    timer: TimerFd,
    /// One `Instant` and the `CLOCK_MONOTONIC` reading taken right after it; `Instant` is
    /// that clock on Linux, so later instants convert by their distance from it. The
    /// reading is the later of the two, so a converted deadline is never early.
    origin: (Instant, TimeSpec),
    /// The expiry armed now, if any.
    armed: Option<Instant>,
}

impl Clock {
    /// A disarmed timer.
    pub(super) fn new() -> io::Result<Clock> {
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        let now = Instant::now();
        let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)?;
        Ok(Clock {
            timer,
            origin: (now, ts),
            armed: None,
        })
    }

    /// The descriptor to register for readability.
    pub(super) fn fd(&self) -> RawFd {
        self.timer.as_fd().as_raw_fd()
    }

    /// Expires at `t` (a system call only when `t` is not what is armed already).
    pub(super) fn arm(&mut self, t: Instant) -> io::Result<()> {
        if self.armed == Some(t) {
            return Ok(());
        }
        let at =
            self.origin.1 + TimeSpec::from_duration(t.saturating_duration_since(self.origin.0));
        self.timer.set(
            Expiration::OneShot(at),
            TimerSetTimeFlags::TFD_TIMER_ABSTIME,
        )?;
        self.armed = Some(t);
        Ok(())
    }

    /// The expiry armed now, if any.
    pub(super) fn armed(&self) -> Option<Instant> {
        self.armed
    }

    /// Consumes an expiry after the timer was reported readable.
    pub(super) fn expired(&mut self) {
        let mut count = [0u8; 8];
        // A read that finds no expiry (a stale event) is harmless: the loop re-arms.
        let _ = nix::unistd::read(self.timer.as_fd(), &mut count);
        self.armed = None;
    }
}

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
        let mut c = Clock::new().unwrap();
        for k in 1..=10u64 {
            let t = Instant::now() + Duration::from_micros(300 * k);
            c.arm(t).unwrap();
            let mut count = [0u8; 8];
            // Blocking wait on the timer (it is nonblocking: poll until it has expired).
            loop {
                match nix::unistd::read(c.timer.as_fd(), &mut count) {
                    Ok(_) => break,
                    Err(nix::errno::Errno::EAGAIN) => std::thread::yield_now(),
                    Err(e) => panic!("{e}"),
                }
            }
            c.armed = None;
            assert!(Instant::now() >= t, "fired early at step {k}");
        }
    }
}
