//! The native bench's `openai-chat-omni` backend (alias `daily-omni`) with the `random`
//! and `random-mm` datasets (`docs/bench.md`, "openai-chat-omni"): bodies as vllm-omni
//! sends them, the event stream framed incrementally and timestamped per body read,
//! upstream's text and audio metrics, a result in upstream's key order.
//!
//! A step: [`preflight`] checks the entry before any server starts; [`run`] draws the
//! prompts and item shapes, sends the warmups (the first request, again), then the
//! measured requests with their bodies built lazily ([`driver`]), writes each record as
//! it ends ([`record`]), and builds the result ([`aggregate`]) and the block ([`summary`]).

pub(crate) mod aggregate;
pub(crate) mod client;
pub(crate) mod driver;
pub(crate) mod record;
pub(crate) mod request;
pub(crate) mod sse;
pub(crate) mod stream;
pub(crate) mod summary;

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use dfx_core::bench::{BenchContext, BenchOutcome, Unsupported};
use dfx_core::plan::{BenchEntry, ConnectionMode, Trial};

use self::aggregate::{ChatFacts, ChatSelection};
use self::client::ChatTarget;
use self::driver::{ChatPhase, CountFn, Ready};
use self::record::{ChatRecord, ChatSample, ChatSink};
use self::request::ChatTemplate;
use super::NativeSettings;
use super::driver::Load;
use super::log::BenchLog;
use super::random::{self, RequestSpec, text::Counter};
use super::stall::SharedWatch;
use crate::native::BenchError;
use crate::native::aggregate::StepHeader;
use crate::native::lapse::TimeLapse;

/// Backends served here (`daily-omni` is upstream's alias of the chat function).
pub(crate) const CHAT_BACKENDS: [&str; 2] = ["openai-chat-omni", "daily-omni"];
/// Datasets served here.
pub(crate) const CHAT_DATASETS: [&str; 2] = ["random", "random-mm"];
/// The only endpoint the chat function accepts.
pub(crate) const CHAT_ENDPOINT: &str = "/v1/chat/completions";
/// Encoded bodies the generator may hold ahead of the sends.
pub(crate) const LOOKAHEAD_BYTES: u64 = 64 * 1024 * 1024;
/// The most [`LOOKAHEAD_BYTES`] grows to in a time-lapsed step.
pub(crate) const MAX_LOOKAHEAD_BYTES: u64 = 512 * 1024 * 1024;
/// Most bodies queued ahead, whatever their size.
pub(crate) const MAX_LOOKAHEAD: usize = 32;

/// Whether `entry` names a chat-omni backend.
pub(crate) fn is_chat(entry: &BenchEntry) -> bool {
    entry
        .backend
        .as_deref()
        .is_some_and(|b| CHAT_BACKENDS.contains(&b))
}

/// Whether the native bench can serve a chat entry, with the reason when not.
pub(crate) fn supports(entry: &BenchEntry) -> Result<(), Unsupported> {
    let dataset = entry.dataset_name.as_deref().unwrap_or("(none)");
    if !CHAT_DATASETS.contains(&dataset) {
        return Err(Unsupported::ChatDataset {
            dataset: entry.dataset_name.clone(),
            accepted: &CHAT_DATASETS,
        });
    }
    match entry.endpoint.as_deref() {
        Some(CHAT_ENDPOINT) => Ok(()),
        _ => Err(Unsupported::ChatEndpoint {
            endpoint: entry.endpoint.clone(),
            expected: CHAT_ENDPOINT,
        }),
    }
}

fn counter(settings: &NativeSettings) -> Result<Counter, BenchError> {
    match &settings.tokenizer {
        Some(p) => Counter::load(p),
        None => Ok(Counter::Approximate),
    }
}

fn template(trial: &Trial) -> Result<ChatTemplate, BenchError> {
    let e = &trial.entry;
    ChatTemplate::new(
        &trial.server.model,
        &e.raw,
        e.extra_body.as_ref(),
        &e.percentiles,
    )
}

/// Checks everything [`run`] needs of `trial`, before any server starts; the error names
/// the entry key. Returns the dataset's description for the log.
pub(crate) fn preflight(settings: &NativeSettings, trial: &Trial) -> Result<String, BenchError> {
    let entry = &trial.entry;
    template(trial)?;
    let plan = random::parse(entry, trial.step.num_prompts.get())?;
    let counter = counter(settings)?;
    Ok(describe(&plan, &counter))
}

