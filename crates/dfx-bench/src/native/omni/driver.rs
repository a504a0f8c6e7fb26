//! Offers a chat-omni phase to the server with bodies built lazily: a generator thread
//! encodes the bodies in order into a bounded queue (`lookahead` bodies), so a step holds
//! at most the queued bodies, the one being built and the ones in flight, never all of
//! them (a `(0, 60, 3)` audio item alone is ~23 MB of base64). Closed loop: workers take
//! the next body as they become free. Open loop: the dispatcher (a task on a `timerfd`)
//! takes the next body, then waits for its deadline; a body that was not ready in time shows as `body_wait_s` and
//! in `lag_s`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::time::Instant;

use bytes::Bytes;
use tokio::runtime::Runtime;
use tokio::sync::{Mutex, Semaphore, mpsc};

use super::client::{ChatExchange, ChatFailure, ChatTarget};
use super::record::{ChatRecord, ChatSample};
use crate::native::deadline::Deadlines;
use crate::native::driver::{Load, planned_sends};
use crate::native::record::Dispatch;
use crate::native::stall::SharedWatch;

/// A body ready to send (or why it could not be built).
pub(crate) type Ready = (Result<Bytes, String>, ChatSample);

/// Counts of tokens output text is measured with, shared by the request tasks.
pub(crate) type CountFn = Arc<dyn Fn(&str) -> Option<u64> + Send + Sync>;

/// What every request of a phase shares.
#[derive(Clone)]
pub(crate) struct ChatPhase {
    pub target: Arc<ChatTarget>,
    pub warmup: bool,
    pub records: Sender<ChatRecord>,
    pub count: CountFn,
    /// The step's stall rule, shared by the warmups and the measured phase.
    pub watch: Arc<SharedWatch>,
    now: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl ChatPhase {
    /// A phase writing its records to `records`.
    pub(crate) fn new(
        target: Arc<ChatTarget>,
        warmup: bool,
        records: Sender<ChatRecord>,
        count: CountFn,
        watch: Arc<SharedWatch>,
    ) -> Self {
        ChatPhase {
            target,
            warmup,
            records,
            count,
            watch,
            now: Arc::default(),
            peak: Arc::default(),
        }
    }

    /// Exact largest number of requests in flight at once.
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

async fn run_one(ctx: &ChatPhase, ready: Ready, d: Dispatch, base: Instant, wait: f64) {
    if ctx.watch.stopped() {
        // The server stalled: the rest of the step is not sent.
        return;
    }
    let (body, sample) = ready;
    let n = ctx.now.fetch_add(1, Ordering::SeqCst) + 1;
    ctx.peak.fetch_max(n, Ordering::SeqCst);
    let send_at = Instant::now();
    let x = match body {
        Ok(b) => tokio::select! {
            x = ctx.target.execute(b, sample.request_id.as_deref(), &ctx.watch) => x,
            why = ctx.watch.tripped() => ChatExchange::failed(send_at, ChatFailure::Stall, why),
        },
        Err(e) => ctx.target.refused(e),
    };
    let left = ctx.now.fetch_sub(1, Ordering::SeqCst).saturating_sub(1);
    let stalled = x.failure.as_ref().filter(|f| f.0 == ChatFailure::Stall);
    ctx.watch
        .ended(stalled.map(|f| f.1.as_str()), x.failure.is_none(), left);
    let rec = ChatRecord::new(&d, sample, x, base, wait, ctx.count.as_ref());
    let _ = ctx.records.send(rec);
}

/// Runs the bodies of `rx` under `load`; returns the phase start.
pub(crate) fn run_phase(
    rt: &Runtime,
    ctx: &ChatPhase,
    rx: mpsc::Receiver<Ready>,
    n: usize,
    load: Load,
) -> Instant {
    match load {
        Load::Closed { concurrency } => closed_loop(rt, ctx, rx, n, concurrency),
        Load::Open { offsets, cap, .. } => open_loop(rt, ctx, rx, &offsets, cap),
    }
}

fn closed_loop(
    rt: &Runtime,
    ctx: &ChatPhase,
    rx: mpsc::Receiver<Ready>,
    n: usize,
    concurrency: usize,
) -> Instant {
    let rx = Arc::new(Mutex::new((rx, 0usize)));
    let workers = concurrency.clamp(1, n.max(1));
    let base = Instant::now();
    let ctx = ctx.clone();
    rt.block_on(async move {
        let mut handles = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (rx, ctx) = (rx.clone(), ctx.clone());
            handles.push(tokio::spawn(async move {
                while !ctx.watch.stopped() {
                    let free = Instant::now();
                    let (ready, i) = {
                        let mut g = rx.lock().await;
                        let Some(r) = g.0.recv().await else { break };
                        g.1 += 1;
                        (r, g.1 - 1)
                    };
                    let now = Instant::now();
                    let d = Dispatch {
                        index: i,
                        warmup: ctx.warmup,
                        planned: free,
                        dispatched: free,
                        slot: free,
                        saturated: None,
                    };
                    let wait = (now - free).as_secs_f64();
                    run_one(&ctx, ready, d, base, wait).await;
                }
            }));
            tokio::task::yield_now().await;
        }
        for h in handles {
            let _ = h.await;
        }
    });
    base
}

fn open_loop(
    rt: &Runtime,
    ctx: &ChatPhase,
    mut rx: mpsc::Receiver<Ready>,
    offsets: &[f64],
    cap: Option<usize>,
) -> Instant {
    let sem = cap.map(|c| Arc::new(Semaphore::new(c.max(1))));
    let (base, planned) = planned_sends(offsets);
    let ctx = ctx.clone();
    // The dispatcher is a task waiting on a timerfd, as the speech client's
    // (`native::deadline` says why not a sleeping thread).
    rt.block_on(async move {
        let dispatcher = tokio::spawn(async move {
            let mut deadlines = Deadlines::new();
            let mut handles = Vec::with_capacity(planned.len());
            for (i, planned) in planned.into_iter().enumerate() {
                if ctx.watch.stopped() {
                    break;
                }
                let asked = Instant::now();
                let Some(ready) = rx.recv().await else {
                    break;
                };
                let got = Instant::now();
                let wait = got
                    .saturating_duration_since(planned.max(asked))
                    .as_secs_f64();
                deadlines.until(planned).await;
                let dispatched = Instant::now();
                let (ctx, sem) = (ctx.clone(), sem.clone());
                handles.push(tokio::spawn(async move {
                    let _permit = match sem {
                        Some(s) => s.acquire_owned().await.ok(),
                        None => None,
                    };
                    let d = Dispatch {
                        index: i,
                        warmup: ctx.warmup,
                        planned,
                        dispatched,
                        slot: Instant::now(),
                        saturated: None,
                    };
                    run_one(&ctx, ready, d, base, wait).await;
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
