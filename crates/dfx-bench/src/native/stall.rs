//! The stall rules every native client applies (speech event loop, chat-omni, realtime):
//! a stream whose body brings fewer than [`StallRule::floor`] bytes in a
//! [`StallRule::window`] is stalled ([`Progress`]: a minimum-progress rule, so a body that
//! only trickles is caught as well as one that stops), and a step whose server evidently
//! stopped making progress ends early ([`StepWatch`]): when a stream stalls while no
//! stream of the step progressed for a whole window, or [`StallRule::in_a_row`] streams
//! stalled in a row. The rule starts with a stream's first body bytes; the wait for them
//! (time to first packet, queueing included) stays under the read timeout.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Default [`StallRule::window`].
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(20);
/// Default [`StallRule::floor`]: 1 KiB, about 1/1000 of real-time 24 kHz PCM per window.
pub const DEFAULT_FLOOR: u64 = 1024;
/// Default [`StallRule::in_a_row`].
pub const DEFAULT_IN_A_ROW: usize = 3;

/// When a stream, and a step, count as stalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StallRule {
    /// The progress window (`--stall-window`).
    pub window: Duration,
    /// The fewest body bytes a streaming response must bring per window (`--stall-floor`).
    pub floor: u64,
    /// Streams stalled one after another that end the step.
    pub in_a_row: usize,
}

impl StallRule {
    /// The defaults: 1 KiB per 20 s window, 3 stalls in a row.
    pub const DEFAULT: StallRule = StallRule {
        window: DEFAULT_WINDOW,
        floor: DEFAULT_FLOOR,
        in_a_row: DEFAULT_IN_A_ROW,
    };
}

impl Default for StallRule {
    fn default() -> Self {
        StallRule::DEFAULT
    }
}

/// One stream's progress: the last time its body had brought `floor` bytes more than at
/// the time before (the mark). Unset until its first body bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    mark: Option<(Instant, u64)>,
}

impl Progress {
    /// The body holds `total` bytes at `now`: returns whether that moved the mark (the
    /// stream made progress).
    pub fn advance(&mut self, rule: &StallRule, total: u64, now: Instant) -> bool {
        match self.mark {
            Some((_, at)) if total < at.saturating_add(rule.floor.max(1)) => false,
            Some(_) => {
                self.mark = Some((now, total));
                true
            }
            None if total > 0 => {
                self.mark = Some((now, total));
                true
            }
            None => false,
        }
    }

    /// When the stream counts as stalled unless it progresses; `None` before its first
    /// body bytes.
    pub fn due(&self, rule: &StallRule) -> Option<Instant> {
        self.mark.and_then(|(at, _)| at.checked_add(rule.window))
    }

    /// The failure message of a stream stalled with `total` body bytes.
    pub fn message(&self, rule: &StallRule, total: u64) -> String {
        let since = self.mark.map_or(0, |(_, b)| total.saturating_sub(b));
        format!(
            "stream stalled: {since} body bytes in the last {:.1} s, below the floor of {} bytes \
             per window (--stall-window, --stall-floor)",
            rule.window.as_secs_f64(),
            rule.floor
        )
    }
}

/// Why a step ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStalled {
    /// What tripped the rule.
    pub why: String,
    /// Streams that ended as stalled (those in flight when it tripped included).
    pub stalled: usize,
    /// Requests in flight when it tripped (ended as stalled).
    pub in_flight: usize,
    /// Requests that had completed (ended, stalled or not).
    pub completed: usize,
    /// Requests of the phase never sent.
    pub not_sent: usize,
    /// The failure message of the stall that tripped the rule.
    pub last: String,
}

impl fmt::Display for ServerStalled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}; streams stalled {}, in flight {} (ended as stalled), \
             completed {}, not sent {}; last: {}",
            dfx_core::bench::STALLED_PREFIX,
            self.why,
            self.stalled,
            self.in_flight,
            self.completed,
            self.not_sent,
            self.last
        )
    }
}

/// The step-level rule: counts how requests end and says when the step is to end.
#[derive(Debug, Clone)]
pub struct StepWatch {
    rule: StallRule,
    /// The last progress of any stream of the step (a mark moved, a request ended well).
    last_progress: Instant,
    in_a_row: usize,
    stalled: usize,
    completed: usize,
}

impl StepWatch {
    /// A watch for a phase that starts now.
    pub fn new(rule: StallRule) -> StepWatch {
        StepWatch {
            rule,
            last_progress: Instant::now(),
            in_a_row: 0,
            stalled: 0,
            completed: 0,
        }
    }

    /// The rule watched.
    pub fn rule(&self) -> &StallRule {
        &self.rule
    }

    /// Some stream progressed at `now`.
    pub fn progressed(&mut self, now: Instant) {
        self.last_progress = self.last_progress.max(now);
    }

    /// A request ended (`stalled`: as a stall, with its message; `ok`: a success) at
    /// `now`. Returns why the step is to end, if it is; `in_flight` and `not_sent` are the
    /// counts left after it.
    pub fn ended(
        &mut self,
        stalled: Option<&str>,
        ok: bool,
        now: Instant,
        in_flight: usize,
        not_sent: usize,
    ) -> Option<ServerStalled> {
        self.completed += 1;
        if ok {
            self.progressed(now);
        }
        let Some(last) = stalled else {
            self.in_a_row = 0;
            return None;
        };
        self.stalled += 1;
        self.in_a_row += 1;
        let quiet = now.saturating_duration_since(self.last_progress);
        let why = if quiet >= self.rule.window {
            format!(
                "no stream made progress for {:.1} s (--stall-window)",
                quiet.as_secs_f64()
            )
        } else if self.in_a_row >= self.rule.in_a_row.max(1) {
            format!("{} streams stalled in a row", self.in_a_row)
        } else {
            return None;
        };
        Some(ServerStalled {
            why,
            stalled: self.stalled + in_flight,
            in_flight,
            completed: self.completed,
            not_sent,
            last: last.to_string(),
        })
    }
}

