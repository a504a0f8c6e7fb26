//! Native streaming load generator for `openai-audio-speech` (`docs/bench.md`), and for
//! the realtime backends over WebSocket ([`realtime`]), and upstream's native-duplex
//! runner ([`duplex`]): one epoll event loop (`evloop`) with the `http1` pieces for
//! speech (tokio and reqwest for the rest), every body read timestamped, the same metric
//! names and definitions as
//! `vllm bench serve --omni` (vllm-omni 0.30), plus dfx-perf's own figures.
//!
//! A run: `prepare` resolves the dataset and builds every body, warmups run and are
//! discarded from the statistics, the measured phase runs closed or open loop
//! (`evloop`), each request's record is written to `records.jsonl` as it finishes
//! ([`record`]), then [`aggregate`] builds the result document and [`summary`] prints
//! vllm's summary block.
//!
//! The suite uses [`NativeBench`] and [`NativeSettings`] only; the submodules are public
//! so the tests and the client benchmark can check each piece, not as a stable API.

pub mod aggregate;
pub(crate) mod client;
pub mod contract;
pub mod dataset;
pub(crate) mod deadline;
pub(crate) mod driver;
pub mod duplex;
mod error;
pub(crate) mod evloop;
pub(crate) mod fds;
pub(crate) mod http1;
pub(crate) mod keys;
pub mod lapse;
pub(crate) mod load_result;
pub(crate) mod log;
pub(crate) mod omni;
pub(crate) mod prepare;
pub(crate) mod progress;
pub(crate) mod quality;
pub mod random;
pub mod realtime;
pub mod record;
pub(crate) mod request;
pub mod schedule;
pub mod selection;
pub(crate) mod sink;
pub(crate) mod soak;
mod soak_run;
pub mod stall;
pub mod stats;
pub mod summary;
pub(crate) mod unimplemented;
pub mod upstream_rng;
pub(crate) mod ws;

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use dfx_core::bench::{
    Bench, BenchContext, BenchExit, BenchKind, BenchOutcome, PreflightError, Unsupported,
};
use dfx_core::plan::{BenchEntry, ConnectionMode, Dialect, Trial};

pub use self::error::{BenchError, FdError};

use self::aggregate::StepFacts;
use self::driver::Load;
use self::log::BenchLog;
use self::progress::Progress;
use self::record::RequestRecord;
use self::sink::RecordSink;

/// Settings of the native bench (suite flags).
#[derive(Debug, Clone)]
pub struct NativeSettings {
    /// `--dataset-root` (repeatable): maps HF ids `owner/name` to `<root>/<owner>/<name>`
    /// or `<root>/<name>` (and any relative `dataset_path` to `<root>/<path>` or
    /// `<root>/<last component>`).
    pub dataset_roots: Vec<PathBuf>,
    /// Run seed (default 0): row shuffle and open-loop arrivals. An entry's `seed` wins.
    pub seed: u64,
    /// Name of the environment variable holding the bearer token (default:
    /// `OPENAI_API_KEY` when it is set). The token is never logged or written.
    pub auth_token_env: Option<String>,
    /// Output sample rate override; else `dfx_core::models::sample_rate(model)`; else
    /// 24000 with a warning.
    pub sample_rate: Option<u32>,
    /// Total per request (default 900 s).
    pub request_timeout: Duration,
    /// Longest wait for the response head or the next byte (default 60 s).
    pub read_timeout: Duration,
    /// When a stream and a step count as stalled (`--stall-window`, `--stall-floor`).
    pub stall: stall::StallRule,
    /// Open-loop send lag beyond this marks the step's load invalid (default 1 s).
    pub lag_threshold: Duration,
    /// Response body cap (default 512 MiB).
    pub max_body_bytes: u64,
    /// Progress line on stderr when it is a terminal.
    pub progress: bool,
    /// Factor on every soak entry's `duration_sec` (`--duration-scale`, default 1).
    pub duration_scale: f64,
    /// A local Hugging Face `tokenizer.json` (`--tokenizer`): token counts of the
    /// `random` datasets. Without it they are approximate (`dfx_tokenizer`).
    pub tokenizer: Option<PathBuf>,
    /// `--connection fresh|pooled` (TTS, chat and soak steps): wins over the entry's
    /// `connection` key; neither gives [`ConnectionMode::DEFAULT`] (fresh).
    pub connection: Option<ConnectionMode>,
    /// The time-lapse factor (the simulator's `--sim-speed`; 1 against a real server):
    /// planned times ÷ K, observed times × K ([`lapse`]).
    pub time_lapse: lapse::TimeLapse,
}

