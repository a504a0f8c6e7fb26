//! Upstream's `native-duplex` runner (`tests/dfx/perf/scripts/
//! run_native_duplex_benchmark.py` of vllm-omni; `docs/bench.md` ("Native duplex")):
//! `warmups + repeats` trials, each `sessions` concurrent MiniCPM-o native-duplex sessions
//! on `/v1/realtime` of `turns` spoken turns; per trial the measurement, over the
//! measured trials the medians that the baselines judge (`median_responses_per_s`,
//! `median_ttfp_ms`).

pub(crate) mod metrics;
pub(crate) mod protocol;
pub mod result;
pub(crate) mod session;

use std::collections::BTreeMap;
use std::io::Write;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::lapse::TimeLapse;

use serde_json::Value;

use dfx_core::bench::{BenchContext, BenchExit, BenchOutcome, Unsupported};
use dfx_core::plan::{BenchEntry, Dialect, DuplexKeys};

use self::metrics::TurnAt;
use self::result::{DocFacts, Measurement};
use self::session::{SessionOutcome, SessionSpec};
use super::NativeSettings;
use super::driver::{Load, tasks};
use super::log::BenchLog;
use super::progress::Progress;
use super::record::Dispatch;
use crate::native::BenchError;

/// The one workload upstream's runner accepts.
pub(crate) const WORKLOAD: &str = "native-duplex-audio";
/// Wait for `session.created` / `session.closed` (upstream's fixed 20 s).
pub(crate) const HANDSHAKE: Duration = Duration::from_secs(20);

/// The entry's keys, validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Concurrent sessions per trial (entry key `sessions`, ≥ 1): the scheduler's
    /// concurrency.
    pub sessions: NonZeroUsize,
    /// Spoken turns per session (`turns`, ≥ 1).
    pub turns: usize,
    /// Warmup trials before the measured ones (`warmups`, ≥ 1).
    pub warmups: usize,
    /// Measured trials (`repeats`, ≥ 2).
    pub repeats: usize,
    /// Pace the appends at the audio's own rate (`realtime_input`, default true).
    pub realtime_input: bool,
    /// Bound of each wait of a turn (`timeout_s`, default 180 s).
    pub timeout: Duration,
}

impl Params {
    /// The run's parameters from the entry's keys (parsed at load): `sessions`, `turns`,
    /// `warmups`, `repeats` (upstream: sessions, turns > 0, warmups ≥ 1, repeats ≥ 2),
    /// `realtime_input` (default true), `timeout_s` (default 180 s); why not when a count
    /// is missing.
    pub fn of(keys: &DuplexKeys) -> Result<Params, BenchError> {
        let need = |k: &str, min: u64| {
            BenchError::Input(format!(
                "native-duplex entry needs `{k}`, an integer ≥ {min}"
            ))
        };
        let n = |k: &str, v: Option<u64>, min: u64| -> Result<usize, BenchError> {
            match v {
                Some(v) if v >= min => Ok(v as usize),
                _ => Err(need(k, min)),
            }
        };
        Ok(Params {
            sessions: keys
                .sessions
                .and_then(|v| NonZeroUsize::new(v as usize))
                .ok_or_else(|| need("sessions", 1))?,
            turns: n("turns", keys.turns, 1)?,
            warmups: n("warmups", keys.warmups, 1)?,
            repeats: n("repeats", keys.repeats, 2)?,
            realtime_input: keys.realtime_input,
            timeout: Duration::from_secs_f64(keys.timeout_s),
        })
    }
}

/// The native-duplex keys of `entry`, or why it has none.
fn keys(entry: &BenchEntry) -> Result<&DuplexKeys, BenchError> {
    entry
        .runner
        .duplex()
        .ok_or(BenchError::WrongRunner("native-duplex"))
}

