//! The realtime result document: the TTS document of the same requests
//! ([`crate::native::aggregate::result_doc`]) with the realtime differences — output
//! tokens and throughputs, the TTFT block (when selected and tokens > 0), and with
//! `save_duplex_request_metrics` the `duplex_request_metrics` / `duplex_session_metrics`
//! lists after `num_audio_rtf_samples`.

use serde_json::{Map, Value, json};

use dfx_core::result::ResultDoc;

use super::metrics::{RealtimeRecord, round3};
use crate::metrics::throughput;
use crate::native::aggregate::{self, StepFacts};
use crate::native::keys::{self, num};
use crate::native::record::RequestRecord;
use crate::native::selection::Selection;
use crate::native::stats::Sorted;

/// What the realtime document needs besides the records.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RealtimeFacts {
    /// `percentile-metrics` contains `ttft`.
    pub ttft_selected: bool,
    /// `extra_body.save_duplex_request_metrics` is true.
    pub save_duplex: bool,
}

/// Inserts `block` before the first key for which `at` holds (at the end if none).
fn insert_before(
    doc: ResultDoc,
    block: Vec<(String, Value)>,
    mut at: impl FnMut(&str) -> bool,
) -> ResultDoc {
    let mut out = Map::new();
    let mut block = Some(block);
    for (k, v) in doc {
        if at(&k)
            && let Some(b) = block.take()
        {
            out.extend(b);
        }
        out.insert(k, v);
    }
    if let Some(b) = block {
        out.extend(b);
    }
    out
}

/// The result document of the measured realtime requests.
pub(crate) fn result_doc(
    recs: &[RealtimeRecord],
    f: &StepFacts,
    sel: &Selection,
    rf: RealtimeFacts,
) -> ResultDoc {
    let base: Vec<RequestRecord> = recs.iter().map(|r| r.base.clone()).collect();
    let mut d = aggregate::result_doc(&base, f, sel);
    let ok: Vec<&RealtimeRecord> = recs.iter().filter(|r| r.base.end.ok).collect();
    let tokens: u64 = ok.iter().map(|r| r.output_tokens).sum();
    let duration = d.get("duration").and_then(Value::as_f64).unwrap_or(0.0);
    let per_s = |x: f64| throughput::per_s(x, duration);
    d.insert("total_output_tokens".into(), Value::from(tokens));
    d.insert("output_throughput".into(), num(per_s(tokens as f64)));
    d.insert("total_token_throughput".into(), num(per_s(tokens as f64)));
    d.insert(
        "max_output_tokens_per_s".into(),
        num(peak_tokens_per_s(&ok)),
    );
    if rf.ttft_selected && tokens > 0 {
        let s = Sorted::new(ok.iter().map(|r| r.ttft_s).collect());
        let block = keys::stat_entries("ttft_ms", &s, 1000.0, &sel.percentiles);
        // Upstream's order: the text metrics (ttft) before e2el and the audio blocks.
        d = insert_before(d, block, |k| {
            k == "mean_e2el_ms" || k.starts_with("mean_audio_")
        });
    }
    if rf.save_duplex {
        // Upstream writes NaN here (not valid JSON); dfx-perf writes null (docs/bench.md).
        d.insert("max_output_tokens_per_s".into(), Value::Null);
        let block = vec![
            (
                "duplex_request_metrics".to_string(),
                Value::Array(request_metrics(&ok)),
            ),
            (
                "duplex_session_metrics".to_string(),
                Value::Array(ok.iter().map(|r| session_metrics(r)).collect()),
            ),
        ];
        let mut after_rtf = false;
        d = insert_before(d, block, |k| {
            let hit = after_rtf;
            after_rtf = after_rtf || k == "num_audio_rtf_samples";
            hit
        });
    }
    d
}

/// Peak output tokens in one 1-s bucket: each request's tokens at send + TTFT (the
/// realtime path has no inter-token times).
fn peak_tokens_per_s(ok: &[&RealtimeRecord]) -> f64 {
    let Some(t0) = ok
        .iter()
        .map(|r| r.base.sent.actual_send_s)
        .reduce(f64::min)
    else {
        return 0.0;
    };
    let events = ok
        .iter()
        .map(|r| (r.base.sent.actual_send_s + r.ttft_s - t0, r.output_tokens));
    throughput::fullest_second(events) as f64
}

fn request_metrics(ok: &[&RealtimeRecord]) -> Vec<Value> {
    let mut out = Vec::new();
    for r in ok {
        for t in &r.turns {
            let Some(m) = &t.metrics else { continue };
            out.push(json!({
                "session_id": r.duplex_session_id,
                "request_index": r.base.id.index,
                "utterance_id": t.utterance_id,
                "response_id": m.response_id,
                "source": m.source,
                "measurement_origin": m.measurement_origin,
                "ttft_ms": m.ttft_ms,
                "ttfp_ms": m.ttfp_ms,
                "audio_generation_ms": m.audio_generation_ms,
                "audio_duration_ms": m.audio_duration_ms,
                "rtf": m.rtf,
            }));
        }
    }
    out
}

/// `{count, mean, p50, p99}` with nearest-rank percentiles; `null` figures without samples.
pub(crate) fn summary(xs: &[f64]) -> Value {
    if xs.is_empty() {
        return json!({"count": 0, "mean": null, "p50": null, "p99": null});
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        let i = ((p / 100.0) * v.len() as f64).ceil() as usize;
        v[i.clamp(1, v.len()) - 1]
    };
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    json!({"count": v.len(), "mean": round3(mean), "p50": rank(50.0), "p99": rank(99.0)})
}

fn session_metrics(r: &RealtimeRecord) -> Value {
    let ms: Vec<_> = r.turns.iter().filter_map(|t| t.metrics.as_ref()).collect();
    let ttft: Vec<f64> = ms.iter().filter_map(|m| m.ttft_ms).collect();
    let ttfp: Vec<f64> = ms.iter().map(|m| m.ttfp_ms).collect();
    let rtf: Vec<f64> = ms.iter().map(|m| m.rtf).collect();
    json!({
        "session_id": r.duplex_session_id,
        "audio_turn_count": ms.len(),
        "ttft_ms": summary(&ttft),
        "ttfp_ms": summary(&ttfp),
        "rtf": summary(&rtf),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_summary() {
        let s = summary(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(s, json!({"count": 4, "mean": 2.5, "p50": 2.0, "p99": 4.0}));
        assert_eq!(summary(&[])["count"], 0);
    }

    #[test]
    fn block_insertion_keeps_order() {
        let mut d = Map::new();
        for k in ["a", "mean_e2el_ms", "b"] {
            d.insert(k.into(), Value::Null);
        }
        let d = insert_before(d, vec![("x".into(), Value::Null)], |k| k == "mean_e2el_ms");
        assert_eq!(
            d.keys().collect::<Vec<_>>(),
            ["a", "x", "mean_e2el_ms", "b"]
        );
    }
}
