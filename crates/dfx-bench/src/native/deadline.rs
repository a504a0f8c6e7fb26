//! Open-loop send deadlines kept on the runtime itself: a `timerfd` (`CLOCK_MONOTONIC`,
//! absolute expiry, nanosecond resolution, no timer slack) registered with the runtime's
//! reactor. The worker sleeping in `epoll_wait` is woken at the deadline by the timer, and
//! the dispatcher task it runs spawns the request onto that same worker.
//!
//! Why not a dispatcher thread: a thread sleeping to each deadline and spawning from
//! outside the runtime cost, per request, its own wake-up, a reactor wake-up (an `eventfd`
//! write) and a second worker woken to look for work (a `futex` pair): about four of the
//! eleven context switches per request of an open loop (docs/benchmarks-history.md). The
//! runtime's own timers are no substitute: they round to whole milliseconds.

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::OnceLock;
use std::time::Instant;

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// Why the first [`Deadlines::new`] of this process fell back to the millisecond timers.
static FELL_BACK: OnceLock<String> = OnceLock::new();

/// `bench.log`'s warning when open-loop deadlines were kept only to the millisecond in
/// this process (it never happened on Linux in any run, so it is worth a line when it does).
pub(crate) fn fallback_warning() -> Option<String> {
    FELL_BACK.get().map(|why| {
        format!(
            "warning: open-loop send deadlines on the runtime's millisecond timers ({why}); \
             send lag and the lag threshold are then accurate to about 1 ms"
        )
    })
}

/// A one-shot `timerfd` armed at an [`Instant`]: the tokio dispatcher's ([`Deadlines`])
/// and the speech event loop's (`super::evloop`) send deadlines.
pub(crate) struct Clock {
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
    pub(crate) fn new() -> io::Result<Clock> {
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

    /// Expires at `t` (a system call only when `t` is not what is armed already).
    pub(crate) fn arm(&mut self, t: Instant) -> io::Result<()> {
        if self.armed == Some(t) {
            return Ok(());
        }
        let since = t.saturating_duration_since(self.origin.0);
        let at = self.origin.1 + TimeSpec::from_duration(since);
        self.timer.set(
            Expiration::OneShot(at),
            TimerSetTimeFlags::TFD_TIMER_ABSTIME,
        )?;
        self.armed = Some(t);
        Ok(())
    }

    /// The expiry armed now, if any.
    pub(crate) fn armed(&self) -> Option<Instant> {
        self.armed
    }

    /// Consumes the expiry: `WouldBlock` while the armed time has not come (or nothing
    /// was armed), and the timer stays armed.
    pub(crate) fn read_expiry(&mut self) -> io::Result<()> {
        let mut count = [0u8; 8];
        loop {
            match nix::unistd::read(self.timer.as_fd(), &mut count) {
                Ok(_) => {
                    self.armed = None;
                    return Ok(());
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io::Error::from(e)),
            }
        }
    }
}

impl AsRawFd for Clock {
    fn as_raw_fd(&self) -> RawFd {
        self.timer.as_fd().as_raw_fd()
    }
}

/// Waits for absolute deadlines, one at a time.
pub(crate) struct Deadlines {
    /// `None` when no timer could be set up: deadlines then use the runtime's timers
    /// (millisecond resolution).
    timer: Option<AsyncFd<Clock>>,
}

impl Deadlines {
    /// A timer registered with the current runtime (call it on the runtime: it panics
    /// without one, as every runtime resource does). Falls back to
    /// the runtime's millisecond timers when the timer cannot be made.
    pub(crate) fn new() -> Deadlines {
        let timer = Clock::new()
            .map_err(|e| format!("timerfd_create: {e}"))
            .and_then(|c| {
                // SAFETY: `Clock` owns the timer's descriptor, which stays open as long as
                // the `AsyncFd` holds it, and `as_raw_fd` always returns that descriptor.
                unsafe { AsyncFd::register_with_interest(c, Interest::READABLE) }
                    .map_err(|e| format!("registering the timerfd: {e}"))
            });
        match timer {
            Ok(t) => Deadlines { timer: Some(t) },
            Err(why) => {
                let _ = FELL_BACK.set(why);
                Deadlines { timer: None }
            }
        }
    }

    /// Deadlines on the runtime's millisecond timers only (the fallback).
    #[cfg(test)]
    fn coarse() -> Deadlines {
        Deadlines { timer: None }
    }

    /// Whether deadlines are kept to the nanosecond (the timer) or to the millisecond.
    #[cfg(test)]
    fn precise(&self) -> bool {
        self.timer.is_some()
    }

    /// Returns at `t` or soon after; at once (after a cooperative yield point) when `t`
    /// has passed, so a burst of due deadlines does not hold the worker.
    pub(crate) async fn until(&mut self, t: Instant) {
        if t <= Instant::now() {
            tokio::task::consume_budget().await;
            return;
        }
        if let Some(timer) = &mut self.timer
            && timer.get_mut().arm(t).is_ok()
            && wait_expiry(timer).await.is_ok()
        {
            return;
        }
        tokio::time::sleep_until(t.into()).await;
    }
}

/// Waits until the armed timer expires and consumes the expiry.
async fn wait_expiry(timer: &mut AsyncFd<Clock>) -> io::Result<()> {
    loop {
        let mut ready = timer.readable_mut().await?;
        match ready.try_io(|t| t.get_mut().read_expiry()) {
            Ok(done) => {
                // The expiry is consumed and the timer one-shot: the next wait must not
                // start from this readiness (a read that fails, one syscall per request).
                ready.clear_ready();
                return done;
            }
            // Not expired yet: readiness cleared, wait again.
            Err(_would_block) => continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn never_returns_before_the_deadline_and_keeps_order() {
        let rt = runtime();
        let early = rt.block_on(async {
            let mut d = Deadlines::new();
            assert!(d.precise(), "timerfd available on Linux");
            let start = Instant::now();
            let mut early = Vec::new();
            for k in 1..=20u64 {
                let t = start + Duration::from_micros(700 * k);
                d.until(t).await;
                if Instant::now() < t {
                    early.push(k);
                }
            }
            early
        });
        assert!(early.is_empty(), "returned before deadlines {early:?}");
    }

    #[test]
    fn past_deadlines_return_at_once_and_coarse_timers_still_wait() {
        let rt = runtime();
        rt.block_on(async {
            let mut d = Deadlines::new();
            // Far enough back that waiting for it would hang the test.
            let past = Instant::now() - Duration::from_millis(5);
            for _ in 0..1000 {
                d.until(past).await;
            }
            let mut c = Deadlines::coarse();
            assert!(!c.precise());
            let t = Instant::now() + Duration::from_millis(3);
            c.until(t).await;
            assert!(Instant::now() >= t);
        });
    }
}