/// A [`StepWatch`] shared by the requests of a tokio-driven step (chat-omni, realtime):
/// once it trips, requests not yet sent are not sent and those in flight are cut
/// ([`SharedWatch::tripped`] resolves).
#[derive(Debug)]
pub(crate) struct SharedWatch {
    state: Mutex<(StepWatch, Option<ServerStalled>)>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl SharedWatch {
    /// A watch under `rule` for a step that starts now.
    pub(crate) fn new(rule: StallRule) -> Arc<SharedWatch> {
        Arc::new(SharedWatch {
            state: Mutex::new((StepWatch::new(rule), None)),
            stop: tokio::sync::watch::Sender::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, (StepWatch, Option<ServerStalled>)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Some stream progressed at `now`.
    pub(crate) fn progressed(&self, now: Instant) {
        self.lock().0.progressed(now);
    }

    /// A request ended; `in_flight`: how many are still in flight.
    pub(crate) fn ended(&self, stalled: Option<&str>, ok: bool, in_flight: usize) {
        let mut g = self.lock();
        if g.1.is_some() {
            return;
        }
        if let Some(why) = g.0.ended(stalled, ok, Instant::now(), in_flight, 0) {
            g.1 = Some(why);
            self.stop.send_replace(true);
        }
    }

    /// Whether the step is to end (nothing more is sent): the stall rule tripped, or the
    /// run is being interrupted ([`dfx_core::stop`]).
    pub(crate) fn stopped(&self) -> bool {
        *self.stop.borrow() || dfx_core::stop::requested()
    }

    /// Resolves once the rule tripped, with the message a request cut in flight carries.
    pub(crate) async fn tripped(&self) -> String {
        let mut rx = self.stop.subscribe();
        let _ = rx.wait_for(|s| *s).await;
        self.lock()
            .1
            .as_ref()
            .map_or_else(String::new, |w| format!("ended in flight: {w}"))
    }

    /// Why the step ended early, with `not_sent` requests never sent.
    pub(crate) fn outcome(&self, not_sent: usize) -> Option<ServerStalled> {
        self.lock().1.clone().map(|mut w| {
            w.not_sent = not_sent;
            w
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> StallRule {
        StallRule {
            window: Duration::from_secs(10),
            floor: 100,
            in_a_row: 3,
        }
    }

    #[test]
    fn a_trickle_below_the_floor_does_not_move_the_mark() {
        let (r, t0) = (rule(), Instant::now());
        let mut p = Progress::default();
        assert_eq!(p.due(&r), None, "no rule before the first body bytes");
        assert!(!p.advance(&r, 0, t0));
        assert!(p.advance(&r, 10, t0));
        assert_eq!(p.due(&r), Some(t0 + r.window));
        for s in 1..=9u64 {
            // One byte every second: 9 bytes in 9 s, under the floor of 100.
            assert!(!p.advance(&r, 10 + s, t0 + Duration::from_secs(s)));
        }
        assert_eq!(p.due(&r), Some(t0 + r.window));
        let later = t0 + Duration::from_secs(5);
        assert!(
            p.advance(&r, 110, later),
            "the floor reached moves the mark"
        );
        assert_eq!(p.due(&r), Some(later + r.window));
        assert!(
            p.message(&r, 115)
                .contains("5 body bytes in the last 10.0 s")
        );
    }

    #[test]
    fn the_step_ends_on_a_quiet_window_or_stalls_in_a_row() {
        let t0 = Instant::now();
        let mut w = StepWatch::new(rule());
        w.progressed(t0);
        // Others progressed recently: one stall alone does not end the step.
        assert_eq!(
            w.ended(Some("s"), false, t0 + Duration::from_secs(1), 3, 5),
            None
        );
        assert_eq!(w.ended(None, true, t0 + Duration::from_secs(2), 2, 5), None);
        let t = t0 + Duration::from_secs(3);
        assert_eq!(w.ended(Some("s"), false, t, 2, 5), None);
        assert_eq!(w.ended(Some("s"), false, t, 1, 5), None);
        let tripped = w.ended(Some("s"), false, t, 1, 5).unwrap();
        assert_eq!(tripped.why, "3 streams stalled in a row");
        assert_eq!((tripped.stalled, tripped.completed), (5, 5));
        assert!(tripped.to_string().ends_with("; last: s"), "{tripped}");
        // A single stall after a quiet window ends the step at once.
        let mut w = StepWatch::new(rule());
        w.progressed(t0);
        let quiet = w.ended(Some("s"), false, t0 + Duration::from_secs(12), 0, 21);
        let quiet = quiet.unwrap().to_string();
        assert!(
            quiet.starts_with("server stalled: no stream made progress for 12.0 s"),
            "{quiet}"
        );
        assert!(quiet.contains("not sent 21"), "{quiet}");
    }
}
