//! Which request the event loop sends next, and when: a closed loop's workers (a new
//! request as each one ends) or an open loop's deadlines with its in-flight cap (an
//! arrival finding the cap full waits in line, or with the saturation gate is refused).

use std::collections::VecDeque;
use std::time::Instant;

use dfx_core::plan::Saturation;

use super::super::driver::{Job, Load, planned_sends};

/// A request ready to be sent.
pub(super) struct Arrival {
    pub index: usize,
    pub job: Job,
    /// When the schedule wanted it sent.
    pub planned: Instant,
    /// When the loop took it up.
    pub dispatched: Instant,
}

/// What happens to an open-loop arrival that came due.
pub(super) enum Admit {
    /// Send it now.
    Send(Arrival),
    /// The saturation gate refused it: `cap` requests were in flight.
    Refuse(Arrival, usize),
    /// It waits for a slot.
    Queued,
}

/// A phase's requests and how they are offered.
pub(super) struct Plan {
    jobs: Vec<Option<Job>>,
    next: usize,
    /// The phase's start: the first scheduled send.
    pub base: Instant,
    kind: Kind,
}

enum Kind {
    Closed {
        workers: usize,
        started: usize,
    },
    Open {
        planned: Vec<Instant>,
        cap: Option<usize>,
        saturation: Saturation,
        waiting: VecDeque<Arrival>,
    },
}

impl Plan {
    /// The plan of `jobs` under `load` (an open loop starts a short lead from now).
    pub(super) fn new(jobs: Vec<Job>, load: Load) -> Plan {
        let n = jobs.len();
        let jobs = jobs.into_iter().map(Some).collect();
        match load {
            Load::Closed { concurrency } => Plan {
                jobs,
                next: 0,
                base: Instant::now(),
                kind: Kind::Closed {
                    workers: concurrency.clamp(1, n.max(1)),
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
                        cap: cap.map(|c| c.max(1)),
                        saturation,
                        waiting: VecDeque::new(),
                    },
                }
            }
        }
    }

    /// A closed loop's next worker to start (they start one at a time, the loop turning
    /// between starts); `None` once all have started, and always for an open loop.
    pub(super) fn ramp(&mut self) -> Option<Arrival> {
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
    pub(super) fn after_end(&mut self, in_flight: usize) -> Option<Arrival> {
        match &mut self.kind {
            Kind::Closed { .. } => self.take_now(),
            Kind::Open { cap, waiting, .. } => {
                let room = cap.is_none_or(|c| in_flight < c);
                if room { waiting.pop_front() } else { None }
            }
        }
    }

    /// The next open-loop arrival due at `now`, with what the gate does with it.
    pub(super) fn due(&mut self, now: Instant, in_flight: usize) -> Option<Admit> {
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
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        match &self.kind {
            Kind::Open { planned, .. } => planned.get(self.next).copied(),
            Kind::Closed { .. } => None,
        }
    }

    /// Gives up every request not yet sent (the step ends early); returns how many.
    pub(super) fn abandon(&mut self) -> usize {
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
    pub(super) fn exhausted(&self) -> bool {
        let waiting = matches!(&self.kind, Kind::Open { waiting, .. } if !waiting.is_empty());
        self.next >= self.jobs.len() && !waiting
    }

    fn take_now(&mut self) -> Option<Arrival> {
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
