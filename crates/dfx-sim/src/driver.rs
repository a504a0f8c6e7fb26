//! Runs the [`Engine`] against the wall clock on its own OS thread.
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
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::engine::{Emission, Engine, EngineConfig, Job, VTime};
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

enum Cmd {
    Submit {
        job: Job,
        arrived: Instant,
        tx: UnboundedSender<Emission>,
    },
    Cancel(u64),
    Stop,
}

/// The handlers' side of the engine thread.
#[derive(Debug)]
pub(crate) struct EngineHandle {
    tx: mpsc::Sender<Cmd>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cmd")
    }
}

impl EngineHandle {
    /// Starts the engine thread.
    pub(crate) fn start(cfg: EngineConfig, speed: f64, stats: Arc<Stats>) -> Self {
        let (tx, rx) = mpsc::channel();
        let clock = Clock::new(speed);
        std::thread::Builder::new()
            .name("dfx-sim-engine".into())
            .spawn(move || run(Engine::new(cfg), clock, rx, &stats))
            .expect("spawn engine thread");
        EngineHandle {
            tx,
            next_id: AtomicU64::new(1),
        }
    }

    /// Queues a job that reached the server at `arrived` (its `id` is assigned here, in
    /// arrival order); chunks arrive on the returned channel, which closes after the last
    /// one or when the engine stops. The model starts the request at `arrived`: the
    /// simulator's own parsing time is part of the modelled prefill, not added to it.
    pub(crate) fn submit(
        &self,
        mut job: Job,
        arrived: Instant,
    ) -> (u64, UnboundedReceiver<Emission>) {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        job.id = id;
        let (tx, rx) = unbounded_channel();
        let _ = self.tx.send(Cmd::Submit { job, arrived, tx });
        (id, rx)
    }

    /// Withdraws a job (client gone).
    pub(crate) fn cancel(&self, id: u64) {
        let _ = self.tx.send(Cmd::Cancel(id));
    }

    /// Stops the engine: every open chunk channel closes.
    pub(crate) fn stop(&self) {
        let _ = self.tx.send(Cmd::Stop);
    }
}

fn run(mut engine: Engine, clock: Clock, rx: mpsc::Receiver<Cmd>, stats: &Stats) {
    let mut senders: HashMap<u64, UnboundedSender<Emission>> = HashMap::new();
    let mut out = Vec::new();
    let mut last_snapshot = Instant::now();
    loop {
        let msg = match engine.next_event() {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(v) => {
                let due = clock.real(v);
                match due.checked_duration_since(Instant::now()) {
                    Some(wait) if !wait.is_zero() => rx.recv_timeout(wait),
                    _ => Err(RecvTimeoutError::Timeout),
                }
            }
        };
        let now = clock.virt(Instant::now());
        match msg {
            Ok(Cmd::Submit { job, arrived, tx }) => {
                senders.insert(job.id, tx);
                engine.advance(now, &mut out);
                let at = clock.virt(arrived).max(engine.now());
                engine.submit(at, job, &mut out);
            }
            Ok(Cmd::Cancel(id)) => {
                engine.advance(now, &mut out);
                engine.cancel(id);
                senders.remove(&id);
            }
            Ok(Cmd::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => engine.advance(now, &mut out),
        }
        dispatch(&mut engine, &clock, &mut senders, &mut out, stats);
        if last_snapshot.elapsed() >= Duration::from_millis(100) {
            stats.set_engine(engine.snapshot());
            last_snapshot = Instant::now();
        }
    }
    stats.set_engine(engine.snapshot());
}

fn dispatch(
    engine: &mut Engine,
    clock: &Clock,
    senders: &mut HashMap<u64, UnboundedSender<Emission>>,
    out: &mut Vec<Emission>,
    stats: &Stats,
) {
    let now = Instant::now();
    for e in out.drain(..) {
        let Some(tx) = senders.get(&e.id) else {
            continue;
        };
        stats.record_lag(now.saturating_duration_since(clock.real(e.at)));
        if tx.send(e).is_err() {
            senders.remove(&e.id);
            engine.cancel(e.id);
        } else if e.last {
            senders.remove(&e.id);
        }
    }
}
