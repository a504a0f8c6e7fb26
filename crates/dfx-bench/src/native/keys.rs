//! The aggregation core every protocol's result document is built with: vllm's leading
//! keys (`date` … `rtfx`) from a step's totals, the statistics keys of one metric
//! (`mean_X`, `median_X`, `pXX_X`, `std_X`), the sample counts, upstream's one-second
//! bucket peaks, and dfx-perf's load-health and error keys. A protocol feeds it its
//! per-request figures; numpy semantics come from [`super::stats`].

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use serde_json::{Map, Value};

use dfx_core::plan::Trial;
use dfx_core::result::ResultDoc;

use super::selection::percentile_word;
use super::stats::Sorted;
use crate::metrics::goodput::Goodput;
use crate::metrics::throughput;

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
    pub max_concurrency: Option<NonZeroU32>,
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

/// A finite number, else 0 (JSON has no NaN / infinity).
pub(crate) fn num(x: f64) -> Value {
    Value::from(if x.is_finite() { x } else { 0.0 })
}

/// The `mean_`, `median_` and `p<P>_` entries of one metric, scaled after the statistic
/// (seconds → ms), in that order.
pub(crate) fn stat_entries(
    stem: &str,
    samples: &Sorted,
    scale: f64,
    ps: &[f64],
) -> Vec<(String, Value)> {
    let mut out = vec![
        (format!("mean_{stem}"), num(samples.mean() * scale)),
        (format!("median_{stem}"), num(samples.median() * scale)),
    ];
    for &p in ps {
        let key = format!("p{}_{stem}", percentile_word(p));
        out.push((key, num(samples.percentile(p) * scale)));
    }
    out
}

/// Writes [`stat_entries`] into `d`.
pub(crate) fn put_stats(d: &mut ResultDoc, stem: &str, samples: &Sorted, scale: f64, ps: &[f64]) {
    d.extend(stat_entries(stem, samples, scale, ps));
}

/// The same keys as [`put_stats`], all `null` (a metric with no sample).
pub(crate) fn put_null_stats(d: &mut ResultDoc, stem: &str, ps: &[f64]) {
    d.insert(format!("mean_{stem}"), Value::Null);
    d.insert(format!("median_{stem}"), Value::Null);
    for &p in ps {
        d.insert(format!("p{}_{stem}", percentile_word(p)), Value::Null);
    }
}

/// The `std_<stem>` key (numpy `std`, ddof 0), scaled after the statistic.
pub(crate) fn put_std(d: &mut ResultDoc, stem: &str, samples: &Sorted, scale: f64) {
    d.insert(format!("std_{stem}"), num(samples.std() * scale));
}

/// What a step's requests add up to: the inputs of vllm's totals and throughputs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Totals {
    /// Successful requests.
    pub completed: usize,
    /// Failed requests.
    pub failed: usize,
    /// Seconds from the phase start to the last request's end.
    pub duration: f64,
    /// Prompt tokens over the successes (0 for speech).
    pub input_tokens: u64,
    /// Generated tokens over the successes (0 for speech).
    pub output_tokens: u64,
    /// Audio seconds over the successes (numpy sum).
    pub audio_s: f64,
    /// Audio frames over the successes.
    pub audio_frames: u64,
    /// Images over the successes.
    pub images: u64,
    /// Upstream's `max_output_tokens_per_s` (fullest one-second bucket of tokens).
    pub max_output_tokens_per_s: f64,
    /// Upstream's `max_concurrent_requests` ([`bucket_peak`]).
    pub max_concurrent_requests: u64,
}

impl Totals {
    /// `x` per second of the step (0 for a zero duration).
    pub(crate) fn per_s(&self, x: f64) -> f64 {
        throughput::per_s(x, self.duration)
    }
}

/// vllm's leading keys, `date` … `failed`, in its order.
fn put_step_header(d: &mut ResultDoc, h: &StepHeader, t: &Totals) {
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
        h.max_concurrency
            .map_or(Value::Null, |c| Value::from(c.get())),
    );
    d.insert("duration".into(), num(t.duration));
    d.insert("completed".into(), Value::from(t.completed));
    d.insert("failed".into(), Value::from(t.failed));
}

/// Upstream's image/video/memory/stage keys (zero: no protocol here measures them),
/// after `total_images`.
fn put_fillers(d: &mut ResultDoc, ps: &[f64]) {
    let zero_pcts = Value::Array(
        ps.iter()
            .map(|&p| Value::from(vec![num(p), num(0.0)]))
            .collect(),
    );
    for (k, v) in [
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
    ] {
        d.insert(k.into(), v);
    }
}

