//! The chat-omni stdout block in vllm's `Serving Benchmark Result` layout: the header
//! rows, the E2EL section, the `Text Result` section (token totals, then TTFT / TPOT /
//! ITL), the `Audio Result` section (totals, then the audio metrics), then dfx-perf's
//! extras.

use dfx_core::result::ResultDoc;
use serde_json::Value;

use super::aggregate::{ChatSelection, TextMetric};
use crate::native::selection::{AudioMetric, Metric, percentile_word};
use crate::native::summary::{bucket_peak_row, f, i, peak_row, row, row2, title};

fn section(
    o: &mut String,
    doc: &ResultDoc,
    stem: &str,
    name: &str,
    label: &str,
    unit: &str,
    ps: &[f64],
) {
    if !doc.contains_key(&format!("mean_{stem}")) {
        return;
    }
    title(o, name, '-');
    row2(
        o,
        &format!("Mean {label}{unit}:"),
        f(doc, &format!("mean_{stem}")),
    );
    row2(
        o,
        &format!("Median {label}{unit}:"),
        f(doc, &format!("median_{stem}")),
    );
    for &p in ps {
        let w = percentile_word(p);
        row2(
            o,
            &format!("P{w} {label}{unit}:"),
            f(doc, &format!("p{w}_{stem}")),
        );
    }
}

fn text_section(o: &mut String, doc: &ResultDoc, m: TextMetric, ps: &[f64]) {
    let (stem, name, label) = m.display();
    section(o, doc, stem, name, label, " (ms)", ps);
}

/// vllm's block for a chat-omni result document.
pub(crate) fn serving_block(doc: &ResultDoc, sel: &ChatSelection) -> String {
    let mut o = String::new();
    let ps = &sel.percentiles;
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
    if sel.text.contains(&TextMetric::E2el) {
        text_section(&mut o, doc, TextMetric::E2el, ps);
    }
    title(&mut o, " Text Result ", '=');
    row(&mut o, "Total input tokens:", i(doc, "total_input_tokens"));
    row(
        &mut o,
        "Total generated tokens:",
        i(doc, "total_output_tokens"),
    );
    row2(
        &mut o,
        "Output token throughput (tok/s):",
        f(doc, "output_throughput"),
    );
    row2(
        &mut o,
        "Peak output token throughput (tok/s):",
        f(doc, "max_output_tokens_per_s"),
    );
    peak_row(&mut o, doc);
    row2(
        &mut o,
        "Total Token throughput (tok/s):",
        f(doc, "total_token_throughput"),
    );
    for &m in sel.text.iter().filter(|m| **m != TextMetric::E2el) {
        text_section(&mut o, doc, m, ps);
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
    for &a in &sel.audio {
        if a == AudioMetric::Underrun {
            continue;
        }
        let (name, label, unit) = Metric::Audio(a).display();
        let unit = unit.map(|u| format!(" ({u})")).unwrap_or_default();
        section(&mut o, doc, Metric::Audio(a).stem(), name, label, &unit, ps);
    }
    title(&mut o, "", '=');
    o
}

/// dfx-perf's additions: tokenizer, load-generator health, error classes.
pub(crate) fn extras_block(doc: &ResultDoc) -> String {
    let mut o = String::new();
    title(&mut o, " dfx-perf native extras ", '=');
    let tok = doc
        .get("dfx_tokenizer")
        .and_then(Value::as_str)
        .unwrap_or("");
    row(&mut o, "Token counts:", tok);
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
    row2(
        &mut o,
        "Body generator wait max (ms):",
        f(doc, "body_wait_max_ms"),
    );
    if let Some(Value::Object(errors)) = doc.get("error_counts") {
        for (class, n) in errors {
            row(&mut o, &format!("Errors {class}:"), n);
        }
    }
    title(&mut o, "", '=');
    o
}
