//! The chat-omni result document: vllm-omni 0.30's keys for this backend in its order
//! (the TTS base keys with real token counts, `request_stage_metrics` when any request
//! got stage metrics, the text blocks `ttft`, `tpot`, `itl` before `e2el`, the audio
//! blocks in the order `percentile-metrics` lists them), then dfx-perf's keys.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use dfx_core::plan::PercentileKeys;
use dfx_core::result::ResultDoc;

use super::record::ChatRecord;
use crate::native::aggregate::{StepHeader, num, put_step_header};
use crate::native::selection::{AudioMetric, percentile_word};
use crate::native::stats::{self, Sorted};

/// A text metric of `percentile-metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextMetric {
    Ttft,
    Tpot,
    Itl,
    E2el,
}

impl TextMetric {
    /// Result-key stem, stdout section and label.
    pub(crate) fn display(self) -> (&'static str, &'static str, &'static str) {
        match self {
            TextMetric::Ttft => ("ttft_ms", "Time to First Token", "TTFT"),
            TextMetric::Tpot => ("tpot_ms", "Time per Output Token (excl. 1st token)", "TPOT"),
            TextMetric::Itl => ("itl_ms", "Inter-token Latency", "ITL"),
            TextMetric::E2el => ("e2el_ms", "End-to-end Latency", "E2EL"),
        }
    }
}

/// The statistics a chat step reports.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChatSelection {
    /// In upstream's fixed order: ttft, tpot, itl, e2el.
    pub text: Vec<TextMetric>,
    /// In the order listed.
    pub audio: Vec<AudioMetric>,
    pub percentiles: Vec<f64>,
    /// Names that select nothing here.
    pub ignored: Vec<String>,
}

/// `percentile-metrics` when an entry has none: the bench's own default, the same flag
/// default for every backend (`e2el,audio_rtf,audio_ttfp,audio_duration`).
pub(crate) const DEFAULT_CHAT_METRICS: &str = crate::native::selection::DEFAULT_PERCENTILE_METRICS;

impl ChatSelection {
    /// The selection of an entry's keys (parsed when the plan was built; `tpop` is
    /// upstream's alias of `tpot`).
    pub(crate) fn of(keys: &PercentileKeys) -> Self {
        let names = keys.metric_names(DEFAULT_CHAT_METRICS);
        let mut text = Vec::new();
        for (n, m) in [
            ("ttft", TextMetric::Ttft),
            ("tpot", TextMetric::Tpot),
            ("itl", TextMetric::Itl),
            ("e2el", TextMetric::E2el),
        ] {
            if names.contains(&n) || (n == "tpot" && names.contains(&"tpop")) {
                text.push(m);
            }
        }
        let mut audio = Vec::new();
        let mut ignored = Vec::new();
        for n in &names {
            let a = match *n {
                "audio_rtf" => AudioMetric::Rtf,
                "audio_ttfp" => AudioMetric::Ttfp,
                "audio_duration" => AudioMetric::Duration,
                "ttft" | "tpot" | "tpop" | "itl" | "e2el" => continue,
                other => {
                    ignored.push(other.to_string());
                    continue;
                }
            };
            if !audio.contains(&a) {
                audio.push(a);
            }
        }
        ChatSelection {
            text,
            audio,
            percentiles: keys.percentiles().to_vec(),
            ignored,
        }
    }
}

/// What the result says about the step besides its requests.
#[derive(Debug, Clone)]
pub(crate) struct ChatFacts {
    pub header: StepHeader,
    pub peak_inflight: usize,
    /// Whether token counts came from a real tokenizer.
    pub real_tokenizer: bool,
}

fn put(d: &mut ResultDoc, stem: &str, xs: Vec<f64>, scale: f64, ps: &[f64]) {
    let s = Sorted::new(xs);
    d.insert(format!("mean_{stem}"), num(s.mean() * scale));
    d.insert(format!("median_{stem}"), num(s.median() * scale));
    for &p in ps {
        d.insert(
            format!("p{}_{stem}", percentile_word(p)),
            num(s.percentile(p) * scale),
        );
    }
}

