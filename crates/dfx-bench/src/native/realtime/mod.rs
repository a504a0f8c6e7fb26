//! The realtime backends `openai-realtime-tts` / `openai-realtime-duplex` of
//! `vllm bench serve --omni` (vllm-omni 0.30; `docs/bench.md` ("Realtime")): each
//! benchmark request is `seed_tts_turns_per_session` turns, each turn one WebSocket
//! session on `/v1/realtime` that streams silence in real time while the server speaks the
//! row's text on its own. Closed and open loop come from `crate::native::driver`.

mod conn;
mod event;
mod lapse;
pub mod metrics;
pub(crate) mod prepare;
pub(crate) mod protocol;
pub(crate) mod result;
pub mod session;

use std::io::Write;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dfx_core::bench::{BenchContext, BenchExit, BenchOutcome, Unsupported};
use dfx_core::plan::{BenchEntry, Dialect, Trial};

use self::metrics::{RealtimeRecord, TurnRecord, request_record};
use self::prepare::RtJob;
use self::session::TurnLimits;
use super::deadline;
use super::driver::{InFlight, Load, tasks};
use super::lapse::TimeLapse;
use super::log::BenchLog;
use super::progress::Progress;
use super::record::Dispatch;
use super::selection::Selection;
use super::stall::SharedWatch;
use super::{NativeSettings, aggregate, summary};
use crate::native::BenchError;

/// The realtime backends the native bench implements.
pub(crate) const BACKENDS: [&str; 2] = ["openai-realtime-tts", "openai-realtime-duplex"];
/// The newer upstream backend dfx-perf refuses (see [`supports`]).
pub(crate) const CHAT_BACKEND: &str = "openai-realtime-chat";
/// The endpoint they use.
pub(crate) const ENDPOINT: &str = "/v1/realtime";

/// Whether `entry` names a realtime backend (then [`supports`] decides).
pub(crate) fn is_realtime(entry: &BenchEntry) -> bool {
    entry
        .backend
        .as_deref()
        .is_some_and(|b| BACKENDS.contains(&b) || b == CHAT_BACKEND)
}

/// Whether the native bench can run a realtime `entry`, else the reason (at load).
pub fn supports(entry: &BenchEntry) -> Result<(), Unsupported> {
    let backend = entry.backend.as_deref().unwrap_or_default();
    if backend == CHAT_BACKEND {
        return Err(Unsupported::RealtimeProtocol {
            backend: CHAT_BACKEND,
            implemented: &BACKENDS,
        });
    }
    if entry.dialect != Dialect::Omni {
        return Err(Unsupported::RealtimeDialect {
            backend: backend.to_string(),
        });
    }
    if entry.endpoint.as_deref() != Some(ENDPOINT) {
        return Err(Unsupported::RealtimeEndpoint {
            backend: backend.to_string(),
            endpoint: entry.endpoint.clone(),
            expected: ENDPOINT,
        });
    }
    let dataset = entry.dataset_name.as_deref().unwrap_or("(none)");
    if dataset == "omniinteract" {
        return Err(Unsupported::RealtimeOmniInteract);
    }
    if !super::DATASETS.contains(&dataset) {
        return Err(Unsupported::RealtimeDataset {
            backend: backend.to_string(),
            dataset: entry.dataset_name.clone(),
            accepted: &super::DATASETS,
        });
    }
    prepare::turns_per_session(entry)
        .map(|_| ())
        .map_err(|e| Unsupported::InvalidEntry(e.to_string()))
}

/// What `crate::native::prepare::preflight` checks, for realtime entries: the dataset
/// resolves and loads.
pub fn preflight(settings: &NativeSettings, trial: &Trial) -> Result<String, BenchError> {
    let entry = &trial.entry;
    let kind = super::prepare::dataset_kind(entry)?;
    let locale = entry.seed_tts_locale.as_deref().unwrap_or("en");
    let mut notes = Vec::new();
    super::prepare::load_dataset(settings, trial, kind, locale, &mut notes)?;
    Ok(notes.join("; "))
}

/// What every request of a phase shares.
#[derive(Clone)]
struct Phase {
    url: Arc<str>,
    limits: TurnLimits,
    records: mpsc::Sender<RealtimeRecord>,
    inflight: Arc<InFlight>,
    /// The step's stall rule: once it trips, no further session starts.
    watch: Arc<SharedWatch>,
    /// Observed times go to the real-time scale through it.
    lapse: TimeLapse,
}

