//! The result document of one step: vllm-omni 0.30's keys in its order with its value
//! types, then dfx-perf's own keys. Statistics over successes only (numpy semantics).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use dfx_core::plan::Trial;
use dfx_core::result::ResultDoc;

use super::record::RequestRecord;
use super::selection::{AudioMetric, Metric, Selection, percentile_word};
use super::stats::{self, Sorted};

/// The step's identity as the first keys of every native result (TTS and chat alike).
#[derive(Debug, Clone)]
pub struct StepHeader {
    /// `%Y%m%d-%H%M%S`, local time.
    pub date: String,
    /// The entry's `backend`, else the bench's own.
    pub backend: String,
    /// The served model.
    pub model_id: String,
    /// The entry's `tokenizer` / `tokenizer_id`, else the model.
    pub tokenizer_id: String,
    /// Measured requests sent in the step.
    pub num_prompts: u64,
    /// `None` = infinite (closed loop).
    pub request_rate: Option<f64>,
    /// Gamma shape of the open-loop arrivals (the entry's `burstiness`, default 1: Poisson).
    pub burstiness: f64,
    /// The step's in-flight cap: `max_concurrency`, or a rate step's
    /// `open_loop_max_concurrency` (upstream writes the `--max-concurrency` it ran with).
    pub max_concurrency: Option<u32>,
}

impl StepHeader {
    /// The header of `trial`'s step, dated now: `backend` when the entry names none,
    /// `num_prompts` as sent.
    pub fn of(trial: &Trial, backend: &str, num_prompts: u64) -> Self {
        StepHeader {
            date: chrono::Local::now().format("%Y%m%d-%H%M%S").to_string(),
            backend: trial
                .entry
                .backend
                .clone()
                .unwrap_or_else(|| backend.to_string()),
            model_id: trial.server.model.clone(),
            tokenizer_id: super::tokenizer_id(&trial.entry, &trial.server.model),
            num_prompts,
            request_rate: trial.step.request_rate(),
            burstiness: trial.entry.burstiness.unwrap_or(1.0),
            max_concurrency: trial.entry.load.in_flight_cap(&trial.step),
        }
    }
}

/// What the result says about the step besides its requests.
#[derive(Debug, Clone)]
pub struct StepFacts {
    /// The step's identity keys.
    pub header: StepHeader,
    /// Output sample rate every audio figure used, Hz (`audio_sample_rate`).
    pub sample_rate: u32,
    /// Exact largest number of requests in flight at once.
    pub peak_inflight: usize,
}

/// vllm's leading keys, `date` … `failed`, in its order.
pub(crate) fn put_step_header(
    d: &mut ResultDoc,
    h: &StepHeader,
    duration: f64,
    completed: usize,
    failed: usize,
) {
    d.insert("date".into(), Value::from(h.date.as_str()));
    d.insert("endpoint_type".into(), Value::from(h.backend.as_str()));
    d.insert("backend".into(), Value::from(h.backend.as_str()));
    d.insert("label".into(), Value::Null);
    d.insert("model_id".into(), Value::from(h.model_id.as_str()));
    d.insert("tokenizer_id".into(), Value::from(h.tokenizer_id.as_str()));
    d.insert("num_prompts".into(), Value::from(h.num_prompts));
    d.insert(
        "request_rate".into(),
        h.request_rate.map_or(Value::from("inf"), num),
    );
    d.insert("burstiness".into(), num(h.burstiness));
    d.insert(
        "max_concurrency".into(),
        h.max_concurrency.map_or(Value::Null, Value::from),
    );
    d.insert("duration".into(), num(duration));
    d.insert("completed".into(), Value::from(completed));
    d.insert("failed".into(), Value::from(failed));
}

/// A finite number, else 0 (JSON has no NaN / infinity).
pub(crate) fn num(x: f64) -> Value {
    Value::from(if x.is_finite() { x } else { 0.0 })
}

/// The statistics of one metric: `mean_`, `median_`, `p<P>_` keys, ms metrics scaled
/// after the statistic.
fn put_stats(doc: &mut ResultDoc, stem: &str, samples: &Sorted, scale: f64, ps: &[f64]) {
    doc.insert(format!("mean_{stem}"), num(samples.mean() * scale));
    doc.insert(format!("median_{stem}"), num(samples.median() * scale));
    for &p in ps {
        let key = format!("p{}_{stem}", percentile_word(p));
        doc.insert(key, num(samples.percentile(p) * scale));
    }
}

