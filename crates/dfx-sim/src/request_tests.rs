use super::*;
use crate::profile::{by_name, for_model};
use serde_json::json;

const WAV_B64: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAwF0AAIC7AAACABAAZGF0YQAAAAA=";

fn wav_url() -> String {
    format!("data:audio/wav;base64,{WAV_B64}")
}

fn parse_with(model: &str, body: Value, uploaded: Option<bool>) -> Result<SpeechRequest, ApiError> {
    let profile = for_model(model);
    let names = vec![model.to_string()];
    let lookup = move |v: &str| if v == "alice" { uploaded } else { None };
    let ctx = Context {
        profile: &profile,
        model_names: &names,
        uploaded: &lookup,
    };
    parse(body.to_string().as_bytes(), &ctx)
}

const BASE: &str = "Qwen/Qwen3-TTS-12Hz-1.7B-Base";
const CV: &str = "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice";

fn ok(model: &str, body: Value) -> SpeechRequest {
    parse_with(model, body, None).unwrap()
}

#[test]
fn bench_bodies_are_accepted() {
    let r = ok(
        BASE,
        json!({"model": BASE, "input": "Hello there.", "stream": true, "stream_format": "audio",
        "response_format": "pcm", "seed": 1, "ref_audio": wav_url(), "ref_text": "hello reference",
        "task_type": "Base", "language": "English", "max_new_tokens": 2048}),
    );
    assert_eq!(
        (r.task, r.format, r.delivery),
        (Task::Base, Format::Pcm, Delivery::Audio)
    );
    assert!(r.clone && r.in_context);
    let r = ok(
        CV,
        json!({"model": CV, "input": "Hi.", "stream": true, "stream_format": "audio",
        "response_format": "pcm", "voice": "Vivian", "task_type": "CustomVoice", "language": "English"}),
    );
    assert_eq!(
        (r.task, r.voice.as_deref()),
        (Task::CustomVoice, Some("Vivian"))
    );
    let r = ok(
        CV,
        json!({"input": "Hi.", "task_type": "VoiceDesign", "instructions": "a calm low voice"}),
    );
    assert_eq!(
        (r.task, r.format, r.delivery),
        (Task::VoiceDesign, Format::Wav, Delivery::Whole)
    );
    let r = ok(
        "mistralai/Voxtral-4B-TTS-2603",
        json!({"input": "Hi.", "voice": "casual_male", "stream": true}),
    );
    assert_eq!(r.delivery, Delivery::Sse);
}

#[test]
fn task_inference() {
    assert_eq!(
        ok(
            BASE,
            json!({"input": "x", "ref_audio": wav_url(), "ref_text": "y"})
        )
        .task,
        Task::Base
    );
    assert_eq!(ok(CV, json!({"input": "x"})).task, Task::CustomVoice);
    assert_eq!(
        ok(CV, json!({"input": "x"})).voice.as_deref(),
        Some("vivian")
    );
    let vd = "Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign";
    assert_eq!(
        ok(vd, json!({"input": "x", "instructions": "deep"})).task,
        Task::VoiceDesign
    );
    let r = parse_with(
        BASE,
        json!({"input": "x", "voice": "alice", "task_type": "CustomVoice"}),
        Some(true),
    )
    .unwrap();
    assert_eq!(r.task, Task::Base, "uploaded voices select Base");
    assert!(r.in_context);
    let r = parse_with(BASE, json!({"input": "x", "voice": "alice"}), Some(false)).unwrap();
    assert!(
        r.clone && !r.in_context,
        "an upload without transcript is x-vector only"
    );
}

fn param(e: &ApiError) -> Option<&str> {
    e.param.as_deref()
}

