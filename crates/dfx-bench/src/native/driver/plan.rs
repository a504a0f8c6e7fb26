//! The one place that decides when a request starts, for every protocol: a closed loop's
//! workers (a new request as each one ends) or an open loop's deadlines with its in-flight
//! cap (an arrival finding the cap full waits in line, or with the saturation gate is
//! refused). A pure state machine over the phase's jobs: the speech event loop
//! (`super::super::evloop`) and the tokio executor (`super::tasks`, realtime and chat) both
//! ask it what to send and tell it what ended.

use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::time::Instant;

use dfx_core::plan::Saturation;

use super::{Load, planned_sends};

/// A request ready to be sent.
pub(crate) struct Arrival<J> {
    /// The request's position in the phase.
    pub index: usize,
    /// What to send.
    pub job: J,
    /// When the schedule wanted it sent.
    pub planned: Instant,
    /// When the loop took it up.
    pub dispatched: Instant,
}

/// What happens to an open-loop arrival that came due.
pub(crate) enum Admit<J> {
    /// Send it now.
    Send(Arrival<J>),
    /// The saturation gate refused it: `cap` requests were in flight.
    Refuse(Arrival<J>, usize),
    /// It waits for a slot.
    Queued,
}

/// A phase's requests and how they are offered.
pub(crate) struct Plan<J> {
    jobs: Vec<Option<J>>,
    next: usize,
    /// The phase's start: the first scheduled send.
    pub base: Instant,
    kind: Kind<J>,
}

enum Kind<J> {
    Closed {
        workers: usize,
        started: usize,
    },
    Open {
        planned: Vec<Instant>,
        cap: Option<usize>,
        saturation: Saturation,
        waiting: VecDeque<Arrival<J>>,
    },
}

impl<J> Plan<J> {
    /// The plan of `jobs` under `load` (an open loop starts a short lead from now).
    pub(crate) fn new(jobs: Vec<J>, load: Load) -> Plan<J> {
        let n = jobs.len();
        let jobs = jobs.into_iter().map(Some).collect();
        match load {
            Load::Closed { concurrency } => Plan {
                jobs,
                next: 0,
                base: Instant::now(),
                kind: Kind::Closed {
                    workers: concurrency.get().min(n),
                    started: 0,
                },
            },
            Load::Open {
                offsets,
                cap,
                saturation,
            } => {
                let (base, planned) = planned_sends(&offsets);
                Plan {
                    jobs,
                    next: 0,
                    base,
                    kind: Kind::Open {
                        planned,
                        cap: cap.map(NonZeroUsize::get),
                        saturation,
                        waiting: VecDeque::new(),
                    },
                }
            }
        }
    }

    /// A closed loop's next worker to start (they start one at a time, the loop turning
    /// between starts); `None` once all have started, and always for an open loop.
    pub(crate) fn ramp(&mut self) -> Option<Arrival<J>> {
        let Kind::Closed { workers, started } = &mut self.kind else {
            return None;
        };
        if *started == *workers {
            return None;
        }
        *started += 1;
        self.take_now()
    }

    /// The request to send now that one ended and `in_flight` remain: a closed loop's
    /// next, or the first arrival waiting for a slot.
    pub(crate) fn after_end(&mut self, in_flight: usize) -> Option<Arrival<J>> {
        match &mut self.kind {
            Kind::Closed { .. } => self.take_now(),
            Kind::Open { cap, waiting, .. } => {
                let room = cap.is_none_or(|c| in_flight < c);
                if room { waiting.pop_front() } else { None }
            }
        }
    }

    /// The next open-loop arrival due at `now`, with what the gate does with it.
    pub(crate) fn due(&mut self, now: Instant, in_flight: usize) -> Option<Admit<J>> {
        let Kind::Open { planned, .. } = &self.kind else {
            return None;
        };
        let at = *planned.get(self.next).filter(|t| **t <= now)?;
        let index = self.next;
        let job = self.jobs[index].take()?;
        self.next += 1;
        let arrival = Arrival {
            index,
            job,
            planned: at,
            dispatched: Instant::now(),
        };
        let Kind::Open {
            cap,
            saturation,
            waiting,
            ..
        } = &mut self.kind
        else {
            return None;
        };
        Some(match *cap {
            Some(c) if in_flight >= c || !waiting.is_empty() => match saturation {
                Saturation::Fail => Admit::Refuse(arrival, c),
                Saturation::Wait => {
                    waiting.push_back(arrival);
                    Admit::Queued
                }
            },
            _ => Admit::Send(arrival),
        })
    }

    /// The open loop's next deadline not yet reached.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        match &self.kind {
            Kind::Open { planned, .. } => planned.get(self.next).copied(),
            Kind::Closed { .. } => None,
        }
    }

    /// Gives up every request not yet sent (the step ends early); returns how many.
    pub(crate) fn abandon(&mut self) -> usize {
        let mut n = self.jobs[self.next.min(self.jobs.len())..]
            .iter()
            .filter(|j| j.is_some())
            .count();
        self.next = self.jobs.len();
        if let Kind::Open { waiting, .. } = &mut self.kind {
            n += waiting.len();
            waiting.clear();
        }
        n
    }

    /// Whether every request was taken up (sent, refused or still waiting excluded).
    pub(crate) fn exhausted(&self) -> bool {
        let waiting = matches!(&self.kind, Kind::Open { waiting, .. } if !waiting.is_empty());
        self.next >= self.jobs.len() && !waiting
    }

    fn take_now(&mut self) -> Option<Arrival<J>> {
        let index = self.next;
        let job = self.jobs.get_mut(index)?.take()?;
        self.next += 1;
        let now = Instant::now();
        Some(Arrival {
            index,
            job,
            planned: now,
            dispatched: now,
        })
    }
}