/// Per-metric samples over the successful requests (upstream definitions: an empty 200
/// contributes TTFP 0, duration 0, RTF 0, underrun 0).
fn samples(ok: &[&RequestRecord], m: Metric) -> (Sorted, f64) {
    let v: Vec<f64> = ok
        .iter()
        .map(|r| match m {
            Metric::E2el => r.e2el_s.unwrap_or(0.0),
            Metric::Audio(AudioMetric::Rtf) => r.rtf.unwrap_or(0.0),
            Metric::Audio(AudioMetric::Ttfp) => r.ttfp_s.unwrap_or(0.0),
            Metric::Audio(AudioMetric::Duration) => r.audio_s,
            Metric::Audio(AudioMetric::Underrun) => r.underrun_s.unwrap_or(0.0),
        })
        .collect();
    let scale = match m {
        Metric::E2el | Metric::Audio(AudioMetric::Ttfp) => 1000.0,
        _ => 1.0,
    };
    (Sorted::new(v), scale)
}

/// Upstream's `max_concurrent_requests`: successful requests overlapping each one-second
/// bucket from the first successful send; the largest bucket.
pub fn max_concurrent_requests(ok: &[&RequestRecord]) -> u64 {
    let spans: Vec<(f64, f64)> = ok
        .iter()
        .map(|r| (r.actual_send_s, r.actual_send_s + r.e2el_s.unwrap_or(0.0)))
        .collect();
    let Some(min_start) = spans.iter().map(|s| s.0).reduce(f64::min) else {
        return 0;
    };
    let max_end = spans.iter().map(|s| s.1).fold(min_start, f64::max);
    let buckets = (max_end - min_start).ceil() as usize + 1;
    let mut count = vec![0u64; buckets];
    for (s, e) in spans {
        let (a, b) = ((s - min_start) as usize, (e - min_start) as usize);
        for c in &mut count[a..=b.min(buckets - 1)] {
            *c += 1;
        }
    }
    count.into_iter().max().unwrap_or(0)
}

/// Upstream's continuity OK rate as printed in the stdout block: successes whose stream
/// never starved beyond 0.1 s, empty streams counted as continuous.
pub fn upstream_continuity_ok_rate(measured: &[RequestRecord]) -> f64 {
    let ok: Vec<&RequestRecord> = measured.iter().filter(|r| r.ok).collect();
    if ok.is_empty() {
        return 0.0;
    }
    let good = ok
        .iter()
        .filter(|r| r.continuous_100ms != Some(false))
        .count();
    good as f64 / ok.len() as f64
}

/// Upstream's image/video/memory/stage keys, always zero for TTS, and
/// `max_output_tokens_per_s` (0: no tokens).
fn fillers(d: &mut ResultDoc, ps: &[f64]) {
    let zero_pcts = Value::Array(
        ps.iter()
            .map(|&p| Value::from(vec![num(p), num(0.0)]))
            .collect(),
    );
    for (k, v) in [
        ("total_images", Value::from(0)),
        ("image_throughput", num(0.0)),
        ("average_pixels_per_image", num(0.0)),
        ("mean_denoise_step_latency_ms", num(0.0)),
        ("total_video_duration_s", Value::from(0)),
        ("total_video_frames", Value::from(0)),
        ("video_throughput", num(0.0)),
        ("mean_video_rtf", num(0.0)),
        ("median_video_rtf", num(0.0)),
        ("percentiles_video_rtf", zero_pcts.clone()),
        ("mean_video_generation_ms", num(0.0)),
        ("median_video_generation_ms", num(0.0)),
        ("percentiles_video_generation_ms", zero_pcts.clone()),
        ("mean_peak_memory_mb", num(0.0)),
        ("median_peak_memory_mb", num(0.0)),
        ("percentiles_peak_memory_mb", zero_pcts),
        ("stage_durations_mean", Value::Object(Map::new())),
        ("stage_durations_p50", Value::Object(Map::new())),
        ("stage_durations_p99", Value::Object(Map::new())),
        ("max_output_tokens_per_s", num(0.0)),
    ] {
        d.insert(k.into(), v);
    }
}

