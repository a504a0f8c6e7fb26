//! Where the run is and how long it has left: `[3/29]` before each trial with an estimate
//! of the time left, and, when stderr is not a terminal (CI logs), one progress line every
//! [`TICK`] while a trial runs.
//!
//! Each trial's expected time is its bench duration in the history when `--history` knows
//! the trial (the median of its last three clean runs), else the plan's
//! ([`crate::estimate::trial_seconds`], a generous upper bound). Before any trial has
//! finished the sum is said as "at most" (or "about", when the history knows every
//! remaining trial); after that, the remaining trials' expectations are scaled by how long
//! the finished ones really took against theirs ("about").

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the progress line is printed when stderr is not a terminal.
pub(crate) const TICK: Duration = Duration::from_secs(30);

/// The trials the run will execute, in order, with their plan estimates.
#[derive(Debug, Default, Clone)]
pub(crate) struct Eta {
    /// Plan indices of the trials that will run, in run order.
    order: Vec<usize>,
    /// Trial names and plan estimates (seconds), by plan index.
    names: Vec<String>,
    estimates: Vec<f64>,
    /// The history's duration of each trial (seconds), by plan index, when it knows it.
    known: Vec<Option<f64>>,
    /// Trials finished so far, their wall time and their plan estimates.
    done: usize,
    done_seconds: f64,
    done_estimate: f64,
}

/// The time left, and whether it comes from the plan alone or from finished trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Left {
    /// The plan's upper bound (no trial finished yet).
    Plan(f64),
    /// The history's durations of every remaining trial (no trial finished yet).
    History(f64),
    /// The plan's estimates scaled by the finished trials' real times.
    Measured(f64),
}

impl Eta {
    /// `order`: plan indices that will run; `names`/`estimates`: every planned trial's.
    pub(crate) fn new(order: Vec<usize>, names: Vec<String>, estimates: Vec<f64>) -> Eta {
        Eta {
            order,
            names,
            estimates,
            ..Eta::default()
        }
    }

    /// With the history's duration of the trials it knows (by plan index).
    pub(crate) fn with_known(mut self, known: Vec<Option<f64>>) -> Eta {
        self.known = known;
        self
    }

    /// `(position, total)`, 1-based, of trial `idx` (`None` when it is not in the run).
    pub(crate) fn position(&self, idx: usize) -> Option<(usize, usize)> {
        let at = self.order.iter().position(|&i| i == idx)?;
        Some((at + 1, self.order.len()))
    }

    /// Trial `idx` finished after `seconds`.
    pub(crate) fn finished(&mut self, idx: usize, seconds: f64) {
        if self.position(idx).is_none() || !seconds.is_finite() {
            return;
        }
        self.done += 1;
        self.done_seconds += seconds.max(0.0);
        self.done_estimate += self.estimate(idx);
    }

    /// What trial `idx` is expected to take: the history's duration, else the plan's.
    fn estimate(&self, idx: usize) -> f64 {
        match self.known.get(idx).copied().flatten() {
            Some(s) => s,
            None => self.estimates.get(idx).copied().unwrap_or(0.0),
        }
    }

    /// Time left with trial `idx` running for `elapsed` seconds (it and every trial after
    /// it in the order still to do).
    pub(crate) fn left(&self, idx: usize, elapsed: f64) -> Left {
        let Some((pos, _)) = self.position(idx) else {
            return Left::Plan(0.0);
        };
        let rest: f64 = self.order[pos - 1..]
            .iter()
            .map(|&i| self.estimate(i))
            .sum();
        if self.done == 0 || self.done_estimate <= 0.0 {
            let all_known = self.order[pos - 1..]
                .iter()
                .all(|&i| self.known.get(i).copied().flatten().is_some());
            let s = (rest - elapsed).max(0.0);
            return if all_known {
                Left::History(s)
            } else {
                Left::Plan(s)
            };
        }
        let ratio = self.done_seconds / self.done_estimate;
        Left::Measured((rest * ratio - elapsed).max(0.0))
    }

    /// `[3/29] test::entry::c16 (about 4 min left)`, or with `running` the running time:
    /// `[3/29] test::entry::c16 running 1 min 30 s; about 3 min left`.
    pub(crate) fn line(&self, idx: usize, running: Option<f64>) -> Option<String> {
        let (pos, total) = self.position(idx)?;
        let name = self.names.get(idx).map_or("", String::as_str);
        let left = match self.left(idx, running.unwrap_or(0.0)) {
            Left::Plan(s) => format!("at most {} left by the plan", human(s)),
            Left::History(s) => format!("about {} left by the history", human(s)),
            Left::Measured(s) => format!("about {} left", human(s)),
        };
        Some(match running {
            None => format!("[{pos}/{total}] {name} ({left})"),
            Some(r) => format!("[{pos}/{total}] {name} running {}; {left}", human(r)),
        })
    }
}

/// `under 1 s`, `45 s`, `4 min 10 s`, `2 h 05 min`.
pub(crate) fn human(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0 => "under 1 s".to_string(),
        1..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// The background printer of the progress line (stopped on drop).
pub(crate) struct Ticker {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Prints `line()` (the running trial's line, `None` between trials) every `every` to
    /// `out`; `None` when stderr is a terminal (the bench draws its own line there) and
    /// `only_off_terminal` is set.
    pub(crate) fn start(
        line: impl Fn() -> Option<String> + Send + 'static,
        every: Duration,
        only_off_terminal: bool,
        mut out: impl Write + Send + 'static,
    ) -> Option<Ticker> {
        if only_off_terminal && std::io::stderr().is_terminal() {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut next = Instant::now() + every;
            while !flag.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50).min(every));
                if Instant::now() < next {
                    continue;
                }
                next = Instant::now() + every;
                if let Some(line) = line() {
                    let _ = writeln!(out, "dfx-perf: {line}");
                    let _ = out.flush();
                }
            }
        });
        Some(Ticker {
            stop,
            handle: Some(handle),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
#[path = "eta_tests.rs"]
mod tests;
