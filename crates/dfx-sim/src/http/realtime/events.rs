//! Server events of the realtime protocol (`docs/simulator.md` ("Realtime")), as JSON.

use base64::Engine as _;
use serde_json::{Value, json};

/// `error {error:{type, code, message}}`.
pub(crate) fn error(code: &str, message: &str) -> Value {
    let kind = match code {
        "resource_exhausted" | "server_error" => "server_error",
        _ => "invalid_request_error",
    };
    json!({"type": "error", "error": {"type": kind, "code": code, "message": message}})
}

/// `session.created` for session `id`.
pub(crate) fn session_created(id: &str, model: &str) -> Value {
    json!({"type": "session.created", "session": {"id": id, "object": "realtime.session", "model": model}})
}

/// `session.updated` (a later `session.update` of an open session).
pub(crate) fn session_updated(id: &str) -> Value {
    json!({"type": "session.updated", "session": {"id": id}})
}

/// `response.created` for response `id`.
pub(crate) fn response_created(id: &str) -> Value {
    json!({"type": "response.created", "response_id": id,
           "response": {"id": id, "object": "realtime.response", "status": "in_progress"}})
}

/// One transcript delta.
pub(crate) fn transcript_delta(id: &str, delta: &str) -> Value {
    json!({"type": "response.output_audio_transcript.delta", "response_id": id,
           "item_id": format!("item_{id}"), "delta": delta})
}

/// One audio delta: base64 PCM16 mono, its rate, and the response's cumulative duration.
pub(crate) fn audio_delta(id: &str, pcm: &[u8], rate: u32, cumulative_ms: f64) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD.encode(pcm);
    json!({"type": "response.output_audio.delta", "response_id": id,
           "item_id": format!("item_{id}"), "delta": b64, "sample_rate_hz": rate,
           "metadata": {"audio_duration_ms": (cumulative_ms * 1000.0).round() / 1000.0}})
}

/// `response.done` for response `id`.
pub(crate) fn response_done(id: &str, transcript: &str) -> Value {
    json!({"type": "response.done", "response_id": id,
           "response": {"id": id, "object": "realtime.response", "status": "completed",
                        "output": [{"type": "message", "content": [{"type": "output_audio", "transcript": transcript}]}]}})
}

/// `session.closed`.
pub(crate) fn session_closed(id: &str) -> Value {
    json!({"type": "session.closed", "session": {"id": id}})
}

/// `input_audio_buffer.committed` (native duplex: the user's turn ended).
pub(crate) fn committed(item_id: &str) -> Value {
    json!({"type": "input_audio_buffer.committed", "item_id": item_id})
}

/// One transcript delta of a native-duplex response (the name vllm-omni's MiniCPM-o
/// duplex driver reads).
pub(crate) fn native_transcript_delta(id: &str, delta: &str) -> Value {
    json!({"type": "response.audio_transcript.delta", "response_id": id,
           "item_id": format!("item_{id}"), "delta": delta})
}

/// One audio delta of a native-duplex response: `response.audio.delta`, marked as
/// model-spoken, with the response's cumulative duration.
pub(crate) fn native_audio_delta(id: &str, pcm: &[u8], rate: u32, cumulative_ms: f64) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD.encode(pcm);
    json!({"type": "response.audio.delta", "response_id": id,
           "item_id": format!("item_{id}"), "delta": b64, "sample_rate_hz": rate,
           "metadata": {"model_speak": true,
                        "audio_duration_ms": (cumulative_ms * 1000.0).round() / 1000.0}})
}

/// The end of a native-duplex response's audio and transcript.
pub(crate) fn native_audio_done(id: &str, transcript: &str) -> [Value; 2] {
    [
        json!({"type": "response.audio.done", "response_id": id, "item_id": format!("item_{id}")}),
        json!({"type": "response.audio_transcript.done", "response_id": id,
               "item_id": format!("item_{id}"), "transcript": transcript}),
    ]
}

/// `response.done` of a native-duplex response, with the audio sent for playback
/// (`response.metadata.playback.sent_ms`, which the client acknowledges).
pub(crate) fn native_response_done(id: &str, transcript: &str, sent_ms: u64) -> Value {
    let mut v = response_done(id, transcript);
    v["response"]["metadata"] = json!({"playback": {"sent_ms": sent_ms}});
    v
}

/// `playback.acknowledged`: the played part of `item_id` entered the history.
pub(crate) fn playback_acknowledged(item_id: &str, played_ms: u64) -> Value {
    json!({"type": "playback.acknowledged",
           "event": {"item_id": item_id, "played_ms": played_ms, "history_committed": true}})
}
