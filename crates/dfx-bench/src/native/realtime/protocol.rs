//! Client events of the realtime protocol (`docs/bench.md` ("Realtime")), and the few
//! server-event fields the client reads.

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// Input sample rate of the silence the client streams, Hz.
pub(crate) const INPUT_RATE_HZ: u32 = 16_000;
/// Output sample rate the client asks for (and assumes when a delta names none), Hz.
pub(crate) const OUTPUT_RATE_HZ: u32 = 24_000;
/// Milliseconds of silence per append.
pub(crate) const APPEND_MS: u64 = 200;
/// Bytes of one append: 200 ms of 16 kHz PCM16 mono.
pub(crate) const APPEND_BYTES: usize = 6400;

/// `evt_<32 hex>`: unique within the process (a counter mixed with the start time).
pub(crate) fn event_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static SALT: OnceLock<u64> = OnceLock::new();
    let salt = *SALT.get_or_init(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        t ^ (u64::from(std::process::id()) << 40)
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mix = |x: u64| {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    format!(
        "evt_{:016x}{:016x}",
        mix(salt ^ n),
        mix(n.wrapping_add(salt.rotate_left(17)))
    )
}

/// Sets `event_id` last and returns the event's text.
pub(crate) fn with_event_id(mut v: Map<String, Value>) -> String {
    v.insert("event_id".into(), Value::from(event_id()));
    Value::Object(v).to_string()
}

/// A client event serialized once, sent many times with a new event id each
/// ([`with_event_id`]'s text, without copying and escaping the event again: a
/// `session.update` holds the reference clip, an append 8.5 KB of silence).
#[derive(Debug, Clone)]
pub(crate) struct EventText(Head);

#[derive(Debug, Clone)]
enum Head {
    /// The text up to its closing brace, without `event_id`.
    Open(String),
    /// An event that names its own `event_id` keeps that key's place: built per send.
    Keyed(Map<String, Value>),
}

impl EventText {
    /// `v` (without an event id, else that key keeps its place).
    pub(crate) fn new(v: Map<String, Value>) -> Self {
        if v.is_empty() || v.contains_key("event_id") {
            return EventText(Head::Keyed(v));
        }
        let mut text = Value::Object(v).to_string();
        text.pop(); // the closing brace
        EventText(Head::Open(text))
    }

    /// The event's text with a new `event_id` last, as [`with_event_id`] writes it.
    pub(crate) fn with_event_id(&self) -> String {
        match &self.0 {
            Head::Open(head) => {
                let mut s = String::with_capacity(head.len() + 48);
                s.push_str(head);
                close_with_event_id(s)
            }
            Head::Keyed(v) => with_event_id(v.clone()),
        }
    }
}

/// The `session` object of `session.update`, keys in upstream order.
pub(crate) fn session_object(
    model: &str,
    instructions: &str,
    extra_body: Map<String, Value>,
) -> Value {
    let mut s = Map::new();
    s.insert("model".into(), Value::from(model));
    s.insert("modalities".into(), json!(["audio", "text"]));
    s.insert("input_audio_format".into(), Value::from("pcm16"));
    s.insert("output_audio_format".into(), Value::from("pcm16"));
    s.insert("sample_rate_hz".into(), Value::from(INPUT_RATE_HZ));
    s.insert(
        "audio".into(),
        json!({"input": {"sample_rate_hz": INPUT_RATE_HZ}, "output": {"sample_rate_hz": OUTPUT_RATE_HZ}}),
    );
    s.insert("turn_detection".into(), Value::Null);
    s.insert("instructions".into(), Value::from(instructions));
    s.insert("overlap_policy".into(), Value::from("listen_only"));
    s.insert("playback_commit_policy".into(), Value::from("ack_only"));
    s.insert("extra_body".into(), Value::Object(extra_body));
    Value::Object(s)
}

/// `session.update` without its event id.
pub(crate) fn session_update(session: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("session.update"));
    m.insert("session".into(), session.clone());
    m
}

/// The `n`-th append (1-based): `audio_end_ms` = n × 200. Its text up to that value is
/// built once (the 8.5 KB of silence are neither copied into a map nor escaped per append).
pub(crate) fn append(n: u64) -> String {
    static HEAD: OnceLock<String> = OnceLock::new();
    let head = HEAD.get_or_init(|| {
        let mut text = append_map(0).to_string();
        let at = text
            .rfind("0,\"is_speech\"")
            .expect("audio_end_ms precedes is_speech");
        text.truncate(at);
        text
    });
    let mut s = String::with_capacity(head.len() + 80);
    s.push_str(head);
    let _ = write!(s, "{},\"is_speech\":false", n.saturating_mul(APPEND_MS));
    close_with_event_id(s)
}

/// `text` (an object's text without its closing brace) with a new `event_id` as its last
/// key, closed: [`with_event_id`]'s text without a `Value` (an id is `evt_` and hex digits,
/// nothing to escape).
fn close_with_event_id(mut text: String) -> String {
    text.push_str(",\"event_id\":\"");
    text.push_str(&event_id());
    text.push_str("\"}");
    text
}

/// The `n`-th append without its event id, as a JSON object (keys in upstream order).
fn append_map(n: u64) -> Value {
    let silence = base64::engine::general_purpose::STANDARD.encode([0u8; APPEND_BYTES]);
    json!({
        "type": "input_audio_buffer.append",
        "audio": silence,
        "format": "pcm16",
        "sample_rate_hz": INPUT_RATE_HZ,
        "duration_ms": APPEND_MS,
        "audio_end_ms": n.saturating_mul(APPEND_MS),
        "is_speech": false,
    })
}