/// Upstream's peak output throughput: every success's token times (send + TTFT, then
/// + each ITL) in one-second buckets from the first send; the fullest bucket.
pub(crate) fn max_output_tokens_per_s(ok: &[&ChatRecord]) -> f64 {
    let Some(t0) = ok.iter().map(|r| r.actual_send_s).reduce(f64::min) else {
        return 0.0;
    };
    let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
    for r in ok {
        let mut t = r.actual_send_s - t0 + r.ttft_s;
        *buckets.entry(t.max(0.0) as u64).or_default() += 1;
        for itl in &r.itl_s {
            t += itl;
            *buckets.entry(t.max(0.0) as u64).or_default() += 1;
        }
    }
    buckets.values().copied().max().unwrap_or(0) as f64
}

/// Upstream's `max_concurrent_requests` (one-second buckets over successes).
fn max_concurrent(ok: &[&ChatRecord]) -> u64 {
    let Some(t0) = ok.iter().map(|r| r.actual_send_s).reduce(f64::min) else {
        return 0;
    };
    let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
    for r in ok {
        let (a, b) = (
            (r.actual_send_s - t0) as u64,
            (r.actual_send_s - t0 + r.e2el_s) as u64,
        );
        for s in a..=b.min(a + 86_400) {
            *buckets.entry(s).or_default() += 1;
        }
    }
    buckets.values().copied().max().unwrap_or(0)
}

fn fillers(d: &mut ResultDoc, ps: &[f64]) {
    let zero = Value::Array(
        ps.iter()
            .map(|&p| Value::from(vec![num(p), num(0.0)]))
            .collect(),
    );
    for (k, v) in [
        ("image_throughput", num(0.0)),
        ("average_pixels_per_image", num(0.0)),
        ("mean_denoise_step_latency_ms", num(0.0)),
        ("total_video_duration_s", Value::from(0)),
        ("total_video_frames", Value::from(0)),
        ("video_throughput", num(0.0)),
        ("mean_video_rtf", num(0.0)),
        ("median_video_rtf", num(0.0)),
        ("percentiles_video_rtf", zero.clone()),
        ("mean_video_generation_ms", num(0.0)),
        ("median_video_generation_ms", num(0.0)),
        ("percentiles_video_generation_ms", zero.clone()),
        ("mean_peak_memory_mb", num(0.0)),
        ("median_peak_memory_mb", num(0.0)),
        ("percentiles_peak_memory_mb", zero),
        ("stage_durations_mean", Value::Object(Map::new())),
        ("stage_durations_p50", Value::Object(Map::new())),
        ("stage_durations_p99", Value::Object(Map::new())),
    ] {
        d.insert(k.into(), v);
    }
}

/// The per-request stage summary upstream keeps: `{stage: {num_tokens_out, finish_reason,
/// audio_frames, audio_duration_s}}`, `null` for a request without stage metrics.
fn stage_summary(r: &ChatRecord) -> Value {
    let Some(st) = &r.stage_metrics else {
        return Value::Null;
    };
    let mut out = Map::new();
    for (k, v) in st {
        let mut s = Map::new();
        for f in [
            "num_tokens_out",
            "finish_reason",
            "audio_frames",
            "audio_duration_s",
        ] {
            s.insert(f.into(), v.get(f).cloned().unwrap_or(Value::Null));
        }
        out.insert(k.clone(), Value::Object(s));
    }
    Value::Object(out)
}

