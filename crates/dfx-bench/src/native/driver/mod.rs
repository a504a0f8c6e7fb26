//! How a phase offers its requests to the server: the [`Load`] (closed loop: a fixed number
//! of workers, a new request as each finishes; open loop: each request at its absolute
//! deadline, optionally capped in flight: an arrival finding the cap full waits for a slot,
//! or with the saturation gate is not sent and is recorded as a failure), the one
//! [`plan::Plan`] that decides when each request starts, and its tokio executor
//! ([`tasks`]: realtime sessions and chat-omni requests; speech runs the same plan on the
//! mio event loop, `super::evloop`).

pub(crate) mod plan;
pub(crate) mod tasks;

use dfx_core::plan::Saturation;

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::record::Sample;

/// One request to send.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub body: Bytes,
    pub sample: Sample,
}

/// How a phase offers its requests.
#[derive(Debug, Clone)]
pub(crate) enum Load {
    /// `concurrency` requests in flight, each worker sending the next as one finishes.
    Closed { concurrency: NonZeroUsize },
    /// Each request at `base + offsets[i]` seconds; at most `cap` in flight when set,
    /// an arrival finding it full waiting or failing as `saturation` says.
    Open {
        offsets: Vec<f64>,
        /// `None`: no `open_loop_max_concurrency`, every arrival sent on time (upstream).
        cap: Option<NonZeroUsize>,
        saturation: Saturation,
    },
}

impl Load {
    /// The most requests this load holds in flight at once: its concurrency, the open
    /// loop's cap, or, uncapped, the arrivals of [`super::fds::OPEN_LOOP_WINDOW_S`] at its
    /// mean rate (an estimate, for the file-descriptor budget).
    pub(crate) fn peak_in_flight(&self) -> usize {
        match self {
            Load::Closed { concurrency } => concurrency.get(),
            Load::Open { cap: Some(c), .. } => c.get(),
            Load::Open {
                offsets, cap: None, ..
            } => {
                let span = offsets.last().copied().unwrap_or(0.0);
                let rate = if span > 0.0 {
                    offsets.len() as f64 / span
                } else {
                    f64::INFINITY
                };
                super::fds::open_loop_in_flight(rate, offsets.len())
            }
        }
    }
}

/// Exact in-flight accounting (sent, not yet finished).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl InFlight {
    /// One more request in flight.
    pub(crate) fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(n, Ordering::SeqCst);
    }
    /// One request fewer in flight.
    pub(crate) fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
    /// Requests in flight now.
    pub(crate) fn now(&self) -> usize {
        self.now.load(Ordering::SeqCst)
    }
    /// Largest number in flight at once.
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

/// An open loop's start and its planned sends (`offsets` seconds after the start). The
/// start is a short lead from now, so the first deadline is not already late when the
/// loop starts.
pub(crate) fn planned_sends(offsets: &[f64]) -> (Instant, Vec<Instant>) {
    let base = Instant::now() + Duration::from_millis(20);
    let planned = offsets
        .iter()
        .map(|off| {
            // Offsets are bounded at load (`bounds::MAX_SCHEDULE_SECONDS`); never panic here.
            Duration::try_from_secs_f64(*off)
                .ok()
                .and_then(|d| base.checked_add(d))
                .unwrap_or(base)
        })
        .collect();
    (base, planned)
}
