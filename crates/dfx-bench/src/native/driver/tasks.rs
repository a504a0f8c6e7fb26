//! The tokio executor of a [`Plan`]: realtime sessions and chat-omni requests are tasks on a
//! tokio runtime, started when the plan says (speech requests run on `super::super::evloop`,
//! which executes the same plan on a mio loop). One dispatcher task owns the plan: it
//! starts a closed loop's workers one at a time, fires each open-loop arrival at its
//! absolute deadline (a `timerfd`, `super::super::deadline` says why not a sleeping thread),
//! and launches the next request as each one ends.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use tokio::runtime::Runtime;
use tokio::sync::mpsc;

use super::Load;
use super::plan::{Admit, Arrival, Plan};
use crate::native::BenchError;
use crate::native::deadline::Deadlines;
use crate::native::record::Dispatch;

/// The runtime a protocol's phases run on: two worker threads named `name`, or one when
/// the process may run on one CPU only (its affinity or quota): two workers on one CPU
/// preempt each other in the middle of handling an event, and that wait lands inside
/// the measured first-packet times.
pub(crate) fn runtime(name: &str) -> Result<Runtime, BenchError> {
    let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cpus.clamp(1, 2))
        .thread_name(name)
        .enable_all()
        .build()
        .map_err(|source| BenchError::Setup {
            what: "cannot start the tokio runtime",
            source,
        })
}

/// Where a launched request's payload comes from, taken in the order the plan launches
/// them (index order): the job itself, or a body built ahead by another thread.
pub(crate) trait Feed<J>: Send + 'static {
    /// What the request task receives.
    type Item: Send + 'static;
    /// The payload of the arrival planned at `planned`; `None` ends the phase's sends (the
    /// source ran dry).
    fn take(&mut self, job: J, planned: Instant)
    -> impl Future<Output = Option<Self::Item>> + Send;
}

/// Jobs that are their own payload.
pub(crate) struct Direct;

impl<J: Send + 'static> Feed<J> for Direct {
    type Item = J;
    fn take(&mut self, job: J, _planned: Instant) -> impl Future<Output = Option<J>> + Send {
        std::future::ready(Some(job))
    }
}

/// How a phase ended: its start (the first scheduled send) and the most requests it held
/// in flight at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PhaseEnd {
    /// The phase's start.
    pub base: Instant,
    /// The most requests in flight at once.
    pub peak: usize,
}

/// Runs `jobs` under `load` on `rt`: `run(item, dispatch, base)` sends one request and
/// records it; with a dispatch marked `saturated` it records the refusal and sends nothing.
/// Once `stopped()` holds (the server stalled) or the suite is interrupted, nothing more is
/// sent.
pub(crate) fn run_phase<J, F, R, Fut>(
    rt: &Runtime,
    warmup: bool,
    jobs: Vec<J>,
    load: Load,
    feed: F,
    run: R,
    stopped: impl Fn() -> bool + Send + 'static,
) -> PhaseEnd
where
    J: Send + 'static,
    F: Feed<J>,
    R: Fn(F::Item, Dispatch, Instant) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let plan = Plan::new(jobs, load);
    let base = plan.base;
    let mut d = Dispatcher {
        plan,
        feed,
        run: Arc::new(run),
        warmup,
        in_flight: 0,
        peak: 0,
        handles: Vec::new(),
    };
    let peak = rt.block_on(async move {
        let task = tokio::spawn(async move {
            d.drive(stopped).await;
            d.peak
        });
        task.await.unwrap_or_default()
    });
    PhaseEnd { base, peak }
}

struct Dispatcher<J, F, R> {
    plan: Plan<J>,
    feed: F,
    run: Arc<R>,
    warmup: bool,
    in_flight: usize,
    peak: usize,
    handles: Vec<tokio::task::JoinHandle<()>>,
}

impl<J, F, R, Fut> Dispatcher<J, F, R>
where
    J: Send + 'static,
    F: Feed<J>,
    R: Fn(F::Item, Dispatch, Instant) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    async fn drive(&mut self, stopped: impl Fn() -> bool) {
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<()>();
        let mut deadlines = Deadlines::new();
        let halt = |stopped: &dyn Fn() -> bool| stopped() || dfx_core::stop::requested();
        // Workers start one at a time, yielding between starts: each new request is written
        // by its task before the next starts. Spawning all at once let hundreds of requests
        // be "sent" (clock read) while their tasks waited behind the others' set-up, which
        // charged up to tens of ms of client queueing to the first TTFPs of a burst.
        while let Some(a) = self.plan.ramp() {
            if halt(&stopped) {
                break;
            }
            self.launch(a, &done_tx).await;
            tokio::task::yield_now().await;
        }
        loop {
            if halt(&stopped) {
                self.plan.abandon();
            }
            while let Some(admit) = self.plan.due(Instant::now(), self.in_flight) {
                match admit {
                    Admit::Send(a) => self.launch(a, &done_tx).await,
                    Admit::Refuse(a, cap) => self.refuse(a, cap).await,
                    Admit::Queued => {}
                }
            }
            if self.plan.exhausted() && self.in_flight == 0 {
                break;
            }
            let next = self.plan.next_deadline();
            tokio::select! {
                Some(()) = done_rx.recv() => {
                    self.in_flight -= 1;
                    if halt(&stopped) {
                        continue;
                    }
                    // One ended, one more: a closed loop's next or the first waiting arrival.
                    if let Some(a) = self.plan.after_end(self.in_flight) {
                        self.launch(a, &done_tx).await;
                    }
                }
                () = deadlines.until(next.unwrap_or_else(Instant::now)), if next.is_some() => {}
            }
        }
        for h in self.handles.drain(..) {
            let _ = h.await;
        }
    }

    /// Takes the arrival's payload and starts its task; its slot is taken now.
    async fn launch(&mut self, a: Arrival<J>, done: &mpsc::UnboundedSender<()>) {
        let Some(item) = self.feed.take(a.job, a.planned).await else {
            self.plan.abandon();
            return;
        };
        self.in_flight += 1;
        self.peak = self.peak.max(self.in_flight);
        let d = self.dispatch(a.index, a.planned, a.dispatched, None);
        let (run, done, base) = (self.run.clone(), done.clone(), self.plan.base);
        self.handles.push(tokio::spawn(async move {
            run(item, d, base).await;
            let _ = done.send(());
        }));
    }

    /// Hands an arrival the saturation gate refused to `run`, marked `saturated`.
    async fn refuse(&mut self, a: Arrival<J>, cap: usize) {
        let Some(item) = self.feed.take(a.job, a.planned).await else {
            self.plan.abandon();
            return;
        };
        let d = self.dispatch(a.index, a.planned, a.dispatched, Some(cap));
        let (run, base) = (self.run.clone(), self.plan.base);
        self.handles
            .push(tokio::spawn(async move { run(item, d, base).await }));
    }

    fn dispatch(
        &self,
        index: usize,
        planned: Instant,
        dispatched: Instant,
        saturated: Option<usize>,
    ) -> Dispatch {
        Dispatch {
            index,
            warmup: self.warmup,
            planned,
            dispatched,
            slot: Instant::now(),
            saturated,
        }
    }
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
