//! The audio deltas read without a `Value` (`conn::Reader`, `on_audio`) leave a turn's
//! outcome exactly as the `Value` path (`on_event`, the reference) leaves it.

use std::collections::HashSet;

use base64::Engine as _;
use serde_json::{Value, json};

use super::*;
use crate::native::realtime::conn::Reader;

/// A delta of `samples` samples of a sine (so the PCM analysis has a level and an onset).
fn delta(rid: &str, samples: usize, phase: usize, extra: Value) -> String {
    let pcm: Vec<u8> = (0..samples)
        .flat_map(|i| {
            let x = ((i + phase) as f64 * 0.05).sin() * 9000.0 * (phase as f64 / 5000.0).min(1.0);
            (x as i16).to_le_bytes()
        })
        .collect();
    let mut v = json!({"type": "response.output_audio.delta", "response_id": rid,
        "delta": base64::engine::general_purpose::STANDARD.encode(pcm)});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v.to_string()
}

/// The events of one turn: two responses, rates, metadata, a repeated seq, bad and empty
/// audio, an unknown response, escaped base64, and deltas the quick reading leaves alone.
fn script() -> Vec<String> {
    let mut t = vec![
        json!({"type": "response.created", "response_id": "r1"}).to_string(),
        json!({"type": "response.created", "response": {"id": "r2"}}).to_string(),
        delta("r1", 2400, 0, json!({"sample_rate_hz": 16000, "server_event_seq": 1,
            "metadata": {"audio_duration_ms": 150}})),
        delta("r1", 2400, 0, json!({"server_event_seq": 1})),
        delta("r1", 1201, 2400, json!({"sample_rate_hz": 8000, "metadata": {"audio_duration_ms": 240.5}})),
        json!({"type": "response.output_audio.delta", "response_id": "r1", "delta": "!!notb64"}).to_string(),
        json!({"type": "response.output_audio.delta", "response_id": "r1", "delta": "",
            "metadata": {"audio_duration_ms": 900}}).to_string(),
        delta("r9", 100, 0, json!({})),
        delta("r2", 4800, 7, json!({"metadata": {"response_request_metrics": {"ttft_ms": 12.5}}})),
        delta("r2", 960, 4807, json!({"vllm_omni": {"response_request_metrics": {"ttft_ms": 9}}})),
        json!({"type": "response.output_audio_transcript.delta", "response_id": "r2", "delta": "two words"}).to_string(),
        "not json".into(),
        json!({"type": "response.done", "response_id": "r1"}).to_string(),
    ];
    let escaped = delta("r2", 480, 5767, json!({})).replace('/', "\\/");
    assert!(escaped.contains("\\/"), "the script has an escaped delta");
    t.insert(10, escaped);
    t
}

/// `out`'s observable figures (times excepted: the two paths read at different moments).
fn figures(out: &TurnOutcome) -> String {
    let rs: Vec<String> = out
        .responses
        .iter()
        .map(|r| {
            let deltas: Vec<u64> = r.deltas.iter().map(|d| d.1).collect();
            format!(
                "{} bytes {} rate {} meta {:?} deltas {deltas:?} audio {} text {:?} {} done {} pcm {:?}",
                r.id, r.bytes, r.rate, r.meta_ms, r.first_audio.is_some() && r.last_audio.is_some(),
                r.transcript, r.first_text.is_some(), r.done, r.pcm.finish()
            )
        })
        .collect();
    format!(
        "{rs:#?} ttft {:?} origin {:?} tokens {:?} error {:?}",
        out.server_ttft_ms, out.measurement_origin, out.stage_tokens, out.error
    )
}

#[test]
fn quick_audio_deltas_leave_the_outcome_of_the_value_path() {
    let lim = TurnLimits::default();
    let (mut quick, mut reference) = (
        TurnOutcome::begin(Instant::now()),
        TurnOutcome::begin(Instant::now()),
    );
    let (mut rd, mut seen) = (Reader::default(), HashSet::new());
    let mut quick_reads = 0;
    for text in script() {
        match rd.read(&text) {
            Some(Ev::Json(v)) => {
                on_event(&v, &lim, &mut quick);
            }
            Some(Ev::Audio(a)) => {
                quick_reads += 1;
                on_audio(&a, &rd.pcm, &lim, &mut quick);
            }
            Some(Ev::Ended(_)) | None => {}
        }
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if let Some(seq) = v.get("server_event_seq").and_then(Value::as_u64)
            && !seen.insert(seq)
        {
            continue;
        }
        on_event(&v, &lim, &mut reference);
    }
    assert_eq!(quick_reads, 6, "the plain deltas were read without a Value");
    assert!(reference.responses[0].bytes > 0 && reference.server_ttft_ms.is_some());
    assert_eq!(figures(&quick), figures(&reference));
}