impl Default for NativeSettings {
    fn default() -> Self {
        NativeSettings {
            dataset_roots: Vec::new(),
            seed: 0,
            auth_token_env: std::env::var_os("OPENAI_API_KEY")
                .map(|_| "OPENAI_API_KEY".to_string()),
            sample_rate: None,
            request_timeout: Duration::from_secs(900),
            read_timeout: Duration::from_secs(60),
            stall: stall::StallRule::default(),
            lag_threshold: Duration::from_secs(1),
            max_body_bytes: 512 * 1024 * 1024,
            progress: true,
            duration_scale: 1.0,
            tokenizer: None,
            connection: None,
            time_lapse: lapse::TimeLapse::REAL_TIME,
        }
    }
}

/// The native bench (implements [`Bench`]).
#[derive(Debug, Clone)]
pub struct NativeBench {
    settings: NativeSettings,
}

/// Datasets the native bench implements.
pub(crate) const DATASETS: [&str; 3] = ["seed-tts", "seed-tts-text", "seed-tts-design"];
/// The backend the native bench implements.
pub(crate) const BACKEND: &str = "openai-audio-speech";

impl NativeBench {
    /// A native bench with `settings`.
    pub fn new(settings: NativeSettings) -> Self {
        NativeBench { settings }
    }

    /// Pooled (idle connections kept for later requests, the warmups open them) or fresh
    /// (every request opens a connection, its set-up time recorded as `connect_s`) for
    /// every step, whatever the entries say: sets [`NativeSettings::connection`], as
    /// `--connection` does.
    pub fn with_connection(mut self, mode: ConnectionMode) -> Self {
        self.settings.connection = Some(mode);
        self
    }

    /// The connection mode of `entry`'s steps: `--connection`, else the entry's
    /// `connection`, else fresh ([`ConnectionMode::resolve`]).
    pub fn connection(&self, entry: &BenchEntry) -> ConnectionMode {
        ConnectionMode::resolve(self.settings.connection, entry.connection)
    }

    /// The settings in use.
    pub fn settings(&self) -> &NativeSettings {
        &self.settings
    }
}

impl Bench for NativeBench {
    fn kind(&self) -> BenchKind {
        BenchKind::Native
    }

    fn supports(&self, entry: &BenchEntry) -> Result<(), Unsupported> {
        let backend = entry.backend.as_deref();
        let dataset = entry.dataset_name.as_deref();
        if realtime::is_realtime(entry) {
            return realtime::supports(entry);
        }
        if entry.dialect == Dialect::NativeDuplex {
            return duplex::supports(entry);
        }
        if entry.dialect == Dialect::Contract {
            return Ok(());
        }
        let soak = entry.dialect == Dialect::Stability;
        if entry.is_diffusion_soak() {
            return Err(Unsupported::DiffusionSoak);
        }
        if soak && backend == Some(BACKEND) {
            return Ok(());
        }
        if soak {
            return Err(Unsupported::SoakBackend {
                backend: entry.backend.clone(),
                implemented: BACKEND,
            });
        }
        if entry.dialect != Dialect::Omni {
            return Err(Unsupported::NativeDialect {
                dialect: entry.dialect,
            });
        }
        if backend == Some(BACKEND) && dataset.is_some_and(|d| DATASETS.contains(&d)) {
            return Ok(());
        }
        if omni::is_chat(entry) {
            return omni::supports(entry);
        }
        Err(Unsupported::BackendDataset {
            backend: entry.backend.clone(),
            dataset: entry.dataset_name.clone(),
            implemented: BACKEND,
            accepted: &DATASETS,
        })
    }