async fn run_request(ph: &Phase, job: RtJob, mut d: Dispatch, base: Instant) {
    if ph.watch.stopped() {
        // The server stalled, or the run is being interrupted: the rest is not sent.
        return;
    }
    if let Some(cap) = d.saturated {
        // Refused by the saturation gate: recorded, never sent.
        let now = Instant::now();
        ph.lapse.dispatch(base, &mut d);
        let span = (ph.lapse.instant(base, now), ph.lapse.instant(base, now));
        let pcm = Default::default();
        let mut rec = request_record(&d, job.sample, job.label, Vec::new(), pcm, span, base);
        rec.base.end.ok = false;
        rec.base.end.error_class = Some("saturated".into());
        rec.base.end.error = Some(super::client::saturated_message(cap));
        let _ = ph.records.send(rec);
        return;
    }
    ph.inflight.enter();
    let start = Instant::now();
    let mut turns: Vec<TurnRecord> = Vec::with_capacity(job.turns.len());
    let mut pcm = None;
    let watch = ph.watch.clone();
    let progressed = move |t: Instant| watch.progressed(t);
    let mut stall = None;
    for (i, t) in job.turns.iter().enumerate() {
        if dfx_core::stop::requested() {
            // The run is being interrupted: no further turn is sent.
            break;
        }
        let mut o = session::run_turn_with(&ph.url, &t.update, &ph.limits, &progressed).await;
        if dfx_core::stop::requested()
            && let Some((class, msg)) = o.error.as_mut()
        {
            *msg = dfx_core::stop::cut_message(msg);
            *class = session::TurnError::Interrupted;
        }
        if let Some((session::TurnError::Stall, msg)) = &o.error {
            stall = Some(msg.clone());
        }
        o.lapse(ph.lapse, base);
        let (rec, stats) = TurnRecord::new(i, &t.utterance_id, &o, ph.lapse.instant(base, start));
        pcm.get_or_insert(stats);
        let failed = !rec.ok;
        turns.push(rec);
        if failed {
            break;
        }
    }
    let end = Instant::now();
    ph.inflight.leave();
    if turns.is_empty() {
        // Interrupted before its first turn: never sent, nothing to record.
        return;
    }
    let ok = turns.iter().all(|t| t.ok);
    ph.watch.ended(stall.as_deref(), ok, ph.inflight.now());
    let pcm = pcm.unwrap_or_default();
    ph.lapse.dispatch(base, &mut d);
    let span = (ph.lapse.instant(base, start), ph.lapse.instant(base, end));
    let rec = request_record(&d, job.sample, job.label, turns, pcm, span, base);
    let _ = ph.records.send(rec);
}

fn run_jobs(rt: &tokio::runtime::Runtime, ph: &Phase, warmup: bool, jobs: Vec<RtJob>, load: Load) {
    let ph = ph.clone();
    let run = move |job, d, base| {
        let ph = ph.clone();
        async move { run_request(&ph, job, d, base).await }
    };
    tasks::run_phase(rt, warmup, jobs, load, tasks::Direct, run, || false);
}

/// How long the records writer sleeps after writing what had arrived: a session's end
/// wakes no thread (at thousands of sessions a second on one core, that wake-up and its
/// write were a fifth of the client's context switches and system calls). Short, so that
/// a batch (its records' serialization) stays well under a millisecond of the core the
/// sessions share.
const WRITE_EVERY: Duration = Duration::from_millis(2);

/// Writes the records to `records.jsonl` as they arrive (what arrived within
/// [`WRITE_EVERY`] in one write) and collects them (timelines dropped from the collected
/// copies).
fn writer(
    path: std::path::PathBuf,
    rx: mpsc::Receiver<RealtimeRecord>,
    mut progress: Progress,
) -> std::thread::JoinHandle<(Vec<RealtimeRecord>, Option<String>)> {
    std::thread::spawn(move || {
        let mut problem = None;
        let mut file = std::fs::File::create(&path)
            .map(|f| std::io::BufWriter::with_capacity(1 << 16, f))
            .ok();
        if file.is_none() {
            problem = Some(format!("cannot write {}", path.display()));
        }
        let mut all = Vec::new();
        while let Ok(first) = rx.recv() {
            for rec in std::iter::once(first).chain(rx.try_iter()) {
                if let Some(f) = file.as_mut() {
                    let line = serde_json::to_string(&rec).unwrap_or_default();
                    if writeln!(f, "{line}").is_err() {
                        problem = Some(format!("cannot write {}", path.display()));
                        file = None;
                    }
                }
                collect(rec, &mut progress, &mut all);
            }
            if file.as_mut().is_some_and(|f| f.flush().is_err()) {
                problem = Some(format!("cannot write {}", path.display()));
                file = None;
            }
            std::thread::sleep(WRITE_EVERY);
        }
        progress.finish();
        (all, problem)
    })
}