fn describe(plan: &random::RandomPlan, counter: &Counter) -> String {
    let t = &plan.text;
    let mut s = format!(
        "random prompts: input {} output {} prefix {} range ratio {}/{}; tokens {}",
        t.input_len,
        t.output_len,
        t.prefix_len,
        t.ratio_in,
        t.ratio_out,
        if counter.is_real() {
            "from the tokenizer"
        } else {
            "approximate (words of a fixed vocabulary; set --tokenizer for real counts)"
        }
    );
    if let Some(mm) = &plan.mm {
        let (lo, hi) = mm.items_range();
        s.push_str(&format!(
            "; random-mm: {lo}..={hi} items per request, buckets {:?}, limits {:?}",
            mm.buckets, mm.limits
        ));
    }
    s
}

fn items_label(spec: &RequestSpec) -> String {
    let mut counts: Vec<(&str, u32)> = Vec::new();
    for it in &spec.items {
        match counts.iter_mut().find(|c| c.0 == it.modality()) {
            Some(c) => c.1 += 1,
            None => counts.push((it.modality(), 1)),
        }
    }
    counts
        .iter()
        .map(|(m, n)| format!("{m}:{n}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn sample(spec: &RequestSpec, id: Option<String>, body_bytes: usize) -> ChatSample {
    ChatSample {
        request_id: id,
        prompt_len: spec.prompt.prompt_len,
        max_tokens: spec.prompt.output_len,
        items: items_label(spec),
        body_bytes: body_bytes as u64,
    }
}

/// How many bodies may wait ready: [`LOOKAHEAD_BYTES`] (× K when time-lapsed, at most
/// [`MAX_LOOKAHEAD_BYTES`]) over the largest body, 1 to [`MAX_LOOKAHEAD`]. A time-lapsed
/// step asks its bodies K times as fast, so the generator gets K times the head start.
pub(crate) fn lookahead(specs: &[RequestSpec], lapse: TimeLapse) -> usize {
    let largest = specs
        .iter()
        .map(|s| {
            let media: u64 = s.items.iter().map(|i| i.raw_bytes()).sum();
            media / 3 * 4 + s.prompt.text.len() as u64 + 1024
        })
        .max()
        .unwrap_or(1024);
    let budget = (LOOKAHEAD_BYTES as f64 * lapse.factor().max(1.0)).min(MAX_LOOKAHEAD_BYTES as f64);
    ((budget as u64 / largest.max(1)) as usize).clamp(1, MAX_LOOKAHEAD)
}

/// Runs one step of a chat entry.
pub(crate) fn run(
    settings: &NativeSettings,
    ctx: &BenchContext<'_>,
    log: &mut BenchLog,
) -> Result<BenchOutcome, BenchError> {
    let (trial, entry) = (ctx.trial, &ctx.trial.entry);
    let sel = ChatSelection::of(&entry.percentiles);
    let template = Arc::new(template(trial)?);
    let plan = random::parse(entry, trial.step.num_prompts.get())?;
    let counter = Arc::new(counter(settings)?);
    log.write(&describe(&plan, &counter));
    if !counter.is_real() {
        log.write("token counts are approximate: no --tokenizer (result key dfx_tokenizer: approximate); total_input_tokens uses the server's usage.prompt_tokens when it reports them");
    }
    if !sel.ignored.is_empty() {
        log.write(&format!(
            "percentile-metrics: {} select nothing for openai-chat-omni",
            sel.ignored.join(",")
        ));
    }
    let n = trial.step.num_prompts.get() as usize;
    let seed = entry.seed.unwrap_or(settings.seed);
    let specs = plan.requests(&counter, n, seed);
    let ahead = lookahead(&specs, settings.time_lapse);
    let (load, shape) = super::prepare::load_shape(ctx, n, seed, settings.time_lapse)?;
    let mut notes = Vec::new();
    let token = super::prepare::token(settings, &mut notes);
    for n in &notes {
        log.write(n);
    }
    let headers = super::request::base_headers(token.as_deref())?;
    let url = super::endpoint_url(&ctx.base_url, CHAT_ENDPOINT);
    let limits = settings.limits();
    let mode = ConnectionMode::resolve(settings.connection, entry.connection);
    log.write(&super::connection_line(mode, settings, entry));
    let target = Arc::new(ChatTarget::new(&url, mode, headers, limits)?);
    let warmups = entry.warmups(&trial.step) as usize;
    let prefix = super::prepare::request_id_prefix(entry);
    log.write(&format!(
        "load: {n} measured request(s) after {warmups} warmup(s) (the first request, resent), {shape}; seed {seed}; POST {url}; bodies built {ahead} ahead"
    ));
    let Some(first_spec) = specs.first() else {
        return Err(BenchError::Input("num_prompts: no request to send".into()));
    };
    let in_flight = load.peak_in_flight();
    if let Some(note) = super::fds::ensure(in_flight.max(warmups))? {
        log.write(&note);
    }
    let t = Instant::now();
    let first = Bytes::from(template.body(first_spec)?);
    log.write(&format!(
        "first body: {} bytes, built in {:.1} ms",
        first.len(),
        t.elapsed().as_secs_f64() * 1000.0
    ));
    let rt = crate::native::driver::tasks::runtime("dfx-native-chat")?;
    let sink = ChatSink::start(&ctx.out_dir.join("records.jsonl"))?;
    let c2 = counter.clone();
    let watch = SharedWatch::new(settings.stall);
    let count: CountFn = Arc::new(move |s: &str| c2.count(s));
    if let Some(concurrency) = NonZeroUsize::new(warmups) {
        let (tx, rx) = tokio::sync::mpsc::channel::<Ready>(warmups);
        for _ in 0..warmups {
            let _ = tx.try_send((Ok(first.clone()), sample(first_spec, None, first.len())));
        }
        drop(tx);
        let mut phase = ChatPhase::new(
            target.clone(),
            true,
            sink.sender(),
            count.clone(),
            watch.clone(),
        );
        phase.lapse = settings.time_lapse;
        driver::run_phase(&rt, &phase, rx, warmups, Load::Closed { concurrency });
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Ready>(ahead);
    let producer = {
        let (template, prefix) = (template.clone(), prefix.clone());
        let first = first.clone();
        std::thread::Builder::new()
            .name("dfx-chat-bodies".into())
            .spawn(move || {
                for (i, spec) in specs.iter().enumerate() {
                    let body = if i == 0 {
                        Ok(first.clone())
                    } else {
                        // The request's error text: the record keeps it as a string.
                        template
                            .body(spec)
                            .map(Bytes::from)
                            .map_err(|e| e.to_string())
                    };
                    let len = body.as_ref().map_or(0, |b| b.len());
                    let s = sample(spec, Some(format!("{prefix}{i}")), len);
                    if tx.blocking_send((body, s)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|source| BenchError::Setup {
                what: "cannot start the body generator",
                source,
            })?
    };
    drop(first);
    let mut phase = ChatPhase::new(target, false, sink.sender(), count, watch.clone());
    phase.lapse = settings.time_lapse;
    let open = matches!(load, Load::Open { .. });
    let peak = driver::run_phase(&rt, &phase, rx, n, load).peak;
    let _ = producer.join();
    drop(phase);
    let (records, problem) = sink.finish();
    rt.shutdown_timeout(Duration::from_secs(5));
    if let Some(p) = problem {
        log.write(&format!("warning: {p}"));
    }
    if let (true, Some(w)) = (open, super::deadline::fallback_warning()) {
        log.write(&w);
    }
    let sent = records.iter().filter(|r| !r.id.warmup).count();
    let mut outcome = conclude(settings, ctx, log, records, peak, &sel, counter.is_real());
    if let Some(why) = watch.outcome(n.saturating_sub(sent)) {
        super::stalled_step(&mut outcome, log, &why);
    }
    Ok(outcome)
}

fn conclude(
    settings: &NativeSettings,
    ctx: &BenchContext<'_>,
    log: &mut BenchLog,
    records: Vec<ChatRecord>,
    peak: usize,
    sel: &ChatSelection,
    real: bool,
) -> BenchOutcome {
    let trial = ctx.trial;
    let measured = super::measured_of(records, log);
    let facts = ChatFacts {
        header: StepHeader::of(trial, "", trial.step.num_prompts.get()),
        peak_inflight: peak,
        real_tokenizer: real,
        goodput: trial.entry.goodput.clone(),
    };
    let mut doc = aggregate::result_doc(&measured, &facts, sel);
    // As the speech result: which connection mode measured this step.
    let mode = ConnectionMode::resolve(settings.connection, trial.entry.connection);
    doc.insert("connection".into(), mode.as_str().into());
    if !trial.entry.load.is_upstream() {
        // The load keys only with dfx-perf's load keys: upstream's chat result is unchanged.
        super::load_result::insert(&mut doc, trial, &measured);
    }
    let block = summary::serving_block(&doc, sel);
    let extras = summary::extras_block(&doc);
    eprint!("{block}{extras}");
    log.write(&block);
    log.write(&extras);
    let mut notes: Vec<&String> = Vec::new();
    for r in &measured {
        for n in &r.notes {
            if notes.len() < 5 && !notes.contains(&n) {
                notes.push(n);
            }
        }
    }
    for n in notes {
        log.write(&format!("stream note: {n}"));
    }
    let errors = super::load_result::step_errors(trial, &measured);
    let lags: Vec<f64> = measured.iter().map(|r| r.sent.lag_s).collect();
    super::measured_step(doc, errors, &lags, (trial, settings), log)
}
