//! Client events of upstream's native-duplex workload (`docs/bench.md` ("Native duplex")),
//! as vllm-omni's MiniCPM-o 4.5 duplex scenario driver sends them
//! (`tests/e2e/online_serving/helpers/minicpmo_realtime_duplex_scenarios.py`,
//! `vllm_omni/experimental/fullduplex/client.py`), and the input clip.

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// Input sample rate (upstream's `PCM16_SAMPLE_RATE`), Hz.
pub(crate) const INPUT_RATE_HZ: u32 = 16_000;
/// Output rate assumed until a delta names its own (upstream's collector default), Hz.
pub(crate) const OUTPUT_RATE_HZ: u32 = 24_000;
/// Input audio per append (upstream's `chunk_ms`), ms.
pub(crate) const CHUNK_MS: u64 = 200;
/// Input audio per turn (upstream's `first_turn_ms`, every turn of the benchmark), ms.
pub(crate) const TURN_MS: u64 = 1400;
/// `overlap_short_ack_ms` of the session (upstream's `short_ack_ms`).
pub(crate) const SHORT_ACK_MS: u64 = 350;

/// `ws://host:port/v1/realtime?duplex=1&model=M&minicpmo45_native_duplex=1&session_id=S`
/// (upstream's `build_realtime_url`; `autostart=0` only with a reference clip, which
/// dfx-perf does not send).
pub(crate) fn session_url(host: &str, port: u16, model: &str, session_id: &str) -> String {
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    format!(
        "ws://{host}:{port}/v1/realtime?duplex=1&model={}&minicpmo45_native_duplex=1&session_id={}",
        enc(model),
        enc(session_id)
    )
}

/// `session.update` of a native-duplex session (upstream's `_session_update_event` in
/// response-required mode: temperature 0).
pub(crate) fn session_update(model: &str, session_id: &str) -> String {
    json!({
        "type": "session.update",
        "session": {
            "model": model,
            "modalities": ["audio", "text"],
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "turn_detection": null,
            "overlap_policy": "listen_only",
            "overlap_short_ack_ms": SHORT_ACK_MS,
            "playback_commit_policy": "ack_only",
            "extra_body": {
                "auto_response": true,
                "minicpmo45_native_duplex": true,
                "force_listen_count": 0
            },
            "temperature": 0.0,
            "session_id": session_id
        }
    })
    .to_string()
}

/// One `input_audio_buffer.append` of `chunk` (PCM16 at 16 kHz); `audio_end_ms` counts
/// from the start of the turn.
pub(crate) fn append(chunk: &[u8], duration_ms: u64, audio_end_ms: u64) -> String {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("input_audio_buffer.append"));
    m.insert(
        "audio".into(),
        Value::from(base64::engine::general_purpose::STANDARD.encode(chunk)),
    );
    m.insert("input_audio_format".into(), Value::from("pcm16"));
    m.insert("sample_rate_hz".into(), Value::from(INPUT_RATE_HZ));
    m.insert("duration_ms".into(), Value::from(duration_ms));
    m.insert("audio_end_ms".into(), Value::from(audio_end_ms));
    Value::Object(m).to_string()
}

/// `input_audio_buffer.commit` with `final: true`: the end of the user's turn.
pub(crate) fn commit() -> String {
    json!({"type": "input_audio_buffer.commit", "final": true}).to_string()
}

/// `playback.ack` of `played_ms` of a response (upstream acks `sent_ms` of the response's
/// `response.done` playback metadata).
pub(crate) fn playback_ack(response_id: &str, played_ms: u64) -> String {
    json!({"type": "playback.ack", "response_id": response_id,
           "item_id": format!("item_{response_id}"),
           "played_ms": played_ms, "committed_ms": played_ms})
    .to_string()
}

/// `session.close`.
pub(crate) fn session_close() -> String {
    json!({"type": "session.close"}).to_string()
}

/// The audio payload of an audio delta (`delta`, else `audio`), decoded length in bytes.
pub(crate) fn audio_delta_bytes(v: &Value) -> Option<usize> {
    let s = v
        .get("delta")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or_else(|| v.get("audio").and_then(Value::as_str))?;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .ok()
        .map(|b| b.len())
}