    fn preflight(&self, trial: &Trial) -> Result<Option<String>, PreflightError> {
        if matches!(
            trial.entry.dialect,
            Dialect::NativeDuplex | Dialect::Contract
        ) {
            return Ok(None);
        }
        if let Some(key) = unimplemented::unimplemented_flag(&trial.entry.raw) {
            return Err(PreflightError::UnimplementedKey {
                key,
                bench: "native",
            });
        }
        if let Some(refused) = unimplemented::goodput_refusal(&trial.entry) {
            return Err(refused);
        }
        if trial.entry.dialect == Dialect::Stability {
            return soak::keys(&trial.entry)
                .map(|k| soak::plan(k, trial.step.num_prompts, 1.0))
                .map(|p| Some(format!("soak: {} s in batches of {}", p.seconds, p.batch)))
                .map_err(|e| PreflightError::Soak(e.to_string()));
        }
        let checked = if omni::is_chat(&trial.entry) {
            omni::preflight(&self.settings, trial)
        } else if realtime::is_realtime(&trial.entry) {
            realtime::preflight(&self.settings, trial)
        } else {
            prepare::preflight(&self.settings, trial)
        };
        checked
            .map(Some)
            .map_err(|e| PreflightError::Inputs(e.to_string()))
    }

    fn run(&self, ctx: &BenchContext<'_>) -> BenchOutcome {
        let mut log = BenchLog::create(&ctx.out_dir.join("bench.log"));
        log.write(&format!("native bench: {}", ctx.trial.name));
        match self.run_logged(ctx, &mut log) {
            Ok(outcome) => outcome,
            Err(e) => {
                let msg = e.to_string();
                log.write(&format!("error: {msg}"));
                BenchOutcome {
                    result: None,
                    exit: Some(BenchExit::Native(msg.clone())),
                    log_tail: log.tail(),
                    errors: vec![msg],
                    invalid_load: None,
                }
            }
        }
    }
}

/// Runs a prepared step on `engine`, its records going to `sink`: the warmups (all at
/// once, then discarded from the statistics), then the measured requests with the step's
/// load. Returns the measured phase's run (when it started, its exact peak of requests in
/// flight); a server that stalled in the warmups ends the step there (nothing measured
/// is sent).
fn run_prepared(
    engine: &mut evloop::Engine,
    sink: &RecordSink,
    p: &mut prepare::Prepared,
) -> evloop::PhaseRun {
    let mut out = ToSink {
        tx: sink.sender(),
        sample_rate: p.sample_rate,
        lapse: p.lapse,
    };
    let warmups = std::mem::take(&mut p.warmups);
    let measured = std::mem::take(&mut p.measured);
    if let Some(concurrency) = NonZeroUsize::new(warmups.len()) {
        let warm = engine.run(warmups, Load::Closed { concurrency }, true, &mut out);
        if let Some(mut why) = warm.stalled {
            why.why = format!("in the warmups: {}", why.why);
            why.not_sent += measured.len();
            return evloop::PhaseRun {
                stalled: Some(why),
                ..warm
            };
        }
    }
    engine.run(measured, p.load.clone(), false, &mut out)
}

/// A step the stall rule ended early: its reason leads the step's errors.
pub(crate) fn stalled_step(
    outcome: &mut BenchOutcome,
    log: &mut BenchLog,
    why: &stall::ServerStalled,
) {
    let line = why.to_string();
    eprintln!("dfx-perf: {line}");
    log.write(&line);
    outcome.errors.insert(0, line);
    outcome.log_tail = log.tail();
}

/// The event loop's outlet into the records sink.
struct ToSink {
    tx: sink::RecordTx,
    sample_rate: u32,
    lapse: lapse::TimeLapse,
}

impl evloop::Outlet for ToSink {
    fn ended(
        &mut self,
        mut d: record::Dispatch,
        sample: record::Sample,
        mut x: client::Exchange,
        base: std::time::Instant,
        others_in_flight: bool,
    ) -> Option<std::time::Instant> {
        let audio = x.audio.take();
        self.lapse.dispatch(base, &mut d);
        self.lapse.exchange(base, &mut x);
        let mut rec = RequestRecord::new(&d, sample, &x, base, self.sample_rate);
        rec.audio = audio;
        self.tx.send(rec, others_in_flight)
    }

    fn flush(&mut self) {
        self.tx.flush_due();
    }
}

/// `bench.log`'s line naming the connection mode and where it came from.
pub(crate) fn connection_line(
    mode: ConnectionMode,
    settings: &NativeSettings,
    entry: &BenchEntry,
) -> String {
    let from = if settings.connection.is_some() {
        "--connection"
    } else if entry.connection.is_some() {
        "the entry's `connection`"
    } else {
        "the default"
    };
    let what = match mode {
        ConnectionMode::Fresh => "a new TCP connection per request, as vllm bench",
        ConnectionMode::Pooled => "idle connections reused",
    };
    format!("connections: {} ({what}; from {from})", mode.as_str())
}

