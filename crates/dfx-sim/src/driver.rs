//! Runs a performance model ([`Model`]: the TTS engine or the omni engine) against the
//! wall clock on its own OS thread.
//!
//! Why a thread and not a tokio task: tokio's timer wheel has 1 ms granularity, which at a
//! speed factor of 10 would add up to 10 simulated milliseconds to a 53 ms first packet.
//! `recv_timeout` on a std channel sleeps with the kernel's high-resolution timers
//! (tens of microseconds), and one thread serves every stage and every request: the cost
//! is one wake-up per stage step, whatever the number of streams.
//!
//! Virtual time `v` maps to wall time `start + v / speed`. Events are processed at their
//! scheduled virtual times even when the thread wakes late, so lateness never feeds back
//! into the model; it is measured per emitted chunk and reported as lag.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::engine::{Model, VTime};
use crate::stats::Stats;

/// Maps virtual nanoseconds to wall-clock instants.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    start: Instant,
    speed: f64,
}

impl Clock {
    pub(crate) fn new(speed: f64) -> Self {
        Clock {
            start: Instant::now(),
            speed,
        }
    }

    pub(crate) fn virt(&self, at: Instant) -> VTime {
        (at.saturating_duration_since(self.start).as_nanos() as f64 * self.speed) as VTime
    }

    /// Wall time of virtual time `v`; a time past what `Instant` holds (not reachable
    /// with a bounded speed factor) saturates to a day from the start rather than panic.
    pub(crate) fn real(&self, v: VTime) -> Instant {
        let d = Duration::from_nanos((v as f64 / self.speed) as u64);
        self.start
            .checked_add(d)
            .unwrap_or_else(|| self.start + Duration::from_secs(86_400))
    }
}

enum Cmd<M: Model> {
    Submit {
        id: u64,
        job: M::Job,
        route: M::Route,
        arrived: Instant,
        tx: UnboundedSender<M::Emission>,
    },
    Cancel(u64),
    Stop,
}

/// The TTS engine's thread, as the handlers see it.
pub(crate) type SpeechHandle = EngineHandle<crate::engine::Engine>;

/// The handlers' side of a model's thread.
pub(crate) struct EngineHandle<M: Model> {
    tx: mpsc::Sender<Cmd<M>>,
    next_id: AtomicU64,
    latest: Arc<Mutex<M::Snapshot>>,
}

impl<M: Model> std::fmt::Debug for EngineHandle<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineHandle").finish_non_exhaustive()
    }
}

impl<M: Model> EngineHandle<M> {
    /// Starts the model's thread; `name` names the thread.
    pub(crate) fn start(
        model: M,
        name: &str,
        speed: f64,
        stats: Arc<Stats>,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let clock = Clock::new(speed);
        let latest = Arc::new(Mutex::new(model.snapshot()));
        let publish = latest.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(model, clock, rx, &stats, &publish))?;
        Ok(EngineHandle {
            tx,
            next_id: AtomicU64::new(1),
            latest,
        })
    }

    /// The model's latest figures (refreshed every 100 ms).
    pub(crate) fn snapshot(&self) -> M::Snapshot {
        self.latest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Queues a job that reached the server at `arrived` (its `id` is assigned here, in
    /// arrival order); emissions arrive on the returned channel, which closes after the
    /// last one or when the model stops. The model starts the request at `arrived`: the
    /// simulator's own parsing time is part of the modelled prefill, not added to it.
    pub(crate) fn submit(
        &self,
        mut job: M::Job,
        arrived: Instant,
    ) -> (u64, UnboundedReceiver<M::Emission>) {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let route = M::route(&mut job, id);
        let (tx, rx) = unbounded_channel();
        let _ = self.tx.send(Cmd::Submit {
            id,
            job,
            route,
            arrived,
            tx,
        });
        (id, rx)
    }

    /// Withdraws a job (client gone).
    pub(crate) fn cancel(&self, id: u64) {
        let _ = self.tx.send(Cmd::Cancel(id));
    }

    /// Stops the model: every open channel closes.
    pub(crate) fn stop(&self) {
        let _ = self.tx.send(Cmd::Stop);
    }
}

/// Counts a request in flight; on drop, withdraws it from its model unless it finished.
pub(crate) struct InFlight<M: Model> {
    /// The job's routing id.
    pub id: u64,
    /// The model's thread.
    pub engine: Arc<EngineHandle<M>>,
    /// The server's counters.
    pub stats: Arc<Stats>,
    /// Set once the last emission was delivered.
    pub finished: bool,
}

impl<M: Model> Drop for InFlight<M> {
    fn drop(&mut self) {
        self.stats.inflight.fetch_sub(1, Ordering::SeqCst);
        if self.finished {
            self.stats.completed.fetch_add(1, Ordering::Relaxed);
        } else {
            self.engine.cancel(self.id);
            self.stats.cancelled.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn run<M: Model>(
    mut model: M,
    clock: Clock,
    rx: mpsc::Receiver<Cmd<M>>,
    stats: &Stats,
    latest: &Mutex<M::Snapshot>,
) {
    let publish = |s: M::Snapshot| *latest.lock().unwrap_or_else(|p| p.into_inner()) = s;
    let mut routes: HashMap<u64, (M::Route, UnboundedSender<M::Emission>)> = HashMap::new();
    let mut out = Vec::new();
    let mut last_snapshot = Instant::now();
    loop {
        let msg = match model.next_event() {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(v) => match clock.real(v).checked_duration_since(Instant::now()) {
                Some(wait) if !wait.is_zero() => rx.recv_timeout(wait),
                _ => Err(RecvTimeoutError::Timeout),
            },
        };
        let now = clock.virt(Instant::now());
        match msg {
            Ok(Cmd::Submit {
                id,
                job,
                route,
                arrived,
                tx,
            }) => {
                model.advance(now, &mut out);
                routes.insert(id, (route, tx));
                let at = clock.virt(arrived).max(model.now());
                model.submit(at, job, &mut out);
            }
            Ok(Cmd::Cancel(id)) => {
                model.advance(now, &mut out);
                model.cancel(id);
                routes.remove(&id);
            }
            Ok(Cmd::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => model.advance(now, &mut out),
        }
        dispatch(&mut model, &clock, &mut routes, &mut out, stats);
        if last_snapshot.elapsed() >= Duration::from_millis(100) {
            publish(model.snapshot());
            last_snapshot = Instant::now();
        }
    }
    publish(model.snapshot());
}

/// Sends each emission to its job's channel; a closed channel cancels the job.
fn dispatch<M: Model>(
    model: &mut M,
    clock: &Clock,
    routes: &mut HashMap<u64, (M::Route, UnboundedSender<M::Emission>)>,
    out: &mut Vec<M::Emission>,
    stats: &Stats,
) {
    let wall = Instant::now();
    for e in out.drain(..) {
        let (id, at) = M::due(&e);
        let Some((route, tx)) = routes.get(&id) else {
            continue;
        };
        let last = M::finishes(&e, route);
        stats.record_lag(wall.saturating_duration_since(clock.real(at)));
        if tx.send(e).is_err() {
            routes.remove(&id);
            model.cancel(id);
        } else if last {
            routes.remove(&id);
        }
    }
}