/// Whether the native bench runs `entry` (a native-duplex entry of workload
/// `WORKLOAD`), else why not.
pub fn supports(entry: &BenchEntry) -> Result<(), Unsupported> {
    let keys = match keys(entry) {
        Ok(k) if entry.dialect == Dialect::NativeDuplex => k,
        _ => return Err(Unsupported::NotNativeDuplex),
    };
    let workload = keys.workload.as_deref();
    if workload != Some(WORKLOAD) {
        return Err(Unsupported::DuplexWorkload {
            workload: workload.map(String::from),
            implemented: WORKLOAD,
        });
    }
    if keys.profile_stages {
        return Err(Unsupported::ProfileStages);
    }
    Params::of(keys)
        .map(|_| ())
        .map_err(|e| Unsupported::InvalidEntry(e.to_string()))
}

/// A 32-hex suffix for session ids (upstream: `uuid4().hex`).
fn hex_id() -> String {
    super::realtime::protocol::event_id()
        .trim_start_matches("evt_")
        .to_string()
}

/// Runs one trial: every session at once (a closed loop of `sessions` on the one
/// scheduler, [`super::driver::tasks::run_phase`]), gated to start together.
fn run_trial(
    rt: &tokio::runtime::Runtime,
    ctx: &BenchContext<'_>,
    p: &Params,
    (clip, lapse): (&Arc<Vec<u8>>, TimeLapse),
    (trial, warmup): (usize, bool),
) -> (Vec<SessionOutcome>, f64) {
    let model = ctx.trial.server.model.clone();
    let gate = Arc::new(tokio::sync::Barrier::new(p.sessions.get()));
    let specs: Vec<SessionSpec> = (0..p.sessions.get())
        .map(|s| {
            let session_id = format!("multi-{s}-{}", hex_id());
            SessionSpec {
                url: protocol::session_url(&ctx.host, ctx.port, &model, &session_id),
                model: model.clone(),
                session_id,
                turns: p.turns,
                realtime_input: p.realtime_input,
                timeout: p.timeout,
                handshake: HANDSHAKE,
                clip: clip.clone(),
                lapse,
            }
        })
        .collect();
    let outcomes = Arc::new(std::sync::Mutex::new(Vec::with_capacity(p.sessions.get())));
    let sink = outcomes.clone();
    let load = Load::Closed {
        concurrency: p.sessions,
    };
    let run = move |spec: SessionSpec, d: Dispatch, base: Instant| {
        let (gate, sink) = (gate.clone(), sink.clone());
        async move {
            let at = TurnAt {
                trial,
                warmup,
                session: d.index,
                turn: 0,
                base,
                lapse,
            };
            let o = session::run_session(&spec, at, gate).await;
            if let Ok(mut v) = sink.lock() {
                v.push(o);
            }
        }
    };
    let end = tasks::run_phase(rt, warmup, specs, load, tasks::Direct, run, || false);
    let mut out = std::mem::take(&mut *outcomes.lock().unwrap_or_else(|e| e.into_inner()));
    out.sort_by_key(|o| o.session);
    (out, lapse.to_real_s(end.base.elapsed().as_secs_f64()))
}

/// `records.jsonl` lines of a trial: one per turn, then one per session.
fn records(outcomes: &[SessionOutcome], m: &Measurement) -> Vec<String> {
    let mut lines = Vec::new();
    for o in outcomes {
        for t in &o.turns {
            lines.push(serde_json::to_string(t).unwrap_or_default());
        }
        let row = serde_json::json!({
            "kind": "session", "trial": m.trial, "warmup": m.warmup, "session": o.session,
            "session_id": o.session_id, "handshake_s": o.handshake_s,
            "turns_ok": o.turns.iter().filter(|t| t.ok).count(), "closed": o.closed,
            "ok": o.error.is_none(), "error_class": o.error.as_ref().map(|e| e.0),
            "error": o.error.as_ref().map(|e| e.1.clone()),
        });
        lines.push(row.to_string());
    }
    lines
}

fn write_lines(file: &mut Option<std::fs::File>, lines: &[String], log: &mut BenchLog) {
    let Some(f) = file.as_mut() else { return };
    for l in lines {
        if writeln!(f, "{l}").is_err() {
            log.write("warning: cannot write records.jsonl");
            *file = None;
            return;
        }
    }
    let _ = f.flush();
}