#[test]
fn invalid_requests_get_400_with_param() {
    let cases: Vec<(&str, Value, Option<&str>, &str)> = vec![
        (CV, json!({}), Some("input"), "required"),
        (CV, json!({"input": ""}), Some("input"), "empty"),
        (CV, json!({"input": "   "}), Some("input"), "empty"),
        (CV, json!({"input": 42}), Some("input"), "must be a string"),
        (
            CV,
            json!({"input": "x".repeat(MAX_INPUT_CHARS + 1)}),
            Some("input"),
            "limit",
        ),
        (
            CV,
            json!({"input": "x", "stream": "yes"}),
            Some("stream"),
            "boolean",
        ),
        (
            CV,
            json!({"input": "x", "voice": 3}),
            Some("voice"),
            "string",
        ),
        (
            CV,
            json!({"input": "x", "speed": "fast"}),
            Some("speed"),
            "number",
        ),
        (
            CV,
            json!({"input": "x", "speed": 5.0}),
            Some("speed"),
            "between",
        ),
        (
            CV,
            json!({"input": "x", "speed": 0.1}),
            Some("speed"),
            "between",
        ),
        (
            CV,
            json!({"input": "x", "speed": 2.0, "stream_format": "audio", "response_format": "pcm"}),
            Some("speed"),
            "Streaming",
        ),
        (
            CV,
            json!({"input": "x", "task_type": "Clone"}),
            Some("task_type"),
            "Unknown task_type",
        ),
        (
            CV,
            json!({"input": "x", "response_format": "ogg"}),
            Some("response_format"),
            "Unknown response_format",
        ),
        (
            CV,
            json!({"input": "x", "response_format": "mp3"}),
            Some("response_format"),
            "pcm",
        ),
        (
            CV,
            json!({"input": "x", "stream_format": "video"}),
            Some("stream_format"),
            "accepted",
        ),
        (
            CV,
            json!({"input": "x", "voice": "nobody"}),
            Some("voice"),
            "Unknown voice",
        ),
        (
            CV,
            json!({"input": "x", "language": "Klingon"}),
            Some("language"),
            "Unsupported language",
        ),
        (
            CV,
            json!({"input": "x", "task_type": "VoiceDesign"}),
            Some("instructions"),
            "instructions",
        ),
        (
            CV,
            json!({"input": "x", "max_new_tokens": 0}),
            Some("max_new_tokens"),
            "positive",
        ),
        (
            CV,
            json!({"input": "x", "max_new_tokens": 1.5}),
            Some("max_new_tokens"),
            "positive",
        ),
        (
            CV,
            json!({"input": "x", "task_type": "Base", "ref_audio": wav_url(), "ref_text": "y"}),
            Some("task_type"),
            "CustomVoice checkpoint",
        ),
        (
            BASE,
            json!({"input": "x", "task_type": "CustomVoice", "voice": "vivian"}),
            Some("task_type"),
            "Base checkpoint",
        ),
        (
            BASE,
            json!({"input": "x"}),
            Some("ref_audio"),
            "requires `ref_audio`",
        ),
        (
            BASE,
            json!({"input": "x", "ref_audio": wav_url()}),
            Some("ref_text"),
            "ref_text",
        ),
        (
            BASE,
            json!({"input": "x", "ref_text": "y", "ref_audio": "data:audio/wav;base64,@@not base64@@"}),
            Some("ref_audio"),
            "base64",
        ),
        (
            BASE,
            json!({"input": "x", "ref_text": "y", "ref_audio": "data:audio/wav;base64,aGVsbG8="}),
            Some("ref_audio"),
            "RIFF",
        ),
        (
            BASE,
            json!({"input": "x", "ref_text": "y", "ref_audio": "https://example.com/a.wav"}),
            Some("ref_audio"),
            "data URL",
        ),
        (
            BASE,
            json!({"input": "x", "ref_text": "y", "ref_audio": "file:///etc/passwd"}),
            Some("ref_audio"),
            "file://",
        ),
        (
            BASE,
            json!({"input": "x", "ref_text": "y", "ref_audio": "not a url"}),
            Some("ref_audio"),
            "data URL",
        ),
    ];
    for (model, body, want_param, want_msg) in cases {
        let e = parse_with(model, body.clone(), None).unwrap_err();
        assert_eq!(
            e.status,
            axum::http::StatusCode::BAD_REQUEST,
            "{body}: {e:?}"
        );
        assert_eq!(param(&e), want_param, "{body}: {e:?}");
        assert!(e.message.contains(want_msg), "{body}: {}", e.message);
        assert_eq!(e.body()["error"]["type"], "BadRequestError");
        assert_eq!(e.body()["error"]["code"], 400);
    }
}

#[test]
fn not_json_and_wrong_model() {
    let profile = by_name("generic").unwrap();
    let names = vec!["m".to_string()];
    let lookup = |_: &str| None;
    let ctx = Context {
        profile: &profile,
        model_names: &names,
        uploaded: &lookup,
    };
    let e = parse(b"{not json", &ctx).unwrap_err();
    assert!(e.message.contains("Invalid JSON"), "{e:?}");
    let e = parse(b"[1,2]", &ctx).unwrap_err();
    assert!(e.message.contains("JSON object"));
    let e = parse(br#"{"input":"x","model":"other"}"#, &ctx).unwrap_err();
    assert_eq!(e.status, axum::http::StatusCode::NOT_FOUND);
    assert_eq!(e.body()["error"]["type"], "NotFoundError");
    assert_eq!(e.body()["error"]["param"], "model");
    // Generic profile: any voice, any language.
    assert!(
        parse(
            br#"{"input":"x","voice":"whoever","language":"Elvish"}"#,
            &ctx
        )
        .is_ok()
    );
}