/// `playback.ack` of a response whose audio lasted `played_ms`.
pub(crate) fn playback_ack(response_id: &str, played_ms: u64) -> String {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("playback.ack"));
    m.insert("response_id".into(), Value::from(response_id));
    m.insert("item_id".into(), Value::from(format!("item_{response_id}")));
    m.insert("played_ms".into(), Value::from(played_ms));
    m.insert("committed_ms".into(), Value::from(played_ms));
    with_event_id(m)
}

/// `session.event_ack` (no event id).
pub(crate) fn event_ack(seq: u64) -> String {
    json!({"type": "session.event_ack", "server_event_seq": seq}).to_string()
}

/// `session.close`.
pub(crate) fn session_close() -> String {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("session.close"));
    with_event_id(m)
}

/// The response id of a server event: top-level `response_id`, else `response.id`.
pub(crate) fn response_id(v: &Value) -> Option<&str> {
    v.get("response_id")
        .and_then(Value::as_str)
        .or_else(|| v.get("response")?.get("id")?.as_str())
}

/// `error.code` and `error.message` of an `error` event.
pub(crate) fn error_of(v: &Value) -> (String, String) {
    let e = v.get("error");
    let s = |k: &str| {
        e.and_then(|e| e.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .take(300)
            .collect::<String>()
    };
    (s("code"), s("message"))
}

/// Server timing `response_request_metrics` (top level, `metadata` or `vllm_omni`).
pub(crate) fn request_metrics(v: &Value) -> Option<&Value> {
    v.get("response_request_metrics")
        .or_else(|| v.get("metadata")?.get("response_request_metrics"))
        .or_else(|| v.get("vllm_omni")?.get("response_request_metrics"))
}

/// Stage-0 `num_tokens_out` from stage metrics under `vllm_omni.stage_metrics`,
/// `metadata.stage_metrics` or `response.metadata.stage_metrics` (an object keyed by stage
/// id, `"0"` or `"stage_0"`, or a list of objects with `stage_id`).
pub(crate) fn stage0_tokens(v: &Value) -> Option<u64> {
    let sm = v
        .get("vllm_omni")
        .and_then(|x| x.get("stage_metrics"))
        .or_else(|| v.get("metadata")?.get("stage_metrics"))
        .or_else(|| v.get("response")?.get("metadata")?.get("stage_metrics"))?;
    let stage = match sm {
        Value::Object(m) => m.get("0").or_else(|| m.get("stage_0")),
        Value::Array(a) => a.iter().find(|s| {
            s.get("stage_id")
                .or_else(|| s.get("stage"))
                .and_then(Value::as_u64)
                == Some(0)
        }),
        _ => None,
    }?;
    stage.get("num_tokens_out")?.as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_have_upstream_shapes() {
        let id = event_id();
        assert!(id.starts_with("evt_") && id.len() == 36, "{id}");
        assert_ne!(event_id(), event_id());
        let s = session_object("m", "sys", Map::new());
        let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "model",
                "modalities",
                "input_audio_format",
                "output_audio_format",
                "sample_rate_hz",
                "audio",
                "turn_detection",
                "instructions",
                "overlap_policy",
                "playback_commit_policy",
                "extra_body"
            ]
        );
        for n in [1, 3, 150, u64::MAX] {
            let text = append(n);
            let mut want = append_map(n).as_object().unwrap().clone();
            let id = serde_json::from_str::<Value>(&text).unwrap()["event_id"].clone();
            want.insert("event_id".into(), id);
            assert_eq!(text, Value::Object(want).to_string(), "append {n}");
        }
        let a: Value = serde_json::from_str(&append(3)).unwrap();
        assert_eq!(a["audio_end_ms"], 600);
        assert_eq!(a["audio"].as_str().unwrap().len(), 8536);
        let ack: Value = serde_json::from_str(&event_ack(7)).unwrap();
        assert!(ack.get("event_id").is_none());
        let p: Value = serde_json::from_str(&playback_ack("r1", 1500)).unwrap();
        assert_eq!(p["item_id"], "item_r1");
        assert_eq!(p["committed_ms"], 1500);
    }

    /// The id of an event's text, and the text with `id` in its place.
    fn with_id(text: &str, id: &str) -> String {
        let v: Value = serde_json::from_str(text).unwrap();
        let own = v["event_id"].as_str().unwrap();
        assert!(own.starts_with("evt_"), "{text}");
        text.replace(own, id)
    }

    #[test]
    fn event_text_is_with_event_id_text() {
        let update = session_update(&session_object("m", "say \"hi\"\n", Map::new()));
        let keyed = json!({"type": "x", "event_id": "mine", "z": 1});
        let cases = [update, keyed.as_object().unwrap().clone(), Map::new()];
        for m in cases {
            let want = with_id(&with_event_id(m.clone()), "evt_0");
            assert_eq!(with_id(&EventText::new(m).with_event_id(), "evt_0"), want);
        }
    }

    #[test]
    fn server_fields() {
        let v = json!({"response": {"id": "r2"}});
        assert_eq!(response_id(&v), Some("r2"));
        let v = json!({"vllm_omni": {"stage_metrics": {"0": {"num_tokens_out": 12}}}});
        assert_eq!(stage0_tokens(&v), Some(12));
        let v = json!({"metadata": {"stage_metrics": [{"stage_id": 1, "num_tokens_out": 3}, {"stage_id": 0, "num_tokens_out": 4}]}});
        assert_eq!(stage0_tokens(&v), Some(4));
        assert_eq!(
            error_of(&json!({"error": {"code": "x", "message": "y"}})),
            ("x".into(), "y".into())
        );
    }
}