/// The result document of the measured requests of one step.
pub fn result_doc(measured: &[RequestRecord], f: &StepFacts, sel: &Selection) -> ResultDoc {
    let ok: Vec<&RequestRecord> = measured.iter().filter(|r| r.ok).collect();
    let completed = ok.len();
    let duration = measured.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let per_s = |x: f64| if duration > 0.0 { x / duration } else { 0.0 };
    let audio: Vec<f64> = ok.iter().map(|r| r.audio_s).collect();
    let total_audio = stats::sum(&audio);
    let total_frames: u64 = ok.iter().map(|r| r.audio_frames).sum();
    let ps = &sel.percentiles;
    let mut d = Map::new();
    put_step_header(
        &mut d,
        &f.header,
        duration,
        completed,
        measured.len() - completed,
    );
    d.insert("total_input_tokens".into(), Value::from(0));
    d.insert("total_output_tokens".into(), Value::from(0));
    d.insert("request_throughput".into(), num(per_s(completed as f64)));
    d.insert("request_goodput".into(), Value::Null);
    d.insert("output_throughput".into(), num(0.0));
    d.insert("total_token_throughput".into(), num(0.0));
    // Python's sum() of an empty list is the integer 0.
    let total_audio_v = if completed == 0 {
        Value::from(0)
    } else {
        num(total_audio)
    };
    d.insert("total_audio_duration_s".into(), total_audio_v);
    d.insert("total_audio_frames".into(), Value::from(total_frames));
    d.insert("audio_throughput".into(), num(per_s(total_audio)));
    fillers(&mut d, ps);
    d.insert(
        "max_concurrent_requests".into(),
        Value::from(max_concurrent_requests(&ok)),
    );
    d.insert("rtfx".into(), num(0.0));
    for (k, v) in [
        ("num_ttft_samples", completed),
        ("num_tpot_samples", 0),
        ("num_itl_samples", 0),
        ("num_audio_ttfp_samples", completed),
        ("num_audio_rtf_samples", completed),
    ] {
        d.insert(k.into(), Value::from(v));
    }
    for &m in &sel.metrics {
        // With no success upstream keeps e2el and duration (zeros) and drops the rest;
        // its newer bench always writes the underrun statistics once selected.
        let always = matches!(
            m,
            Metric::E2el | Metric::Audio(AudioMetric::Duration | AudioMetric::Underrun)
        );
        if completed > 0 || always {
            let (s, scale) = samples(&ok, m);
            put_stats(&mut d, m.stem(), &s, scale, ps);
        }
    }
    extras(&mut d, measured, &ok, f, sel);
    d
}

/// dfx-perf's own keys, after the upstream ones.
fn extras(
    d: &mut ResultDoc,
    measured: &[RequestRecord],
    ok: &[&RequestRecord],
    f: &StepFacts,
    sel: &Selection,
) {
    let ps = &sel.percentiles;
    let verdicts: Vec<bool> = ok.iter().filter_map(|r| r.continuous_100ms).collect();
    let rate = (!verdicts.is_empty())
        .then(|| verdicts.iter().filter(|&&v| v).count() as f64 / verdicts.len() as f64);
    d.insert(
        "audio_continuity_ok_rate".into(),
        rate.map_or(Value::Null, num),
    );
    d.insert(
        "num_audio_continuity_samples".into(),
        Value::from(verdicts.len()),
    );
    // Newer vllm-omni's silent-loss count: a 200 OK that carried no audio.
    let skipped = ok.iter().filter(|r| r.audio_frames == 0).count();
    d.insert("audio_skipped_requests".into(), Value::from(skipped));
    let underrun = Metric::Audio(AudioMetric::Underrun);
    if !ok.is_empty() {
        let (s, scale) = samples(ok, underrun);
        if !sel.has(underrun) {
            put_stats(d, underrun.stem(), &s, scale, ps);
        }
        // Newer vllm-omni writes the underrun's std too (0.30 writes no std_ key).
        d.insert("std_audio_underrun_s".into(), num(s.std() * scale));
    }
    let audible: Vec<f64> = ok.iter().filter_map(|r| r.ttfa_audible_s).collect();
    let audible = Sorted::new(audible);
    d.insert(
        "num_ttfa_audible_samples".into(),
        Value::from(audible.len()),
    );
    if audible.is_empty() {
        d.insert("mean_ttfa_audible_ms".into(), Value::Null);
        d.insert("median_ttfa_audible_ms".into(), Value::Null);
        for &p in ps {
            d.insert(
                format!("p{}_ttfa_audible_ms", percentile_word(p)),
                Value::Null,
            );
        }
    } else {
        put_stats(d, "ttfa_audible_ms", &audible, 1000.0, ps);
    }
    let lags = Sorted::new(measured.iter().map(|r| r.lag_s).collect());
    d.insert("peak_inflight".into(), Value::from(f.peak_inflight));
    d.insert(
        "generator_lag_p99_ms".into(),
        num(lags.percentile(99.0) * 1000.0),
    );
    d.insert(
        "generator_lag_max_ms".into(),
        num(lags.percentile(100.0) * 1000.0),
    );
    d.insert(
        "num_empty_audio".into(),
        Value::from(ok.iter().filter(|r| r.empty).count()),
    );
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for r in measured.iter().filter(|r| !r.ok) {
        *errors
            .entry(r.error_class.clone().unwrap_or_default())
            .or_default() += 1;
    }
    d.insert(
        "error_counts".into(),
        serde_json::to_value(errors).unwrap_or_default(),
    );
    d.insert("audio_sample_rate".into(), Value::from(f.sample_rate));
    d.insert("result_source".into(), Value::from("native"));
}
