//! The stdout summary block, laid out exactly like vllm's `Serving Benchmark Result`
//! (40-column labels, values left-aligned in 10 columns, `.2f` floats), and dfx-perf's
//! own block printed after it: one builder (`serving`, `extras`) to which each
//! protocol supplies only its sections and rows (speech's here, chat's in
//! `omni/summary.rs`).

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

/// One statistics section of the block: `Mean`, `Median` and `P<p>` rows of one
/// result-key stem, printed only when the result has its `mean_` key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Section {
    /// Result-key stem (`e2el_ms`).
    pub stem: &'static str,
    /// Section title (`End-to-end Latency`).
    pub title: &'static str,
    /// Row label (`E2EL`).
    pub label: &'static str,
    /// Unit shown after the label (`ms`).
    pub unit: Option<&'static str>,
}

impl Section {
    /// The section of a selection metric.
    pub(crate) fn of(m: Metric) -> Self {
        let (title, label, unit) = m.display();
        Section {
            stem: m.stem(),
            title,
            label,
            unit,
        }
    }

    /// Appends the section to `out` (nothing when the result has no `mean_` key).
    pub(crate) fn write(&self, out: &mut String, doc: &ResultDoc, ps: &[f64]) {
        let stem = self.stem;
        if !doc.contains_key(&format!("mean_{stem}")) {
            return;
        }
        let label = self.label;
        let unit = self.unit.map(|u| format!(" ({u})")).unwrap_or_default();
        title(out, self.title, '-');
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
}

/// What a protocol prints in vllm's `Serving Benchmark Result` block; the rows every
/// protocol has (header, throughput, peak, audio totals) come from [`serving`].
#[derive(Debug, Clone)]
pub(crate) struct ServingSpec<'a> {
    /// The percentiles of every section.
    pub percentiles: &'a [f64],
    /// The E2EL section after the header rows, when selected.
    pub e2el: Option<Section>,
    /// The `Text Result` part: token totals, then these sections (`None`: no text).
    pub text: Option<Vec<Section>>,
    /// `Streaming continuity OK rate:` (a fraction) after the audio totals.
    pub continuity_ok_rate: Option<f64>,
    /// The audio metric sections after the audio totals.
    pub audio: Vec<Section>,
}

fn text_result(o: &mut String, doc: &ResultDoc) {
    title(o, " Text Result ", '=');
    row(o, "Total input tokens:", i(doc, "total_input_tokens"));
    row(o, "Total generated tokens:", i(doc, "total_output_tokens"));
    row2(
        o,
        "Output token throughput (tok/s):",
        f(doc, "output_throughput"),
    );
    row2(
        o,
        "Peak output token throughput (tok/s):",
        f(doc, "max_output_tokens_per_s"),
    );
    peak_row(o, doc);
    row2(
        o,
        "Total Token throughput (tok/s):",
        f(doc, "total_token_throughput"),
    );
}