/// The result document of the measured requests (sorted by index).
pub(crate) fn result_doc(measured: &[ChatRecord], f: &ChatFacts, sel: &ChatSelection) -> ResultDoc {
    let ok: Vec<&ChatRecord> = measured.iter().filter(|r| r.ok).collect();
    let completed = ok.len();
    let duration = measured.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let per_s = |x: f64| if duration > 0.0 { x / duration } else { 0.0 };
    let input: u64 = ok.iter().map(|r| r.prompt_len).sum();
    let output: u64 = ok.iter().map(|r| r.output_len).sum();
    let audio: Vec<f64> = ok.iter().map(|r| r.audio_duration_s).collect();
    let total_audio = stats::sum(&audio);
    let ps = &sel.percentiles;
    let mut d = Map::new();
    put_step_header(
        &mut d,
        &f.header,
        duration,
        completed,
        measured.len() - completed,
    );
    d.insert("total_input_tokens".into(), Value::from(input));
    d.insert("total_output_tokens".into(), Value::from(output));
    d.insert("request_throughput".into(), num(per_s(completed as f64)));
    d.insert("request_goodput".into(), Value::Null);
    d.insert("output_throughput".into(), num(per_s(output as f64)));
    d.insert(
        "total_token_throughput".into(),
        num(per_s((input + output) as f64)),
    );
    let total_audio_v = if completed == 0 {
        Value::from(0)
    } else {
        num(total_audio)
    };
    d.insert("total_audio_duration_s".into(), total_audio_v);
    let frames: u64 = ok.iter().map(|r| r.audio_frames).sum();
    d.insert("total_audio_frames".into(), Value::from(frames));
    d.insert("audio_throughput".into(), num(per_s(total_audio)));
    let images: u64 = ok.iter().map(|r| r.images).sum();
    d.insert("total_images".into(), Value::from(images));
    fillers(&mut d, ps);
    d.insert("image_throughput".into(), num(per_s(images as f64)));
    d.insert(
        "max_output_tokens_per_s".into(),
        num(max_output_tokens_per_s(&ok)),
    );
    d.insert(
        "max_concurrent_requests".into(),
        Value::from(max_concurrent(&ok)),
    );
    d.insert("rtfx".into(), num(0.0));
    let tpots: Vec<f64> = ok.iter().filter_map(|r| r.tpot_s).collect();
    let itls: Vec<f64> = ok.iter().flat_map(|r| r.itl_s.iter().copied()).collect();
    for (k, v) in [
        ("num_ttft_samples", completed),
        ("num_tpot_samples", tpots.len()),
        ("num_itl_samples", itls.len()),
        ("num_audio_ttfp_samples", completed),
        ("num_audio_rtf_samples", completed),
    ] {
        d.insert(k.into(), Value::from(v));
    }
    if ok.iter().any(|r| r.stage_metrics.is_some()) {
        let list = measured.iter().map(stage_summary).collect();
        d.insert("request_stage_metrics".into(), Value::Array(list));
    }
    for &m in &sel.text {
        let (stem, _, _) = m.display();
        let xs = match m {
            // Text statistics need generated tokens; E2EL is always written.
            TextMetric::Ttft if output > 0 => ok.iter().map(|r| r.ttft_s).collect(),
            TextMetric::Tpot if output > 0 => tpots.clone(),
            TextMetric::Itl if output > 0 => itls.clone(),
            TextMetric::E2el => ok.iter().map(|r| r.e2el_s).collect(),
            _ => continue,
        };
        put(&mut d, stem, xs, 1000.0, ps);
    }
    for &a in &sel.audio {
        let (stem, xs, scale): (&str, Vec<f64>, f64) = match a {
            AudioMetric::Rtf => ("audio_rtf", ok.iter().map(|r| r.audio_rtf).collect(), 1.0),
            AudioMetric::Ttfp => (
                "audio_ttfp_ms",
                ok.iter().map(|r| r.audio_ttfp_s).collect(),
                1000.0,
            ),
            AudioMetric::Duration => ("audio_duration_s", audio.clone(), 1.0),
            AudioMetric::Underrun => continue,
        };
        if completed > 0 || a == AudioMetric::Duration {
            put(&mut d, stem, xs, scale, ps);
        }
    }
    extras(&mut d, measured, f);
    d
}

fn extras(d: &mut ResultDoc, measured: &[ChatRecord], f: &ChatFacts) {
    let lags = Sorted::new(measured.iter().map(|r| r.lag_s).collect());
    let waits = measured.iter().map(|r| r.body_wait_s).fold(0.0, f64::max);
    d.insert("peak_inflight".into(), Value::from(f.peak_inflight));
    d.insert(
        "generator_lag_p99_ms".into(),
        num(lags.percentile(99.0) * 1000.0),
    );
    d.insert(
        "generator_lag_max_ms".into(),
        num(lags.percentile(100.0) * 1000.0),
    );
    d.insert("body_wait_max_ms".into(), num(waits * 1000.0));
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
    d.insert(
        "dfx_tokenizer".into(),
        Value::from(if f.real_tokenizer {
            "tokenizer.json"
        } else {
            "approximate"
        }),
    );
    d.insert("result_source".into(), Value::from("native"));
}