/// vllm-omni 0.30's keys from `date` to `rtfx`, in its order, with its value types.
pub(crate) fn put_upstream_head(d: &mut ResultDoc, h: &StepHeader, t: &Totals, ps: &[f64]) {
    put_step_header(d, h, t);
    let (input, output) = (t.input_tokens, t.output_tokens);
    d.insert("total_input_tokens".into(), Value::from(input));
    d.insert("total_output_tokens".into(), Value::from(output));
    d.insert(
        "request_throughput".into(),
        num(t.per_s(t.completed as f64)),
    );
    d.insert("request_goodput".into(), Value::Null);
    d.insert("output_throughput".into(), num(t.per_s(output as f64)));
    d.insert(
        "total_token_throughput".into(),
        num(t.per_s((input + output) as f64)),
    );
    // Python's sum() of an empty list is the integer 0.
    let total_audio = if t.completed == 0 {
        Value::from(0)
    } else {
        num(t.audio_s)
    };
    d.insert("total_audio_duration_s".into(), total_audio);
    d.insert("total_audio_frames".into(), Value::from(t.audio_frames));
    d.insert("audio_throughput".into(), num(t.per_s(t.audio_s)));
    d.insert("total_images".into(), Value::from(t.images));
    d.insert("image_throughput".into(), num(t.per_s(t.images as f64)));
    put_fillers(d, ps);
    d.insert(
        "max_output_tokens_per_s".into(),
        num(t.max_output_tokens_per_s),
    );
    d.insert(
        "max_concurrent_requests".into(),
        Value::from(t.max_concurrent_requests),
    );
    d.insert("rtfx".into(), num(0.0));
}

/// An entry with `goodput`: `request_goodput` (vllm's key, in place of its `null`) and
/// dfx-perf's `slo_attainment` (appended: call it after the protocol's own keys). Without `goodput` the document is unchanged.
pub(crate) fn put_goodput(d: &mut ResultDoc, g: Option<Goodput>, duration_s: f64) {
    let Some(g) = g else {
        return;
    };
    d.insert("request_goodput".into(), num(g.request_goodput(duration_s)));
    d.insert(
        "slo_attainment".into(),
        g.attainment().map_or(Value::Null, num),
    );
}

/// Sample counts of upstream's `num_*_samples` keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SampleCounts {
    /// `num_ttft_samples`.
    pub ttft: usize,
    /// `num_tpot_samples`.
    pub tpot: usize,
    /// `num_itl_samples`.
    pub itl: usize,
    /// `num_audio_ttfp_samples`.
    pub audio_ttfp: usize,
    /// `num_audio_rtf_samples`.
    pub audio_rtf: usize,
}

/// The `num_*_samples` keys in upstream's order.
pub(crate) fn put_sample_counts(d: &mut ResultDoc, n: SampleCounts) {
    for (k, v) in [
        ("num_ttft_samples", n.ttft),
        ("num_tpot_samples", n.tpot),
        ("num_itl_samples", n.itl),
        ("num_audio_ttfp_samples", n.audio_ttfp),
        ("num_audio_rtf_samples", n.audio_rtf),
    ] {
        d.insert(k.into(), Value::from(v));
    }
}

/// Upstream's `max_concurrent_requests`: successful requests, as `(send, e2el)` in
/// seconds, overlapping each one-second bucket from the first send; the largest bucket.
/// A request counts in at most a day of buckets (bounded work).
pub(crate) fn bucket_peak(spans: &[(f64, f64)]) -> u64 {
    let Some(t0) = spans.iter().map(|s| s.0).reduce(f64::min) else {
        return 0;
    };
    let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
    for &(send, e2el) in spans {
        let (a, b) = ((send - t0) as u64, (send - t0 + e2el) as u64);
        for s in a..=b.min(a + 86_400) {
            *buckets.entry(s).or_default() += 1;
        }
    }
    buckets.values().copied().max().unwrap_or(0)
}

/// dfx-perf's load-generator health: `peak_inflight`, then the p99 and max of every
/// request's send lag (`generator_lag_p99_ms`, `generator_lag_max_ms`).
pub(crate) fn put_load_health(
    d: &mut ResultDoc,
    peak_inflight: usize,
    lags_s: impl Iterator<Item = f64>,
) {
    let lags = Sorted::new(lags_s.collect());
    d.insert("peak_inflight".into(), Value::from(peak_inflight));
    d.insert(
        "generator_lag_p99_ms".into(),
        num(lags.percentile(99.0) * 1000.0),
    );
    d.insert(
        "generator_lag_max_ms".into(),
        num(lags.percentile(100.0) * 1000.0),
    );
}

/// `error_counts`: the failed requests per error class (no class: `""`), sorted.
pub(crate) fn put_error_counts<'a>(
    d: &mut ResultDoc,
    failed_classes: impl Iterator<Item = Option<&'a str>>,
) {
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for class in failed_classes {
        *errors
            .entry(class.unwrap_or_default().to_string())
            .or_default() += 1;
    }
    d.insert(
        "error_counts".into(),
        serde_json::to_value(errors).unwrap_or_default(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_peak_counts_requests_touching_each_second() {
        // Three sub-second requests one after another touch one bucket: upstream reads 3.
        let spans = [(0.0, 0.3), (0.3, 0.3), (0.6, 0.3)];
        assert_eq!(bucket_peak(&spans), 3);
        assert_eq!(bucket_peak(&[(0.0, 0.5), (2.5, 0.1)]), 1);
        assert_eq!(bucket_peak(&[]), 0);
    }

    #[test]
    fn stat_keys_in_order_and_scaled() {
        let s = Sorted::new(vec![0.001, 0.003]);
        let keys: Vec<String> = stat_entries("x_ms", &s, 1000.0, &[90.0, 99.9])
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["mean_x_ms", "median_x_ms", "p90_x_ms", "p99.9_x_ms"]);
        let mut d = Map::new();
        put_stats(&mut d, "x_ms", &s, 1000.0, &[]);
        assert!((d["mean_x_ms"].as_f64().unwrap() - 2.0).abs() < 1e-12);
    }
}
