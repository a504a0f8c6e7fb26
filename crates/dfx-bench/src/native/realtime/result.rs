//! The realtime result document: the TTS document of the same requests
//! ([`crate::native::aggregate::result_doc`]) with the realtime differences — output
//! tokens and throughputs, the TTFT block (when selected and tokens > 0), and with
//! `save_duplex_request_metrics` the `duplex_request_metrics` / `duplex_session_metrics`
//! lists after `num_audio_rtf_samples`; with `goodput`, goodput and SLO attainment per
//! session.

use serde_json::{Map, Value, json};

use dfx_core::result::ResultDoc;

use dfx_core::plan::GoodputSpec;

use super::metrics::{RealtimeRecord, TurnRecord, round3};
use crate::metrics::goodput::{Goodput, SloValues};
use crate::metrics::throughput;
use crate::native::aggregate::{self, StepFacts};
use crate::native::keys::{self, num};
use crate::native::record::RequestRecord;
use crate::native::selection::Selection;
use crate::native::stats::Sorted;

/// What the realtime document needs besides the records.
#[derive(Debug, Clone)]
pub(crate) struct RealtimeFacts {
    /// `percentile-metrics` contains `ttft`.
    pub ttft_selected: bool,
    /// `extra_body.save_duplex_request_metrics` is true.
    pub save_duplex: bool,
    /// The entry's `goodput` SLOs, counted per session ([`session_slo_values`]).
    pub goodput: Option<GoodputSpec>,
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
    // Last, as the speech document: `request_goodput` in vllm's place, then dfx-perf's
    // `slo_attainment`.
    let goodput = (rf.goodput.as_ref())
        .map(|g| Goodput::count_sessions(g, recs.iter().map(session_slo_values)));
    keys::put_goodput(&mut d, goodput, duration);
    d
}

/// A session (a benchmark request: a user) for the `goodput` SLOs: `None` when it
/// failed, else each turn's own figures, so the session is good when every turn met
/// every SLO. A turn's e2el is its end − its start (connect, handshake, silence, close):
/// with one turn per session, the session's E2EL.
fn session_slo_values(r: &RealtimeRecord) -> Option<Vec<SloValues>> {
    r.base
        .end
        .ok
        .then(|| r.turns.iter().map(turn_slo_values).collect())
}

fn turn_slo_values(t: &TurnRecord) -> SloValues {
    let Some(m) = &t.metrics else {
        return SloValues::default();
    };
    SloValues {
        ttft_ms: m.ttft_ms,
        // No inter-token times on the realtime path (refused at preflight).
        tpot_ms: None,
        e2el_ms: Some((t.end_s - t.start_s) * 1000.0),
        audio_ttfp_ms: Some(m.ttfp_ms),
        audio_rtf: Some(m.rtf),
        underrun_ms: m.underrun_ms,
    }
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

    use std::time::{Duration, Instant};

    use crate::native::realtime::metrics::{TurnMetrics, request_record};
    use crate::native::record::{Dispatch, Sample};

    fn turn(i: usize, (start_s, end_s): (f64, f64), ttfp_ms: f64, ok: bool) -> TurnRecord {
        let m = TurnMetrics {
            response_id: "r".into(),
            source: "client".into(),
            measurement_origin: "turn_start".into(),
            ttft_ms: None,
            ttfp_ms,
            audio_generation_ms: 500.0,
            audio_duration_ms: 1000.0,
            rtf: 0.5,
            underrun_ms: Some(0.0),
            output_tokens: 3,
            transcript: "a b c".into(),
        };
        TurnRecord {
            turn: i,
            utterance_id: format!("u{i}"),
            session_id: None,
            attempts: 1,
            connect_s: 0.0,
            start_s,
            turn_start_s: Some(start_s),
            appends: 1,
            end_s,
            closed: true,
            ok,
            error_class: (!ok).then(|| "timeout".into()),
            error: (!ok).then(|| "late".into()),
            metrics: ok.then_some(m),
            audio_t_s: Vec::new(),
            audio_bytes: Vec::new(),
        }
    }

    fn session(turns: Vec<TurnRecord>) -> RealtimeRecord {
        let now = Instant::now();
        let d = Dispatch {
            index: 0,
            warmup: false,
            planned: now,
            dispatched: now,
            slot: now,
            saturated: None,
        };
        let sample = Sample {
            request_id: Some("r-0".into()),
            sample_id: "s".into(),
            text_len: 1,
            quality: None,
        };
        let span = (now, now + Duration::from_secs(2));
        request_record(&d, sample, "s".into(), turns, Default::default(), span, now)
    }

    /// Hand-made: two turns, 0.0–0.8 s (TTFP 100 ms) and 0.8–1.9 s (TTFP 120 ms). Each
    /// turn's e2el is its own span (800 and 1100 ms), not the session's 2 s; a session
    /// is good when every turn is: `e2el:1000` misses on the second turn although the
    /// turns' mean is 950 ms, `audio_ttfp:120` holds (the bound meets it). A session with
    /// a failed turn is a failure.
    #[test]
    fn a_session_is_read_turn_by_turn() {
        let good = session(vec![
            turn(0, (0.0, 0.8), 100.0, true),
            turn(1, (0.8, 1.9), 120.0, true),
        ]);
        let v = session_slo_values(&good).unwrap();
        let e2el: Vec<f64> = v.iter().map(|t| t.e2el_ms.unwrap()).collect();
        assert!(
            (e2el[0] - 800.0).abs() < 1e-9 && (e2el[1] - 1100.0).abs() < 1e-9,
            "{e2el:?}"
        );
        assert_eq!(v[0].tpot_ms, None, "no inter-token times");
        let failed = session(vec![
            turn(0, (0.0, 0.8), 100.0, true),
            turn(1, (0.8, 9.0), 0.0, false),
        ]);
        assert!(session_slo_values(&failed).is_none());
        let count = |slos: &str| {
            let spec = GoodputSpec::parse(&json!(slos)).unwrap();
            Goodput::count_sessions(&spec, [&good, &failed].into_iter().map(session_slo_values))
        };
        assert_eq!(
            count("e2el:1000"),
            Goodput {
                good: 0,
                measured: 2
            }
        );
        assert_eq!(
            count("e2el:1100 audio_ttfp:120"),
            Goodput {
                good: 1,
                measured: 2
            }
        );
        assert_eq!(
            count("audio_ttfp:119.9"),
            Goodput {
                good: 0,
                measured: 2
            }
        );
        // The turns have no TTFT: a `ttft` SLO is not met.
        assert_eq!(
            count("ttft:100000"),
            Goodput {
                good: 0,
                measured: 2
            }
        );
    }

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
