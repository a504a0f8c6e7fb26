//! The chat-omni result document: vllm-omni 0.30's keys for this backend in its order
//! (the TTS base keys with real token counts, `request_stage_metrics` when any request
//! got stage metrics, the text blocks `ttft`, `tpot`, `itl` before `e2el`, the audio
//! blocks in the order `percentile-metrics` lists them), then dfx-perf's keys, written
//! with the aggregation core ([`crate::native::keys`]) from the chat per-request figures.

use serde_json::{Map, Value};

use dfx_core::plan::{GoodputSpec, PercentileKeys};
use dfx_core::result::ResultDoc;

use super::record::ChatRecord;
use crate::metrics::goodput::{Goodput, SloValues};
use crate::metrics::throughput;
use crate::native::keys::{self, SampleCounts, StepHeader, Totals, num};
use crate::native::selection::AudioMetric;
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
    /// The entry's `goodput` SLOs (`request_goodput` stays `null` without them).
    pub goodput: Option<GoodputSpec>,
}

/// Upstream's peak output throughput: every success's token times (send + TTFT, then
/// + each ITL) in one-second buckets from the first send; the fullest bucket.
pub(crate) fn max_output_tokens_per_s(ok: &[&ChatRecord]) -> f64 {
    let Some(t0) = ok.iter().map(|r| r.sent.actual_send_s).reduce(f64::min) else {
        return 0.0;
    };
    let token_times = ok.iter().flat_map(|r| {
        let first = r.sent.actual_send_s - t0 + r.ttft_s;
        std::iter::once(first).chain(r.itl_s.iter().scan(first, |t, itl| {
            *t += itl;
            Some(*t)
        }))
    });
    throughput::fullest_second(token_times.map(|t| (t, 1))) as f64
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

/// A chat request's figures for the `goodput` SLOs (TPOT 0 with at most one output
/// token, as vllm; continuity is not measured here); `None` for a failure.
fn slo_values(r: &ChatRecord) -> Option<SloValues> {
    r.end.ok.then(|| SloValues {
        ttft_ms: Some(r.ttft_s * 1000.0),
        tpot_ms: Some(r.tpot_s.unwrap_or(0.0) * 1000.0),
        e2el_ms: Some(r.e2el_s * 1000.0),
        audio_ttfp_ms: Some(r.audio_ttfp_s * 1000.0),
        audio_rtf: Some(r.audio_rtf),
        underrun_ms: None,
    })
}

/// The result document of the measured requests (sorted by index).
pub(crate) fn result_doc(measured: &[ChatRecord], f: &ChatFacts, sel: &ChatSelection) -> ResultDoc {
    let ok: Vec<&ChatRecord> = measured.iter().filter(|r| r.end.ok).collect();
    let completed = ok.len();
    let output: u64 = ok.iter().map(|r| r.output_len).sum();
    let audio: Vec<f64> = ok.iter().map(|r| r.audio_duration_s).collect();
    let spans: Vec<(f64, f64)> = ok
        .iter()
        .map(|r| (r.sent.actual_send_s, r.e2el_s))
        .collect();
    let totals = Totals {
        completed,
        failed: measured.len() - completed,
        duration: measured.iter().map(|r| r.end.end_s).fold(0.0, f64::max),
        input_tokens: ok.iter().map(|r| r.prompt_len).sum(),
        output_tokens: output,
        audio_s: stats::sum(&audio),
        audio_frames: ok.iter().map(|r| r.audio_frames).sum(),
        images: ok.iter().map(|r| r.images).sum(),
        max_output_tokens_per_s: max_output_tokens_per_s(&ok),
        max_concurrent_requests: keys::bucket_peak(&spans),
    };
    let ps = &sel.percentiles;
    let mut d = Map::new();
    keys::put_upstream_head(&mut d, &f.header, &totals, ps);
    let tpots: Vec<f64> = ok.iter().filter_map(|r| r.tpot_s).collect();
    let itls: Vec<f64> = ok.iter().flat_map(|r| r.itl_s.iter().copied()).collect();
    keys::put_sample_counts(
        &mut d,
        SampleCounts {
            ttft: completed,
            tpot: tpots.len(),
            itl: itls.len(),
            audio_ttfp: completed,
            audio_rtf: completed,
        },
    );
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
        keys::put_stats(&mut d, stem, &Sorted::new(xs), 1000.0, ps);
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
            keys::put_stats(&mut d, stem, &Sorted::new(xs), scale, ps);
        }
    }
    extras(&mut d, measured, f);
    // Last: `request_goodput` keeps vllm's place, `slo_attainment` follows dfx-perf's keys.
    let goodput = (f.goodput.as_ref()).map(|g| Goodput::count(g, measured.iter().map(slo_values)));
    keys::put_goodput(&mut d, goodput, totals.duration);
    d
}

fn extras(d: &mut ResultDoc, measured: &[ChatRecord], f: &ChatFacts) {
    let waits = measured.iter().map(|r| r.body_wait_s).fold(0.0, f64::max);
    keys::put_load_health(d, f.peak_inflight, measured.iter().map(|r| r.sent.lag_s));
    d.insert("body_wait_max_ms".into(), num(waits * 1000.0));
    let failed = measured.iter().filter(|r| !r.end.ok);
    keys::put_error_counts(d, failed.map(|r| r.end.error_class.as_deref()));
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
