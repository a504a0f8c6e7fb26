//! Offers a phase of requests to the server on a tokio runtime (the realtime sessions;
//! speech requests run on `super::evloop` with the same schedule): closed loop (a fixed number of workers, a new
//! request as each finishes) or open loop (a dispatcher task firing each request at its
//! absolute deadline, optionally capped in flight: an arrival finding the cap full waits
//! for a slot, or with the saturation gate is not sent and is recorded as a failure).

use dfx_core::plan::Saturation;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::runtime::Runtime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::deadline::Deadlines;
use super::record::{Dispatch, Sample};

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
    Closed { concurrency: usize },
    /// Each request at `base + offsets[i]` seconds; at most `cap` in flight when set,
    /// an arrival finding it full waiting or failing as `saturation` says.
    Open {
        offsets: Vec<f64>,
        cap: Option<usize>,
        saturation: Saturation,
    },
}

impl Load {
    /// The most requests this load holds in flight at once: its concurrency, the open
    /// loop's cap, or, uncapped, the arrivals of [`super::fds::OPEN_LOOP_WINDOW_S`] at its
    /// mean rate (an estimate, for the file-descriptor budget).
    pub(crate) fn peak_in_flight(&self) -> usize {
        match self {
            Load::Closed { concurrency } => *concurrency,
            Load::Open { cap: Some(c), .. } => *c,
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

/// Runs a phase of any kind of request on a tokio runtime: `run(job, dispatch, base)`
/// sends one request and records it (`base` is the phase's start); with a dispatch
/// marked `saturated` it records the refusal and sends nothing. Used by the realtime
/// client, whose requests are WebSocket sessions; speech requests run on the event loop
/// (`super::evloop`), which schedules them the same way.
pub(crate) fn run_phase_with<J, F, Fut>(
    rt: &Runtime,
    warmup: bool,
    jobs: Vec<J>,
    load: Load,
    run: F,
) -> Instant
where
    J: Clone + Send + Sync + 'static,
    F: Fn(J, Dispatch, Instant) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let run = Arc::new(run);
    match load {
        Load::Closed { concurrency } => closed_loop(rt, warmup, jobs, concurrency, run),
        Load::Open {
            offsets,
            cap,
            saturation,
        } => {
            let gate = Gate { cap, saturation };
            open_loop(rt, warmup, jobs, &offsets, gate, run)
        }
    }
}

fn closed_loop<J, F, Fut>(
    rt: &Runtime,
    warmup: bool,
    jobs: Vec<J>,
    concurrency: usize,
    run: Arc<F>,
) -> Instant
where
    J: Clone + Send + Sync + 'static,
    F: Fn(J, Dispatch, Instant) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let jobs = Arc::new(jobs);
    let next = Arc::new(AtomicUsize::new(0));
    let n_workers = concurrency.clamp(1, jobs.len().max(1));
    let base = Instant::now();
    // Workers are started one at a time from a task on the runtime, yielding between
    // starts: each new worker's request is written by its connection task before the next
    // worker starts. Spawning all of them at once let hundreds of requests be "sent" (clock
    // read) while their connection tasks waited behind the other requests' set-up, which
    // charged up to tens of ms of client queueing to the first TTFPs of a burst.
    rt.block_on(async move {
        let starter = tokio::spawn(async move {
            let mut workers = Vec::with_capacity(n_workers);
            for _ in 0..n_workers {
                let (jobs, next, run) = (jobs.clone(), next.clone(), run.clone());
                workers.push(tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(job) = jobs.get(i).cloned() else {
                            break;
                        };
                        let now = Instant::now();
                        let d = Dispatch {
                            index: i,
                            warmup,
                            planned: now,
                            dispatched: now,
                            slot: now,
                            saturated: None,
                        };
                        run(job, d, base).await;
                    }
                }));
                tokio::task::yield_now().await;
            }
            for w in workers {
                let _ = w.await;
            }
        });
        let _ = starter.await;
    });
    base
}

/// The in-flight cap of an open-loop phase and what an arrival finding it full does.
#[derive(Debug, Clone, Copy)]
struct Gate {
    cap: Option<usize>,
    saturation: Saturation,
}

/// How an arrival gets its slot: none needed, taken at its deadline by the dispatcher
/// (the gate), refused (the gate found the cap full), or awaited in its task.
enum Slot {
    Free,
    Taken(OwnedSemaphorePermit),
    Refused(usize),
    Await(Arc<Semaphore>),
}

impl Slot {
    /// The slot of an arrival due now.
    fn at_deadline(sem: Option<&Arc<Semaphore>>, gate: Gate) -> Slot {
        match (sem, gate.saturation) {
            (None, _) => Slot::Free,
            (Some(s), Saturation::Wait) => Slot::Await(s.clone()),
            (Some(s), Saturation::Fail) => match s.clone().try_acquire_owned() {
                Ok(p) => Slot::Taken(p),
                Err(_) => Slot::Refused(gate.cap.unwrap_or_default()),
            },
        }
    }

    /// The permit to hold while the request runs, and the cap when it was refused.
    async fn take(self) -> (Option<OwnedSemaphorePermit>, Option<usize>) {
        match self {
            Slot::Free => (None, None),
            Slot::Taken(p) => (Some(p), None),
            Slot::Refused(cap) => (None, Some(cap)),
            Slot::Await(s) => (s.acquire_owned().await.ok(), None),
        }
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

fn open_loop<J, F, Fut>(
    rt: &Runtime,
    warmup: bool,
    jobs: Vec<J>,
    offsets: &[f64],
    gate: Gate,
    run: Arc<F>,
) -> Instant
where
    J: Clone + Send + Sync + 'static,
    F: Fn(J, Dispatch, Instant) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let sem = gate.cap.map(|c| Arc::new(Semaphore::new(c.max(1))));
    let (base, planned) = planned_sends(offsets);
    // The dispatcher runs as a task, so each deadline wakes a worker that spawns the
    // request locally (`deadline.rs` says why not a thread).
    rt.block_on(async move {
        let dispatcher = tokio::spawn(async move {
            let mut deadlines = Deadlines::new();
            let mut handles = Vec::with_capacity(jobs.len());
            for (i, (job, planned)) in jobs.into_iter().zip(planned).enumerate() {
                deadlines.until(planned).await;
                let dispatched = Instant::now();
                let slot = Slot::at_deadline(sem.as_ref(), gate);
                let run = run.clone();
                handles.push(tokio::spawn(async move {
                    let (_permit, saturated) = slot.take().await;
                    let d = Dispatch {
                        index: i,
                        warmup,
                        planned,
                        dispatched,
                        slot: Instant::now(),
                        saturated,
                    };
                    run(job, d, base).await;
                }));
            }
            for h in handles {
                let _ = h.await;
            }
        });
        let _ = dispatcher.await;
    });
    base
}
