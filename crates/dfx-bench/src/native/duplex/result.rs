//! Per-trial measurements and the result document of a native-duplex entry, with the
//! definitions and keys of upstream's `native_measurement` (`tests/dfx/perf/
//! native_metrics.py`) and `run_native_duplex_benchmark.py`'s aggregate.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use dfx_core::result::ResultDoc;

use super::session::SessionOutcome;
use crate::metrics::throughput;

/// One trial (a warmup or a repeat): `sessions` concurrent sessions × `turns` turns.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    /// Wall time of the trial: first connect → last session closed.
    pub elapsed_s: f64,
    /// Sessions whose every turn completed.
    pub completed_sessions: usize,
    /// Turns whose response completed with audio and transcript.
    pub completed_responses: usize,
    /// `sessions / elapsed_s` (configured sessions, as upstream, which fails any trial
    /// that did not complete them all).
    pub sessions_per_s: f64,
    /// `sessions × turns / elapsed_s`.
    pub responses_per_s: f64,
    /// Mean ttft over the completed responses, ms; null when none had one.
    pub mean_ttft_ms: Option<f64>,
    /// Largest ttft over the completed responses, ms.
    pub max_ttft_ms: Option<f64>,
    /// Mean ttfp (commit send → first audio delta) over the completed responses, ms.
    pub mean_ttfp_ms: Option<f64>,
    /// Largest ttfp over the completed responses, ms.
    pub max_ttfp_ms: Option<f64>,
    /// Mean RTF over the completed responses.
    pub mean_rtf: Option<f64>,
    /// Largest RTF over the completed responses.
    pub max_rtf: Option<f64>,
    /// Sum of every response's audio duration, seconds.
    pub generated_audio_s: f64,
    /// `generated_audio_s / elapsed_s`.
    pub audio_seconds_per_s: f64,
    /// Stage-0 token metrics of every response (dfx-perf reads none: always false).
    pub stage0_token_metrics_available: bool,
    /// Trial index, from 0, warmups first.
    pub trial: usize,
    /// A warmup trial (not in the medians).
    pub warmup: bool,
    /// A profiling run (dfx-perf never profiles: always false).
    pub profiled: bool,
    /// dfx-perf: the trial completed every session and turn.
    pub ok: bool,
    /// dfx-perf: the first failure, if any.
    pub error: Option<String>,
}

fn stat(values: &[f64]) -> (Option<f64>, Option<f64>) {
    if values.is_empty() {
        return (None, None);
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (Some(mean), Some(max))
}

/// The measurement of trial `trial` from its sessions and wall time (`sessions` and
/// `turns` as configured).
pub fn measure(
    outcomes: &[SessionOutcome],
    (sessions, turns): (usize, usize),
    elapsed_s: f64,
    (trial, warmup): (usize, bool),
) -> Measurement {
    let ok_turns: Vec<_> = outcomes
        .iter()
        .flat_map(|o| o.turns.iter().filter(|t| t.ok))
        .collect();
    let pick = |f: fn(&super::metrics::TurnRecord) -> Option<f64>| -> Vec<f64> {
        ok_turns.iter().filter_map(|t| f(t)).collect()
    };
    let (mean_ttft_ms, max_ttft_ms) = stat(&pick(|t| t.ttft_ms));
    let (mean_ttfp_ms, max_ttfp_ms) = stat(&pick(|t| t.ttfp_ms));
    let (mean_rtf, max_rtf) = stat(&pick(|t| t.rtf));
    let generated_audio_s = pick(|t| t.audio_duration_ms).iter().sum::<f64>() / 1000.0;
    let completed_sessions = outcomes
        .iter()
        .filter(|o| o.error.is_none() && o.turns.iter().filter(|t| t.ok).count() == turns)
        .count();
    let error = outcomes.iter().find_map(|o| {
        o.error
            .as_ref()
            .map(|(_, e)| format!("session {}: {e}", o.session))
    });
    let per_s = |n: f64| throughput::per_s(n, elapsed_s);
    Measurement {
        elapsed_s,
        completed_sessions,
        completed_responses: ok_turns.len(),
        sessions_per_s: per_s(sessions as f64),
        responses_per_s: per_s((sessions * turns) as f64),
        mean_ttft_ms,
        max_ttft_ms,
        mean_ttfp_ms,
        max_ttfp_ms,
        mean_rtf,
        max_rtf,
        generated_audio_s,
        audio_seconds_per_s: per_s(generated_audio_s),
        stage0_token_metrics_available: false,
        trial,
        warmup,
        profiled: false,
        ok: error.is_none() && completed_sessions == sessions,
        error,
    }
}

/// Python's `statistics.median` (the mean of the two middle values); `None` when empty.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    (!v.is_empty()).then(|| crate::native::stats::Sorted::new(v).median())
}