/// Runs a native-duplex entry: the warmup trials, then the measured ones (stopping at the
/// first failed trial, as upstream's runner does); `records.jsonl`, `measurements.json`
/// (every trial, warmups included) and the result document.
pub fn run(
    settings: &NativeSettings,
    ctx: &BenchContext<'_>,
    log: &mut BenchLog,
) -> Result<BenchOutcome, BenchError> {
    let p = Params::of(keys(&ctx.trial.entry)?)?;
    if let Some(note) = super::fds::ensure(p.sessions.get())? {
        log.write(&note);
    }
    log.write(&format!(
        "native duplex: {} session(s) × {} turn(s), {} warmup(s) + {} repeat(s), realtime_input {}, \
         {} ms of input per turn in {} ms appends",
        p.sessions, p.turns, p.warmups, p.repeats, p.realtime_input, protocol::TURN_MS, protocol::CHUNK_MS
    ));
    let rt = tasks::runtime("dfx-duplex")?;
    let clip = Arc::new(protocol::turn_clip());
    let path = ctx.out_dir.join("records.jsonl");
    let mut file = std::fs::File::create(&path).ok();
    let total = (p.warmups + p.repeats) * p.sessions.get() * p.turns;
    let mut progress = Progress::new(&ctx.trial.name, total, settings.progress);
    let mut all: Vec<Measurement> = Vec::new();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut exit = None;
    for index in 0..p.warmups + p.repeats {
        if dfx_core::stop::requested() {
            // The run is being interrupted: no further trial is sent.
            break;
        }
        let warmup = index < p.warmups;
        let (outcomes, elapsed) =
            run_trial(&rt, ctx, &p, (&clip, settings.time_lapse), (index, warmup));
        let m = result::measure(
            &outcomes,
            (p.sessions.get(), p.turns),
            elapsed,
            (index, warmup),
        );
        for o in &outcomes {
            o.turns.iter().for_each(|t| progress.request_done(t.ok));
            if let Some((class, _)) = &o.error {
                *errors.entry((*class).to_string()).or_default() += 1;
            }
        }
        write_lines(&mut file, &records(&outcomes, &m), log);
        log.write(&format!(
            "NATIVE_DUPLEX_MEASUREMENT {}",
            serde_json::to_string(&m).unwrap_or_default()
        ));
        let failed = m
            .error
            .clone()
            .filter(|_| !m.ok)
            .or_else(|| (!m.ok).then(|| "not every session completed its turns".to_string()));
        all.push(m);
        let _ = std::fs::write(
            ctx.out_dir.join("measurements.json"),
            serde_json::to_string_pretty(&all).unwrap_or_default() + "\n",
        );
        if let Some(e) = failed {
            let failure = BenchExit::DuplexTrial { index, reason: e };
            log.write(&failure.to_string());
            exit = Some(failure);
            break;
        }
    }
    progress.finish();
    rt.shutdown_timeout(Duration::from_secs(5));
    let facts = DocFacts {
        hardware: ctx.hardware.clone(),
        sessions: p.sessions.get(),
        turns: p.turns,
        repeats: p.repeats,
        warmups: p.warmups,
        realtime_input: p.realtime_input,
        model_id: ctx.trial.server.model.clone(),
        date: chrono::Local::now().format("%Y%m%d-%H%M%S").to_string(),
    };
    let doc = result::result_doc(&all, &errors, &facts);
    let summary = summary_line(&doc);
    eprintln!("{}: {summary}", ctx.trial.name);
    log.write(&summary);
    Ok(BenchOutcome {
        result: Some(doc),
        errors: exit.iter().map(ToString::to_string).collect(),
        exit,
        log_tail: log.tail(),
        invalid_load: None,
    })
}

fn summary_line(doc: &dfx_core::result::ResultDoc) -> String {
    let f = |k: &str| {
        doc.get(k)
            .and_then(Value::as_f64)
            .map_or("null".to_string(), |x| format!("{x:.4}"))
    };
    format!(
        "NATIVE_DUPLEX_AGGREGATE median_responses_per_s {} median_ttfp_ms {} median_ttft_ms {} \
         median_audio_seconds_per_s {} completed {}",
        f("median_responses_per_s"),
        f("median_ttfp_ms"),
        f("median_ttft_ms"),
        f("median_audio_seconds_per_s"),
        doc.get("completed").cloned().unwrap_or(Value::Null)
    )
}