/// vllm's block for a result document, laid out by `spec`.
pub(crate) fn serving(doc: &ResultDoc, spec: &ServingSpec<'_>) -> String {
    let mut o = String::new();
    let ps = spec.percentiles;
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
    // vllm prints it only with `--goodput` (the key is `null` otherwise).
    if let Some(g) = doc.get("request_goodput").and_then(Value::as_f64) {
        row2(&mut o, "Request goodput (req/s):", g);
    }
    peak_row(&mut o, doc);
    if let Some(s) = &spec.e2el {
        s.write(&mut o, doc, ps);
    }
    if let Some(sections) = &spec.text {
        text_result(&mut o, doc);
        for s in sections {
            s.write(&mut o, doc, ps);
        }
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
    if let Some(rate) = spec.continuity_ok_rate {
        row(
            &mut o,
            "Streaming continuity OK rate:",
            format!("{:.2}%", rate * 100.0),
        );
    }
    for s in &spec.audio {
        s.write(&mut o, doc, ps);
    }
    title(&mut o, "", '=');
    o
}

/// One pre-formatted row of the extras block: label, value.
pub(crate) type Row = (String, String);

/// dfx-perf's extras block: the protocol's `lead` rows, the rows every protocol has
/// (the SLO attainment of an entry with `goodput`, upstream's bucket peak, generator
/// lag), the protocol's `tail` rows, the error classes.
pub(crate) fn extras(doc: &ResultDoc, lead: Vec<Row>, tail: Vec<Row>) -> String {
    let mut o = String::new();
    title(&mut o, " dfx-perf native extras ", '=');
    for (label, value) in lead {
        row(&mut o, &label, value);
    }
    if let Some(Value::Number(a)) = doc.get("slo_attainment") {
        let pct = a.as_f64().unwrap_or(0.0) * 100.0;
        row(
            &mut o,
            "SLO attainment (goodput SLOs):",
            format!("{pct:.2}%"),
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
    for (label, value) in tail {
        row(&mut o, &label, value);
    }
    if let Some(Value::Object(errors)) = doc.get("error_counts") {
        for (class, n) in errors {
            row(&mut o, &format!("Errors {class}:"), n);
        }
    }
    title(&mut o, "", '=');
    o
}

/// `Peak concurrent requests:` as measured: the exact peak of requests in flight
/// (`peak_inflight`, an integer). Upstream's `max_concurrent_requests` (kept in result.json
/// for parity) counts the successful requests touching each one-second bucket, so
/// sub-second requests sent one after another read as concurrent (20 at c=1); it is
/// printed only when the exact peak was not measured, and in the extras block under its
/// own name.
fn peak_row(out: &mut String, doc: &ResultDoc) {
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
fn bucket_peak_row(out: &mut String, doc: &ResultDoc) {
    row(
        out,
        "Peak requests per 1-s bucket (upstream):",
        i(doc, "max_concurrent_requests"),
    );
}

/// vllm's block for a speech result document, without vllm's token lines (speech
/// produces none). `continuity_ok_rate` is upstream's definition (empty streams count as
/// continuous), as a fraction.
pub fn serving_block(doc: &ResultDoc, sel: &Selection, continuity_ok_rate: f64) -> String {
    let spec = ServingSpec {
        percentiles: &sel.percentiles,
        e2el: sel.has(Metric::E2el).then(|| Section::of(Metric::E2el)),
        text: None,
        continuity_ok_rate: Some(continuity_ok_rate),
        audio: sel
            .metrics
            .iter()
            .filter(|m| **m != Metric::E2el)
            .map(|&m| Section::of(m))
            .collect(),
    };
    serving(doc, &spec)
}

fn ms_or_na(doc: &ResultDoc, key: &str) -> String {
    doc.get(key)
        .and_then(Value::as_f64)
        .map_or_else(|| "n/a".into(), |v| format!("{v:.2}"))
}

/// dfx-perf's additions for speech: measured-only continuity, audible onset,
/// load-generator health, empty bodies and error classes.
pub fn extras_block(doc: &ResultDoc, sel: &Selection) -> String {
    let rate = doc
        .get("audio_continuity_ok_rate")
        .and_then(Value::as_f64)
        .map_or_else(|| "n/a".into(), |r| format!("{:.2}%", r * 100.0));
    let mut lead: Vec<Row> = vec![
        ("Continuity OK rate (measured streams):".into(), rate),
        (
            "Streams measured for continuity:".into(),
            i(doc, "num_audio_continuity_samples").to_string(),
        ),
        (
            "Empty audio responses (200, no bytes):".into(),
            i(doc, "num_empty_audio").to_string(),
        ),
        (
            "Mean TTFA audible (ms):".into(),
            ms_or_na(doc, "mean_ttfa_audible_ms"),
        ),
        (
            "Median TTFA audible (ms):".into(),
            ms_or_na(doc, "median_ttfa_audible_ms"),
        ),
    ];
    for &p in &sel.percentiles {
        let w = percentile_word(p);
        lead.push((
            format!("P{w} TTFA audible (ms):"),
            ms_or_na(doc, &format!("p{w}_ttfa_audible_ms")),
        ));
    }
    let tail = vec![(
        "Audio sample rate (Hz):".into(),
        i(doc, "audio_sample_rate").to_string(),
    )];
    extras(doc, lead, tail)
}