/// Counts `rec` in the progress line and keeps it without its timelines.
fn collect(mut rec: RealtimeRecord, progress: &mut Progress, all: &mut Vec<RealtimeRecord>) {
    if !rec.base.id.warmup {
        progress.request_done(rec.base.end.ok);
    }
    for t in &mut rec.turns {
        t.audio_t_s = Vec::new();
        t.audio_bytes = Vec::new();
    }
    all.push(rec);
}

/// Runs one realtime step: warmups, then the measured requests; the result document.
pub fn run(
    settings: &NativeSettings,
    ctx: &BenchContext<'_>,
    log: &mut BenchLog,
) -> Result<BenchOutcome, BenchError> {
    let trial = ctx.trial;
    let entry = &trial.entry;
    let sel = Selection::of(&entry.percentiles);
    let mut p = prepare::prepare(settings, ctx)?;
    for n in &p.notes {
        log.write(n);
    }
    let sessions = match &p.load {
        Load::Closed { concurrency } => concurrency.get(),
        Load::Open { cap: Some(c), .. } => c.get(),
        Load::Open {
            offsets, cap: None, ..
        } => offsets.len(),
    };
    if let Some(note) = super::fds::ensure(sessions.max(p.warmups.len()))? {
        log.write(&note);
    }
    let rt = tasks::runtime("dfx-realtime")?;
    let (tx, rx) = mpsc::channel();
    let progress = Progress::new(&trial.name, p.measured.len(), settings.progress);
    let handle = writer(ctx.out_dir.join("records.jsonl"), rx, progress);
    let mut ph = Phase {
        url: p.url.clone().into(),
        limits: TurnLimits {
            stall: settings.stall,
            append_every: settings
                .time_lapse
                .to_wall(TurnLimits::default().append_every),
            backoff: settings.time_lapse.to_wall(TurnLimits::default().backoff),
            backoff_max: settings
                .time_lapse
                .to_wall(TurnLimits::default().backoff_max),
            ..TurnLimits::default()
        },
        records: tx,
        inflight: Arc::new(InFlight::default()),
        watch: SharedWatch::new(settings.stall),
        lapse: settings.time_lapse,
    };
    let warmups = std::mem::take(&mut p.warmups);
    if let Some(c) = NonZeroUsize::new(warmups.len()) {
        run_jobs(&rt, &ph, true, warmups, Load::Closed { concurrency: c });
    }
    ph.inflight = Arc::new(InFlight::default());
    let measured = std::mem::take(&mut p.measured);
    let n = measured.len();
    run_jobs(&rt, &ph, false, measured, p.load.clone());
    let peak = ph.inflight.peak();
    let watch = ph.watch.clone();
    drop(ph);
    rt.shutdown_timeout(Duration::from_secs(5));
    let (records, problem) = handle
        .join()
        .unwrap_or_else(|_| (Vec::new(), Some("records writer panicked".into())));
    if let Some(problem) = problem {
        log.write(&format!("warning: {problem}"));
    }
    if let (Load::Open { .. }, Some(w)) = (&p.load, deadline::fallback_warning()) {
        log.write(&w);
    }
    let sent = records.iter().filter(|r| !r.base.id.warmup).count();
    let mut outcome = conclude(ctx, log, &sel, records, peak, settings);
    if let Some(why) = watch.outcome(n.saturating_sub(sent)) {
        super::stalled_step(&mut outcome, log, &why);
    }
    Ok(outcome)
}

