//! The chat-omni sections of vllm's `Serving Benchmark Result` block (the E2EL section,
//! the `Text Result` part with TTFT / TPOT / ITL, the audio metrics) and of dfx-perf's
//! extras block, laid out by the shared builder ([`crate::native::summary`]).

use dfx_core::result::ResultDoc;
use serde_json::Value;

use super::aggregate::{ChatSelection, TextMetric};
use crate::native::selection::{AudioMetric, Metric};
use crate::native::summary::{self, Row, Section, ServingSpec, f};

/// The section of a `percentile-metrics` text metric (ms).
pub(crate) fn text_section(m: TextMetric) -> Section {
    let (stem, title, label) = m.display();
    Section {
        stem,
        title,
        label,
        unit: Some("ms"),
    }
}

/// vllm's block for a chat-omni result document.
pub(crate) fn serving_block(doc: &ResultDoc, sel: &ChatSelection) -> String {
    let spec = ServingSpec {
        percentiles: &sel.percentiles,
        e2el: sel
            .text
            .contains(&TextMetric::E2el)
            .then(|| text_section(TextMetric::E2el)),
        text: Some(
            sel.text
                .iter()
                .filter(|m| **m != TextMetric::E2el)
                .map(|&m| text_section(m))
                .collect(),
        ),
        continuity_ok_rate: None,
        audio: sel
            .audio
            .iter()
            .filter(|a| **a != AudioMetric::Underrun)
            .map(|&a| Section::of(Metric::Audio(a)))
            .collect(),
    };
    summary::serving(doc, &spec)
}

/// dfx-perf's additions: tokenizer, load-generator health, body generator wait, error
/// classes.
pub(crate) fn extras_block(doc: &ResultDoc) -> String {
    let tok = doc
        .get("dfx_tokenizer")
        .and_then(Value::as_str)
        .unwrap_or("");
    let lead: Vec<Row> = vec![("Token counts:".into(), tok.into())];
    let tail: Vec<Row> = vec![(
        "Body generator wait max (ms):".into(),
        format!("{:.2}", f(doc, "body_wait_max_ms")),
    )];
    summary::extras(doc, lead, tail)
}
