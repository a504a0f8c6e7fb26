//! Offers a chat-omni phase to the server with bodies built lazily: a generator thread
//! encodes the bodies in order into a bounded queue (`lookahead` bodies), so a step holds
//! at most the queued bodies, the one being built and the ones in flight, never all of
//! them (a `(0, 60, 3)` audio item alone is ~23 MB of base64). The one scheduler
//! ([`tasks::run_phase`]) decides when each request starts and takes its body from the
//! queue then; a body that was not ready in time shows as `body_wait_s` and in `lag_s`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::time::Instant;

use bytes::Bytes;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

use super::client::{ChatExchange, ChatFailure, ChatTarget};
use super::record::{ChatRecord, ChatSample};
use crate::native::driver::Load;
use crate::native::driver::tasks::{self, Feed, PhaseEnd};
use crate::native::lapse::TimeLapse;
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
    /// The time-lapse its records are mapped back with (real time unless set).
    pub lapse: TimeLapse,
    /// Requests in flight now (the stall rule asks how many are left when one ends).
    now: Arc<AtomicUsize>,
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
            lapse: TimeLapse::REAL_TIME,
            now: Arc::default(),
        }
    }
}

async fn run_one(ctx: &ChatPhase, ready: Ready, d: Dispatch, base: Instant, wait: f64) {
    if ctx.watch.stopped() {
        // The server stalled: the rest of the step is not sent.
        return;
    }
    let (body, sample) = ready;
    if let Some(cap) = d.saturated {
        // Refused by the saturation gate: recorded, never sent.
        let why = crate::native::client::saturated_message(cap);
        let x = ChatExchange::failed(Instant::now(), ChatFailure::Saturated, why);
        record(ctx, (d, sample, x), base, wait);
        return;
    }
    ctx.now.fetch_add(1, Ordering::SeqCst);
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
    record(ctx, (d, sample, x), base, wait);
}

/// Records a finished request, its times mapped to the real-time scale.
fn record(
    ctx: &ChatPhase,
    (mut d, sample, mut x): (Dispatch, ChatSample, ChatExchange),
    base: Instant,
    wait: f64,
) {
    ctx.lapse.dispatch(base, &mut d);
    lapse_chat(ctx.lapse, base, &mut x);
    let wait = ctx.lapse.to_real_s(wait);
    let rec = ChatRecord::new(&d, sample, x, base, wait, ctx.count.as_ref());
    let _ = ctx.records.send(rec);
}

/// A chat exchange on the real-time scale ([`TimeLapse`]): its send from the phase's
/// `base`, and every time its stream noted (seconds since the send) with the time to the
/// response's headers kept as it was: uploading a body of up to hundreds of MB and the
/// server parsing it cost the same wall time at any simulator speed, so only what follows
/// the headers (the simulator's modelled work) is stretched by K.
fn lapse_chat(k: TimeLapse, base: Instant, x: &mut ChatExchange) {
    if k.is_real_time() {
        return;
    }
    let head = x.head_s.unwrap_or(0.0);
    let real = |t: f64| k.after_head(head, t);
    let end = real(x.end_at.saturating_duration_since(x.send_at).as_secs_f64());
    x.send_at = k.instant(base, x.send_at);
    x.end_at = x.send_at + std::time::Duration::from_secs_f64(end.max(0.0));
    let st = &mut x.stream;
    let opt = |v: Option<f64>| v.map(real);
    st.ttft_s = opt(st.ttft_s);
    st.audio_first_s = opt(st.audio_first_s);
    st.audio_last_s = opt(st.audio_last_s);
    st.last_msg_s = opt(st.last_msg_s);
    k.timeline(&mut st.itl_s);
    st.token_t_s.iter_mut().for_each(|t| *t = real(*t));
    st.audio_t_s.iter_mut().for_each(|t| *t = real(*t));
}

/// The bodies of a phase, received in order from the generator thread; a body not ready
/// when its request was due counts as `body_wait_s` (seconds, from the later of its
/// planned send and the ask).
struct Bodies(mpsc::Receiver<Ready>);

impl Feed<()> for Bodies {
    type Item = (Ready, f64);
    async fn take(&mut self, (): (), planned: Instant) -> Option<(Ready, f64)> {
        let asked = Instant::now();
        let ready = self.0.recv().await?;
        let wait = Instant::now()
            .saturating_duration_since(planned.max(asked))
            .as_secs_f64();
        Some((ready, wait))
    }
}

/// Runs the `n` bodies of `rx` under `load` on the one scheduler ([`tasks::run_phase`]);
/// returns the phase's start and its peak in flight.
pub(crate) fn run_phase(
    rt: &Runtime,
    ctx: &ChatPhase,
    rx: mpsc::Receiver<Ready>,
    n: usize,
    load: Load,
) -> PhaseEnd {
    let (run_ctx, stop_ctx) = (ctx.clone(), ctx.clone());
    tasks::run_phase(
        rt,
        ctx.warmup,
        vec![(); n],
        load,
        Bodies(rx),
        move |(ready, wait): (Ready, f64), d: Dispatch, base: Instant| {
            let ctx = run_ctx.clone();
            async move { run_one(&ctx, ready, d, base, wait).await }
        },
        move || stop_ctx.watch.stopped(),
    )
}
