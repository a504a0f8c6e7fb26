//! The stdout summary block, laid out exactly like vllm's `Serving Benchmark Result`
//! (40-column labels, values left-aligned in 10 columns, `.2f` floats), and dfx-perf's
//! own block printed after it.

use std::fmt::Write;

use serde_json::Value;

use dfx_core::result::ResultDoc;

use super::selection::{Metric, Selection, percentile_word};

pub(crate) fn f(doc: &ResultDoc, key: &str) -> f64 {
    doc.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

pub(crate) fn i(doc: &ResultDoc, key: &str) -> i64 {
    doc.get(key)
        .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|x| x as i64)))
        .unwrap_or(0)
}

pub(crate) fn row(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "{label:<40} {value:<10}");
}

pub(crate) fn row2(out: &mut String, label: &str, value: f64) {
    row(out, label, format!("{value:.2}"));
}

pub(crate) fn title(out: &mut String, text: &str, fill: char) {
    let pad = 50usize.saturating_sub(text.chars().count());
    let (l, r) = (pad / 2, pad - pad / 2);
    let fill_l: String = std::iter::repeat_n(fill, l).collect();
    let fill_r: String = std::iter::repeat_n(fill, r).collect();
    let _ = writeln!(out, "{fill_l}{text}{fill_r}");
}

fn metric_section(out: &mut String, doc: &ResultDoc, m: Metric, ps: &[f64]) {
    let stem = m.stem();
    if !doc.contains_key(&format!("mean_{stem}")) {
        return;
    }
    let (section, label, unit) = m.display();
    let unit = unit.map(|u| format!(" ({u})")).unwrap_or_default();
    title(out, section, '-');
    row2(
        out,
        &format!("Mean {label}{unit}:"),
        f(doc, &format!("mean_{stem}")),
    );
    row2(
        out,
        &format!("Median {label}{unit}:"),
        f(doc, &format!("median_{stem}")),
    );
    for &p in ps {
        let w = percentile_word(p);
        row2(
            out,
            &format!("P{w} {label}{unit}:"),
            f(doc, &format!("p{w}_{stem}")),
        );
    }
}

/// `Peak concurrent requests:` as measured: the exact peak of requests in flight
/// (`peak_inflight`, an integer). Upstream's `max_concurrent_requests` (kept in result.json
/// for parity) counts the successful requests touching each one-second bucket, so
/// sub-second requests sent one after another read as concurrent (20 at c=1); it is
/// printed only when the exact peak was not measured, and in the extras block under its
/// own name.
pub(crate) fn peak_row(out: &mut String, doc: &ResultDoc) {
    match doc.get("peak_inflight").and_then(Value::as_u64) {
        Some(peak) => row(out, "Peak concurrent requests:", peak),
        None => row2(
            out,
            "Peak concurrent requests:",
            f(doc, "max_concurrent_requests"),
        ),
    }
}

/// The upstream one-second-bucket count, named for what it is (extras blocks).
pub(crate) fn bucket_peak_row(out: &mut String, doc: &ResultDoc) {
    row(
        out,
        "Peak requests per 1-s bucket (upstream):",
        i(doc, "max_concurrent_requests"),
    );
}

/// vllm's block for a result document, without vllm's token lines (speech produces
/// none). `continuity_ok_rate` is upstream's definition
/// (empty streams count as continuous), as a fraction.
pub fn serving_block(doc: &ResultDoc, sel: &Selection, continuity_ok_rate: f64) -> String {
    let mut o = String::new();
    title(&mut o, " Serving Benchmark Result ", '=');
    row(&mut o, "Successful requests:", i(doc, "completed"));
    row(&mut o, "Failed requests:", i(doc, "failed"));
    if let Some(c) = doc.get("max_concurrency").and_then(Value::as_i64) {
        row(&mut o, "Maximum request concurrency:", c);
    }
    if let Some(r) = doc.get("request_rate").and_then(Value::as_f64) {
        row2(&mut o, "Request rate configured (RPS):", r);
    }
    row2(&mut o, "Benchmark duration (s):", f(doc, "duration"));
    row2(
        &mut o,
        "Request throughput (req/s):",
        f(doc, "request_throughput"),
    );
    peak_row(&mut o, doc);
    if sel.has(Metric::E2el) {
        metric_section(&mut o, doc, Metric::E2el, &sel.percentiles);
    }
    title(&mut o, " Audio Result ", '=');
    row2(
        &mut o,
        "Total audio duration generated(s):",
        f(doc, "total_audio_duration_s"),
    );
    row(
        &mut o,
        "Total audio frames generated:",
        i(doc, "total_audio_frames"),
    );
    row2(
        &mut o,
        "Audio throughput(audio duration/s):",
        f(doc, "audio_throughput"),
    );
    row(
        &mut o,
        "Streaming continuity OK rate:",
        format!("{:.2}%", continuity_ok_rate * 100.0),
    );
    for &m in sel.metrics.iter().filter(|m| **m != Metric::E2el) {
        metric_section(&mut o, doc, m, &sel.percentiles);
    }
    title(&mut o, "", '=');
    o
}

fn ms_or_na(doc: &ResultDoc, key: &str) -> String {
    doc.get(key)
        .and_then(Value::as_f64)
        .map_or_else(|| "n/a".into(), |v| format!("{v:.2}"))
}

/// dfx-perf's additions: measured-only continuity, audible onset, load-generator health,
/// empty bodies and error classes.
pub fn extras_block(doc: &ResultDoc, sel: &Selection) -> String {
    let mut o = String::new();
    title(&mut o, " dfx-perf native extras ", '=');
    let measured = i(doc, "num_audio_continuity_samples");
    let rate = doc
        .get("audio_continuity_ok_rate")
        .and_then(Value::as_f64)
        .map_or_else(|| "n/a".into(), |r| format!("{:.2}%", r * 100.0));
    row(&mut o, "Continuity OK rate (measured streams):", rate);
    row(&mut o, "Streams measured for continuity:", measured);
    row(
        &mut o,
        "Empty audio responses (200, no bytes):",
        i(doc, "num_empty_audio"),
    );
    row(
        &mut o,
        "Mean TTFA audible (ms):",
        ms_or_na(doc, "mean_ttfa_audible_ms"),
    );
    row(
        &mut o,
        "Median TTFA audible (ms):",
        ms_or_na(doc, "median_ttfa_audible_ms"),
    );
    for &p in &sel.percentiles {
        let w = percentile_word(p);
        row(
            &mut o,
            &format!("P{w} TTFA audible (ms):"),
            ms_or_na(doc, &format!("p{w}_ttfa_audible_ms")),
        );
    }
    bucket_peak_row(&mut o, doc);
    row2(
        &mut o,
        "Generator lag p99 (ms):",
        f(doc, "generator_lag_p99_ms"),
    );
    row2(
        &mut o,
        "Generator lag max (ms):",
        f(doc, "generator_lag_max_ms"),
    );
    row(
        &mut o,
        "Audio sample rate (Hz):",
        i(doc, "audio_sample_rate"),
    );
    if let Some(Value::Object(errors)) = doc.get("error_counts") {
        for (class, n) in errors {
            row(&mut o, &format!("Errors {class}:"), n);
        }
    }
    title(&mut o, "", '=');
    o
}
