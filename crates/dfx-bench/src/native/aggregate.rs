//! The speech (TTS) result document of one step: vllm-omni 0.30's keys in its order with
//! its value types, then dfx-perf's own keys, written with the aggregation core
//! (`native::keys`) from the speech per-request figures. Statistics over successes only
//! (numpy semantics).

use serde_json::{Map, Value};

use dfx_core::plan::GoodputSpec;
use dfx_core::result::ResultDoc;

use super::keys::{self, SampleCounts, Totals, num};
use super::record::RequestRecord;
use super::selection::{AudioMetric, Metric, Selection};
use super::stats::{self, Sorted};
use crate::metrics::goodput::{Goodput, SloValues};

pub use super::keys::StepHeader;

/// What the result says about the step besides its requests.
#[derive(Debug, Clone)]
pub struct StepFacts {
    /// The step's identity keys.
    pub header: StepHeader,
    /// Output sample rate every audio figure used, Hz (`audio_sample_rate`).
    pub sample_rate: u32,
    /// Exact largest number of requests in flight at once.
    pub peak_inflight: usize,
    /// The entry's `goodput` SLOs (`request_goodput` stays `null` without them).
    pub goodput: Option<GoodputSpec>,
    /// Prompt tokens of the successful requests, as vllm bench counts them
    /// (`total_input_tokens`; 0 without a tokenizer).
    pub input_tokens: u64,
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
        .map(|r| (r.sent.actual_send_s, r.e2el_s.unwrap_or(0.0)))
        .collect();
    keys::bucket_peak(&spans)
}

/// Upstream's continuity OK rate as printed in the stdout block: successes whose stream
/// never starved beyond 0.1 s, empty streams counted as continuous.
pub fn upstream_continuity_ok_rate(measured: &[RequestRecord]) -> f64 {
    let ok: Vec<&RequestRecord> = measured.iter().filter(|r| r.end.ok).collect();
    if ok.is_empty() {
        return 0.0;
    }
    let good = ok
        .iter()
        .filter(|r| r.continuous_100ms != Some(false))
        .count();
    good as f64 / ok.len() as f64
}

/// A speech request's figures for the `goodput` SLOs, as the step's statistics read them
/// (an empty 200: TTFP 0, RTF 0); `ttft` is the TTFP (speech has no tokens, and so a
/// TPOT of 0); `None` for a failure.
pub(crate) fn slo_values(r: &RequestRecord) -> Option<SloValues> {
    let ttfp_ms = r.ttfp_s.unwrap_or(0.0) * 1000.0;
    r.end.ok.then(|| SloValues {
        ttft_ms: Some(ttfp_ms),
        tpot_ms: Some(0.0),
        e2el_ms: Some(r.e2el_s.unwrap_or(0.0) * 1000.0),
        audio_ttfp_ms: Some(ttfp_ms),
        audio_rtf: Some(r.rtf.unwrap_or(0.0)),
        underrun_ms: r.underrun_s.map(|u| u * 1000.0),
    })
}

/// The result document of the measured requests of one step.
pub fn result_doc(measured: &[RequestRecord], f: &StepFacts, sel: &Selection) -> ResultDoc {
    let ok: Vec<&RequestRecord> = measured.iter().filter(|r| r.end.ok).collect();
    let completed = ok.len();
    let audio: Vec<f64> = ok.iter().map(|r| r.audio_s).collect();
    let totals = Totals {
        completed,
        failed: measured.len() - completed,
        duration: measured.iter().map(|r| r.end.end_s).fold(0.0, f64::max),
        audio_s: stats::sum(&audio),
        audio_frames: ok.iter().map(|r| r.audio_frames).sum(),
        max_concurrent_requests: max_concurrent_requests(&ok),
        input_tokens: f.input_tokens,
        ..Totals::default()
    };
    let ps = &sel.percentiles;
    let mut d = Map::new();
    keys::put_upstream_head(&mut d, &f.header, &totals, ps);
    keys::put_sample_counts(
        &mut d,
        SampleCounts {
            ttft: completed,
            tpot: 0,
            itl: 0,
            audio_ttfp: completed,
            audio_rtf: completed,
        },
    );
    for &m in &sel.metrics {
        // With no success upstream keeps e2el and duration (zeros) and drops the rest;
        // its newer bench always writes the underrun statistics once selected.
        let always = matches!(
            m,
            Metric::E2el | Metric::Audio(AudioMetric::Duration | AudioMetric::Underrun)
        );
        if completed > 0 || always {
            let (s, scale) = samples(&ok, m);
            keys::put_stats(&mut d, m.stem(), &s, scale, ps);
        }
    }
    extras(&mut d, measured, &ok, f, sel);
    // Last: `request_goodput` keeps vllm's place, `slo_attainment` follows dfx-perf's keys.
    let goodput = (f.goodput.as_ref()).map(|g| Goodput::count(g, measured.iter().map(slo_values)));
    keys::put_goodput(&mut d, goodput, totals.duration);
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
            keys::put_stats(d, underrun.stem(), &s, scale, ps);
        }
        // Newer vllm-omni writes the underrun's std too (0.30 writes no std_ key).
        keys::put_std(d, underrun.stem(), &s, scale);
    }
    let audible = Sorted::new(ok.iter().filter_map(|r| r.ttfa_audible_s).collect());
    d.insert(
        "num_ttfa_audible_samples".into(),
        Value::from(audible.len()),
    );
    if audible.is_empty() {
        keys::put_null_stats(d, "ttfa_audible_ms", ps);
    } else {
        keys::put_stats(d, "ttfa_audible_ms", &audible, 1000.0, ps);
    }
    keys::put_load_health(d, f.peak_inflight, measured.iter().map(|r| r.sent.lag_s));
    d.insert(
        "num_empty_audio".into(),
        Value::from(ok.iter().filter(|r| r.empty).count()),
    );
    let failed = measured.iter().filter(|r| !r.end.ok);
    keys::put_error_counts(d, failed.map(|r| r.end.error_class.as_deref()));
    d.insert("audio_sample_rate".into(), Value::from(f.sample_rate));
    d.insert("result_source".into(), Value::from("native"));
}