/// The most connections a step opens at once: its warmups (all sent together) or its
/// measured load, whichever is larger.
fn peak_connections(p: &prepare::Prepared) -> usize {
    p.load.peak_in_flight().max(p.warmups.len())
}

impl NativeBench {
    fn run_logged(
        &self,
        ctx: &BenchContext<'_>,
        log: &mut BenchLog,
    ) -> Result<BenchOutcome, BenchError> {
        if ctx.trial.entry.dialect == Dialect::Stability {
            return self.run_soak(ctx, log);
        }
        if ctx.trial.entry.dialect == Dialect::NativeDuplex {
            return duplex::run(&self.settings, ctx, log);
        }
        if ctx.trial.entry.dialect == Dialect::Contract {
            return contract::run(ctx, log);
        }
        if omni::is_chat(&ctx.trial.entry) {
            return omni::run(&self.settings, ctx, log);
        }
        if realtime::is_realtime(&ctx.trial.entry) {
            return realtime::run(&self.settings, ctx, log);
        }
        let mode = self.connection(&ctx.trial.entry);
        log.write(&connection_line(mode, &self.settings, &ctx.trial.entry));
        let mut p = prepare::prepare(&self.settings, ctx, mode)?;
        for n in &p.notes {
            log.write(n);
        }
        if let Some(note) = fds::ensure(peak_connections(&p))? {
            log.write(&note);
        }
        let progress = Progress::new(&ctx.trial.name, p.measured.len(), self.settings.progress);
        let quality = ctx
            .trial
            .entry
            .seed_tts_wer_eval()
            .then(|| quality::QualityWriter::create(&ctx.out_dir))
            .transpose()?;
        let records_path = ctx.out_dir.join("records.jsonl");
        let sink = RecordSink::start_with(&records_path, progress, quality);
        let ran = evloop::Engine::new(p.target.clone(), p.sample_rate)
            .map(|mut e| run_prepared(&mut e, &sink, &mut p));
        let (records, problem, kept) = sink.finish_with_quality();
        let ran = ran?;
        if let Some(problem) = problem {
            log.write(&format!("warning: {problem}"));
        }
        if let (Load::Open { .. }, Some(w)) = (&p.load, deadline::fallback_warning()) {
            log.write(&w);
        }
        let mut outcome = self.conclude(ctx, log, &p, records, ran.peak_in_flight);
        if let Some(why) = ran.stalled {
            stalled_step(&mut outcome, log, &why);
        }
        if let (Some(kept), Some(doc)) = (kept, outcome.result.as_mut()) {
            log.write(&format!(
                "quality: {} clip(s) kept in {}, {} failed",
                kept.saved,
                kept.dir.display(),
                kept.failed
            ));
            kept.insert_into(doc);
        }
        Ok(outcome)
    }

    fn conclude(
        &self,
        ctx: &BenchContext<'_>,
        log: &mut BenchLog,
        p: &prepare::Prepared,
        records: Vec<RequestRecord>,
        peak_inflight: usize,
    ) -> BenchOutcome {
        let measured = measured_of(records, log);
        let n = ctx.trial.step.num_prompts.get();
        self.conclude_measured(ctx, log, p, &measured, n, peak_inflight)
    }

    /// The result of `measured` requests (of `num_prompts` sent), its summary block, the
    /// request errors and the open-loop validity.
    fn conclude_measured(
        &self,
        ctx: &BenchContext<'_>,
        log: &mut BenchLog,
        p: &prepare::Prepared,
        measured: &[RequestRecord],
        num_prompts: u64,
        peak_inflight: usize,
    ) -> BenchOutcome {
        let trial = ctx.trial;
        let facts = StepFacts {
            header: aggregate::StepHeader::of(trial, BACKEND, num_prompts),
            sample_rate: p.sample_rate,
            peak_inflight,
            goodput: trial.entry.goodput.clone(),
            input_tokens: p.input_tokens(measured),
        };
        let mut doc = aggregate::result_doc(measured, &facts, &p.selection);
        doc.insert(
            "connection".into(),
            self.connection(&trial.entry).as_str().into(),
        );
        load_result::insert(&mut doc, trial, measured);
        let block = summary::serving_block(
            &doc,
            &p.selection,
            aggregate::upstream_continuity_ok_rate(measured),
        );
        let extras = summary::extras_block(&doc, &p.selection);
        // stderr: stdout belongs to libtest's output (`--format json` is a JSON stream);
        // eprint! rather than a raw handle so test harnesses capture it.
        eprint!("{block}{extras}");
        if p.prompt_tokens.is_none() {
            log.write("token counts need a tokenizer (--tokenizer): total_input_tokens and token throughputs are written as 0");
        }
        log.write(&block);
        log.write(&extras);
        let errors = load_result::step_errors(trial, measured);
        let lags: Vec<f64> = measured.iter().map(|r| r.sent.lag_s).collect();
        measured_step(doc, errors, &lags, (trial, &self.settings), log)
    }
}

