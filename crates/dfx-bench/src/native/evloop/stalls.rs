//! The step's stall rule on the event loop (`crate::native::stall`): every stream's
//! progress mark moves with its body bytes, and when the rule trips the requests in flight
//! end as stalled and those not sent are given up.

use std::time::Instant;

use super::super::driver::Job;
use super::super::driver::plan::Plan;
use super::timers::Due;
use super::{Engine, Exchange, FailureClass};

impl Engine {
    /// Counts an ended request against the step's stall rule; when it trips, the
    /// requests in flight end as stalled (and [`Engine::give_up`] drops those not sent).
    pub(super) fn watch_end(&mut self, x: &Exchange) {
        if self.stalled.is_some() {
            return;
        }
        let stalled = x
            .failure
            .as_ref()
            .filter(|f| f.class == FailureClass::Stall);
        let stalled = stalled.map(|f| f.message.as_str());
        let (now, in_flight) = (Instant::now(), self.in_flight);
        let Some(why) = self.watch.ended(stalled, x.ok(), now, in_flight, 0) else {
            return;
        };
        let msg = format!("ended in flight: {why}");
        self.stalled = Some(why);
        for k in 0..self.streams.len() {
            let req = self.streams[k].as_mut().and_then(|s| s.req.take());
            if let Some(req) = req {
                self.close(k);
                self.fail(req, FailureClass::Stall, msg.clone());
            }
        }
    }

    /// Once the stall rule tripped: the requests not sent yet are given up (counted).
    /// Once the run's stop was requested ([`dfx_core::stop`]): they are never sent.
    pub(super) fn give_up(&mut self, plan: &mut Plan<Job>) {
        if let Some(why) = self.stalled.as_mut() {
            why.not_sent += plan.abandon();
        } else if dfx_core::stop::requested() {
            plan.abandon();
        }
    }

    /// Moves stream `k`'s progress mark on its body bytes; its first body bytes arm the
    /// stall rule's timeout.
    pub(super) fn progressed(&mut self, k: usize) {
        let rule = self.target.limits.stall;
        let Some(req) = self.streams[k].as_mut().and_then(|s| s.req.as_mut()) else {
            return;
        };
        let (first, now) = (req.progress.due(&rule).is_none(), Instant::now());
        if !req.progress.advance(&rule, req.x.bytes, now) {
            return;
        }
        self.watch.progressed(now);
        if first && let Some(at) = req.progress.due(&rule) {
            let generation = req.generation;
            self.timeouts.push(Due {
                at,
                token: k,
                generation,
            });
        }
    }
}