/// Whether `kind` is an audio delta event (`response.audio.delta`, the name upstream's
/// duplex driver reads, or the OpenAI GA name `response.output_audio.delta`).
pub(crate) fn is_audio_delta(kind: &str) -> bool {
    matches!(kind, "response.audio.delta" | "response.output_audio.delta")
}

/// Whether `kind` is a text or transcript delta (upstream's collector set, plus the GA
/// transcript name).
pub(crate) fn is_text_delta(kind: &str) -> bool {
    matches!(
        kind,
        "response.audio_transcript.delta"
            | "response.output_audio_transcript.delta"
            | "response.output_text.delta"
            | "response.text.delta"
    )
}

/// `response.metadata.playback.sent_ms` of a `response.done` (else top-level `playback`).
pub(crate) fn playback_sent_ms(v: &Value) -> Option<u64> {
    let p = v
        .get("response")
        .and_then(|r| r.get("metadata"))
        .and_then(|m| m.get("playback"))
        .or_else(|| v.get("playback"))?;
    let ms = p.get("sent_ms")?.as_f64()?;
    (ms.is_finite() && ms > 0.0).then_some(ms as u64)
}

/// Whether a `playback.acknowledged` event committed `response_id`'s history.
pub(crate) fn history_committed(v: &Value, response_id: &str) -> bool {
    let e = v.get("event");
    e.and_then(|e| e.get("item_id")).and_then(Value::as_str) == Some(&format!("item_{response_id}"))
        && e.and_then(|e| e.get("history_committed"))
            .and_then(Value::as_bool)
            == Some(true)
}

/// The user's turn: [`TURN_MS`] of a speech-like 16 kHz PCM16 signal (a voiced tone with
/// a syllable envelope; upstream streams the 1.4 s loudest slice of a fixed recording,
/// `response_required_16k.wav`, which dfx-perf does not ship).
pub(crate) fn turn_clip() -> Vec<u8> {
    let n = (u64::from(INPUT_RATE_HZ) * TURN_MS / 1000) as usize;
    let rate = f64::from(INPUT_RATE_HZ);
    (0..n)
        .flat_map(|i| {
            let t = i as f64 / rate;
            let envelope = (std::f64::consts::PI * t * 4.0).sin().abs();
            let voiced = (2.0 * std::f64::consts::PI * 140.0 * t).sin()
                + 0.5 * (2.0 * std::f64::consts::PI * 280.0 * t).sin()
                + 0.25 * (2.0 * std::f64::consts::PI * 700.0 * t).sin();
            ((voiced * envelope * 6000.0) as i16).to_le_bytes()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_have_upstream_shapes() {
        let u = session_url("127.0.0.1", 9, "openbmb/MiniCPM-o-4_5", "multi-0-ab");
        assert_eq!(
            u,
            "ws://127.0.0.1:9/v1/realtime?duplex=1&model=openbmb%2FMiniCPM-o-4_5&minicpmo45_native_duplex=1&session_id=multi-0-ab"
        );
        let s: Value = serde_json::from_str(&session_update("m", "s1")).unwrap();
        assert_eq!(s["session"]["extra_body"]["minicpmo45_native_duplex"], true);
        assert_eq!(s["session"]["session_id"], "s1");
        let a: Value = serde_json::from_str(&append(&[0u8; 6400], 200, 400)).unwrap();
        assert_eq!(a["audio_end_ms"], 400);
        assert_eq!(audio_delta_bytes(&json!({"delta": a["audio"]})), Some(6400));
        assert_eq!(turn_clip().len(), 44_800);
        let done = json!({"response": {"metadata": {"playback": {"sent_ms": 1500}}}});
        assert_eq!(playback_sent_ms(&done), Some(1500));
        let ack = json!({"type": "playback.acknowledged",
                         "event": {"item_id": "item_r1", "history_committed": true}});
        assert!(history_committed(&ack, "r1") && !history_committed(&ack, "r2"));
    }
}