/// What the document states about the entry and the run.
#[derive(Debug, Clone)]
pub struct DocFacts {
    /// Hardware label of the run (`H100`, `SIM`, `na`).
    pub hardware: String,
    /// Concurrent sessions per trial.
    pub sessions: usize,
    /// Turns per session.
    pub turns: usize,
    /// Measured trials configured.
    pub repeats: usize,
    /// Warmup trials configured.
    pub warmups: usize,
    /// The entry's `realtime_input`.
    pub realtime_input: bool,
    /// The served model.
    pub model_id: String,
    /// Local time of the run, `YYYYmmdd-HHMMSS`.
    pub date: String,
}

fn opt(x: Option<f64>) -> Value {
    x.filter(|x| x.is_finite()).map_or(Value::Null, Value::from)
}

/// The result document: upstream's aggregate keys in upstream's order (medians over the
/// measured trials, which are kept under `measurements`), then dfx-perf's keys.
/// `completed` is the fewest responses a measured trial completed (0 when one is
/// missing), so the harness's completion check wants every turn of every repeat.
pub fn result_doc(all: &[Measurement], errors: &BTreeMap<String, u64>, f: &DocFacts) -> ResultDoc {
    let kept: Vec<&Measurement> = all.iter().filter(|m| !m.warmup).collect();
    let med = |g: fn(&Measurement) -> Option<f64>| {
        opt(median(kept.iter().filter_map(|m| g(m)).collect()))
    };
    let mut d = Map::new();
    d.insert("workload".into(), Value::from(super::WORKLOAD));
    d.insert("hardware".into(), Value::from(f.hardware.as_str()));
    d.insert("sessions".into(), Value::from(f.sessions));
    d.insert("turns".into(), Value::from(f.turns));
    d.insert("repeats".into(), Value::from(f.repeats));
    d.insert("realtime_input".into(), Value::from(f.realtime_input));
    d.insert(
        "profiling_run_not_performance_baseline".into(),
        Value::Bool(false),
    );
    d.insert(
        "instrumentation_run_not_performance_baseline".into(),
        Value::Bool(false),
    );
    d.insert(
        "throughput_scope".into(),
        Value::from("client workload including connect/close/artifacts, excluding server startup"),
    );
    d.insert(
        "latency_scope".into(),
        Value::from("native scenario per-response timing; raw origins retained in trial artifacts"),
    );
    d.insert(
        "median_responses_per_s".into(),
        med(|m| Some(m.responses_per_s)),
    );
    d.insert(
        "median_audio_seconds_per_s".into(),
        med(|m| Some(m.audio_seconds_per_s)),
    );
    d.insert("median_ttft_ms".into(), med(|m| m.mean_ttft_ms));
    d.insert("median_ttfp_ms".into(), med(|m| m.mean_ttfp_ms));
    d.insert(
        "measurements".into(),
        serde_json::to_value(&kept).unwrap_or(json!([])),
    );
    let per_trial = f.sessions * f.turns;
    let completed = if kept.len() < f.repeats {
        0
    } else {
        kept.iter()
            .map(|m| m.completed_responses)
            .min()
            .unwrap_or(0)
    };
    d.insert("date".into(), Value::from(f.date.as_str()));
    d.insert("model_id".into(), Value::from(f.model_id.as_str()));
    d.insert("num_prompts".into(), Value::from(per_trial));
    d.insert("warmups".into(), Value::from(f.warmups));
    d.insert("completed".into(), Value::from(completed));
    d.insert(
        "failed".into(),
        Value::from(per_trial - completed.min(per_trial)),
    );
    d.insert(
        "median_sessions_per_s".into(),
        med(|m| Some(m.sessions_per_s)),
    );
    d.insert(
        "error_counts".into(),
        serde_json::to_value(errors).unwrap_or(json!({})),
    );
    d.insert("result_source".into(), Value::from("native"));
    d
}
