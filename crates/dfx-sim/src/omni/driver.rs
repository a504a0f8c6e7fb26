//! Runs the [`OmniEngine`] against the wall clock on its own OS thread, like
//! `crate::driver` does for the TTS engine (same clock mapping: virtual `v` ↦
//! `start + v / speed`; events processed at their scheduled virtual times, lateness
//! reported as lag, never fed back).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::engine::{OmniEmission, OmniEngine, OmniEngineConfig, OmniJob, OmniSnapshot};
use crate::driver::Clock;
use crate::stats::Stats;

enum Cmd {
    Submit {
        job: OmniJob,
        arrived: Instant,
        tx: UnboundedSender<OmniEmission>,
    },
    Cancel(u64),
    Stop,
}

/// The handlers' side of the omni engine thread.
#[derive(Debug)]
pub struct OmniHandle {
    tx: mpsc::Sender<Cmd>,
    next_id: AtomicU64,
    snapshot: Arc<std::sync::Mutex<OmniSnapshot>>,
}

impl std::fmt::Debug for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cmd")
    }
}

impl OmniHandle {
    /// Starts the engine thread.
    pub fn start(cfg: OmniEngineConfig, speed: f64, stats: Arc<Stats>) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let clock = Clock::new(speed);
        let snapshot = Arc::new(std::sync::Mutex::new(OmniSnapshot::default()));
        let snap = snapshot.clone();
        std::thread::Builder::new()
            .name("dfx-sim-omni".into())
            .spawn(move || run(OmniEngine::new(cfg), clock, rx, &stats, &snap))?;
        Ok(OmniHandle {
            tx,
            next_id: AtomicU64::new(1),
            snapshot,
        })
    }

    /// Queues a job that reached the server at `arrived`; outputs arrive on the returned
    /// channel, which closes after the last one or when the engine stops.
    pub(crate) fn submit(
        &self,
        mut job: OmniJob,
        arrived: Instant,
    ) -> (u64, UnboundedReceiver<OmniEmission>) {
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

    /// Stops the engine: every open channel closes.
    pub fn stop(&self) {
        let _ = self.tx.send(Cmd::Stop);
    }

    /// The latest queue figures (refreshed every 100 ms).
    pub fn snapshot(&self) -> OmniSnapshot {
        self.snapshot.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

struct Route {
    tx: UnboundedSender<OmniEmission>,
    wants_audio: bool,
}

fn run(
    mut engine: OmniEngine,
    clock: Clock,
    rx: mpsc::Receiver<Cmd>,
    stats: &Stats,
    snap: &std::sync::Mutex<OmniSnapshot>,
) {
    let mut routes: HashMap<u64, Route> = HashMap::new();
    let mut out = Vec::new();
    let mut last_snapshot = Instant::now();
    loop {
        let msg = match engine.next_event() {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(v) => match clock.real(v).checked_duration_since(Instant::now()) {
                Some(wait) if !wait.is_zero() => rx.recv_timeout(wait),
                _ => Err(RecvTimeoutError::Timeout),
            },
        };
        let now = clock.virt(Instant::now());
        match msg {
            Ok(Cmd::Submit { job, arrived, tx }) => {
                engine.advance(now, &mut out);
                let wants_audio = job.audio_frames > 0;
                routes.insert(job.id, Route { tx, wants_audio });
                let at = clock.virt(arrived).max(engine.now());
                engine.submit(at, job, &mut out);
            }
            Ok(Cmd::Cancel(id)) => {
                engine.advance(now, &mut out);
                engine.cancel(id);
                routes.remove(&id);
            }
            Ok(Cmd::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => engine.advance(now, &mut out),
        }
        let wall = Instant::now();
        for e in out.drain(..) {
            let Some(r) = routes.get(&e.id) else {
                continue;
            };
            stats.record_lag(wall.saturating_duration_since(clock.real(e.at)));
            let finished = e.finishes(r.wants_audio);
            if r.tx.send(e).is_err() {
                routes.remove(&e.id);
                engine.cancel(e.id);
            } else if finished {
                routes.remove(&e.id);
            }
        }
        if last_snapshot.elapsed() >= Duration::from_millis(100) {
            if let Ok(mut s) = snap.lock() {
                *s = engine.snapshot();
            }
            last_snapshot = Instant::now();
        }
    }
    if let Ok(mut s) = snap.lock() {
        *s = engine.snapshot();
    }
}