impl NativeSettings {
    /// The per-request limits every HTTP client of the native bench applies.
    pub(crate) fn limits(&self) -> client::Limits {
        client::Limits {
            request_timeout: self.request_timeout,
            read_timeout: self.read_timeout,
            stall: self.stall,
            max_body_bytes: self.max_body_bytes,
        }
    }
}

/// `endpoint` (a path) on the server at `base_url`.
pub(crate) fn endpoint_url(base_url: &str, endpoint: &str) -> String {
    format!("{}{endpoint}", base_url.trim_end_matches('/'))
}

/// The measured records of a step in index order; the warmups are counted in `bench.log`.
pub(crate) fn measured_of<R: record::PhaseRecord>(records: Vec<R>, log: &mut BenchLog) -> Vec<R> {
    let (warm, mut measured): (Vec<_>, Vec<_>) = records.into_iter().partition(|r| r.warmup());
    measured.sort_by_key(|r| r.index());
    let warm_failed = warm.iter().filter(|r| !r.ok()).count();
    log.write(&format!(
        "warmups: {} sent, {warm_failed} failed",
        warm.len()
    ));
    measured
}

/// The outcome of a measured step of any protocol: its result document, its request
/// errors, and the open loop's lag verdict over the measured requests' `lags` (seconds),
/// both written to `bench.log`.
pub(crate) fn measured_step(
    doc: serde_json::Map<String, serde_json::Value>,
    errors: Vec<String>,
    lags: &[f64],
    (trial, settings): (&Trial, &NativeSettings),
    log: &mut BenchLog,
) -> BenchOutcome {
    let rate = trial.step.request_rate();
    let invalid_load = open_loop_lag(lags, rate, settings.lag_threshold);
    log.step_problems(&errors, invalid_load.as_deref());
    BenchOutcome {
        result: Some(doc),
        exit: None,
        log_tail: log.tail(),
        errors,
        invalid_load,
    }
}

/// `tokenizer` / `tokenizer_id` of the entry, else the model (upstream's default).
pub(crate) fn tokenizer_id(entry: &BenchEntry, model: &str) -> String {
    ["tokenizer", "tokenizer_id"]
        .iter()
        .find_map(|k| entry.raw.get(*k).and_then(|v| v.as_str()))
        .unwrap_or(model)
        .to_string()
}

/// Why an open-loop step (`rate`) was not offered its load: requests sent later than
/// `threshold` after their deadline (`lags`, seconds, one per measured request; queueing
/// for a `max_concurrency` slot excluded). `None` for a closed loop.
pub(crate) fn open_loop_lag(
    lags: &[f64],
    rate: Option<f64>,
    threshold: Duration,
) -> Option<String> {
    let rate = rate?;
    let th = threshold.as_secs_f64();
    let late: Vec<f64> = lags.iter().copied().filter(|l| *l > th).collect();
    let worst = late.iter().copied().fold(0.0, f64::max);
    (!late.is_empty()).then(|| {
        format!(
            "open-loop send lag up to {:.0} ms on {} of {} request(s) (threshold {:.0} ms): the server was not offered {rate} req/s",
            worst * 1000.0,
            late.len(),
            lags.len(),
            th * 1000.0
        )
    })
}

/// The first distinct request errors with their counts (the speech step leaves saturated
/// arrivals out: [`load_result::saturation_error`] counts them once).
pub(crate) fn distinct_errors<'a>(errors: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for e in errors {
        match seen.iter_mut().find(|(m, _)| m == e) {
            Some((_, n)) => *n += 1,
            None => seen.push((e.clone(), 1)),
        }
    }
    seen.into_iter()
        .take(5)
        .map(|(m, n)| if n > 1 { format!("{m} (×{n})") } else { m })
        .collect()
}