fn conclude(
    ctx: &BenchContext<'_>,
    log: &mut BenchLog,
    sel: &Selection,
    records: Vec<RealtimeRecord>,
    peak: usize,
    settings: &NativeSettings,
) -> BenchOutcome {
    let trial = ctx.trial;
    let entry = &trial.entry;
    let (warm, mut measured): (Vec<_>, Vec<_>) =
        records.into_iter().partition(|r| r.base.id.warmup);
    measured.sort_by_key(|r| r.base.id.index);
    log.write(&format!(
        "warmups: {} sent, {} failed",
        warm.len(),
        warm.iter().filter(|r| !r.base.end.ok).count()
    ));
    let facts = aggregate::StepFacts {
        header: aggregate::StepHeader::of(trial, "", trial.step.num_prompts.get()),
        sample_rate: metrics::FRAMES_RATE as u32,
        peak_inflight: peak,
        // Counted per session by `result::result_doc`, not per request by the TTS rule.
        goodput: None,
        input_tokens: 0,
    };
    let rf = result::RealtimeFacts {
        ttft_selected: entry.percentiles.names("ttft"),
        save_duplex: entry
            .extra_body
            .as_ref()
            .and_then(|b| b.get("save_duplex_request_metrics"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        goodput: entry.goodput.clone(),
    };
    let mut doc = result::result_doc(&measured, &facts, sel, rf);
    let base: Vec<_> = measured.iter().map(|r| r.base.clone()).collect();
    if !entry.load.is_upstream() {
        // The load keys only with dfx-perf's load keys: upstream's result is unchanged.
        super::load_result::insert(&mut doc, trial, &base);
    }
    let block = summary::serving_block(&doc, sel, aggregate::upstream_continuity_ok_rate(&base));
    let block = with_ttft(&block, &doc, &sel.percentiles);
    // dfx-perf's extras as speech and chat print them (SLO attainment, lag, errors).
    let extras = summary::extras(&doc, Vec::new(), Vec::new());
    eprint!("{block}{extras}");
    log.write("output tokens: stage-0 num_tokens_out when the server sends stage metrics, else the transcript's word count");
    log.write(&block);
    log.write(&extras);
    let errors = super::load_result::step_errors(trial, &base);
    let invalid_load = invalid_load(&base, trial.step.request_rate(), settings.lag_threshold);
    log.step_problems(&errors, invalid_load.as_deref());
    let exit = expected_turns(entry, &doc, trial.step.num_prompts.get());
    if let Some(why) = &exit {
        log.write(why);
    }
    BenchOutcome {
        result: Some(doc),
        exit: exit.map(BenchExit::TurnCount),
        log_tail: log.tail(),
        errors,
        invalid_load,
    }
}

fn invalid_load(
    measured: &[super::record::RequestRecord],
    rate: Option<f64>,
    threshold: Duration,
) -> Option<String> {
    let rate = rate?;
    let th = threshold.as_secs_f64();
    let late = measured.iter().filter(|r| r.sent.lag_s > th).count();
    (late > 0).then(|| {
        format!("open-loop send lag beyond {:.0} ms on {late} request(s): the server was not offered {rate} req/s", th * 1000.0)
    })
}

/// Upstream's runner check of `expected_duplex_audio_turns_per_session` (runner-only key):
/// `duplex_session_metrics` must hold `num_prompts` rows, each with that
/// `audio_turn_count` (which needs `save_duplex_request_metrics`). The failure, if any.
pub fn expected_turns(
    entry: &BenchEntry,
    doc: &dfx_core::result::ResultDoc,
    num_prompts: u64,
) -> Option<String> {
    let want = entry.gates.expected_duplex_turns?;
    let key = "expected_duplex_audio_turns_per_session";
    let Some(rows) = doc.get("duplex_session_metrics").and_then(|v| v.as_array()) else {
        return Some(format!(
            "{key} {want}: the result has no duplex_session_metrics (set extra_body.save_duplex_request_metrics)"
        ));
    };
    if rows.len() as u64 != num_prompts {
        return Some(format!(
            "{key} {want}: duplex_session_metrics has {} row(s), expected {num_prompts}",
            rows.len()
        ));
    }
    let bad = rows
        .iter()
        .filter(|r| r.get("audio_turn_count").and_then(|v| v.as_u64()) != Some(want))
        .count();
    (bad > 0).then(|| format!("{key} {want}: {bad} session(s) with another audio_turn_count"))
}

/// vllm's `Time to First Token` section (when the result has TTFT keys), placed where vllm
/// prints it: before the E2EL section, else before the `Text Result` title.
pub(crate) fn with_ttft(block: &str, doc: &dfx_core::result::ResultDoc, ps: &[f64]) -> String {
    let mut sec = String::new();
    super::omni::summary::text_section(super::omni::aggregate::TextMetric::Ttft)
        .write(&mut sec, doc, ps);
    if sec.is_empty() {
        return block.to_string();
    }
    let at = block
        .find("End-to-end Latency")
        .and_then(|i| block[..i].rfind('\n').map(|n| n + 1))
        .or_else(|| {
            block
                .find(" Text Result ")
                .and_then(|i| block[..i].rfind('\n').map(|n| n + 1))
        })
        .unwrap_or(block.len());
    format!("{}{sec}{}", &block[..at], &block[at..])
}
