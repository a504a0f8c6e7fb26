//! Request-body scenarios: malformed and wrong-typed bodies, length extremes, unknown
//! voice / task / format. The replies are vllm-omni's (`docs/bench.md` ("Contract
//! scenarios") cites the source of each).

use serde_json::json;

use super::Finding;
use super::expect::{error_envelope, wav_audio};
use super::http::{Target, post_speech, speech_json};

/// Characters of the over-long input (vllm-omni sets no limit of its own; OpenAI's is 4096).
pub(crate) const LONG_INPUT_CHARS: usize = 20_000;

/// A body that is not JSON (cut in the middle of a string) → 400 envelope.
pub(crate) async fn malformed_json(c: &reqwest::Client, t: &Target) -> Finding {
    let body = format!(r#"{{"model": {:?}, "input": "Hello"#, t.model);
    Finding::of(post_speech(c, t, body.into_bytes()).await, |r| {
        error_envelope(r, 400)
    })
}

/// `input` a number → 400 envelope.
pub(crate) async fn wrong_type(c: &reqwest::Client, t: &Target) -> Finding {
    let mut b = t.speak_body("");
    b.insert("input".into(), json!(12345));
    Finding::of(speech_json(c, t, &b).await, |r| error_envelope(r, 400))
}

/// `input` empty → 400 envelope ("Input text cannot be empty").
pub(crate) async fn empty_input(c: &reqwest::Client, t: &Target) -> Finding {
    Finding::of(speech_json(c, t, &t.speak_body("")).await, |r| {
        error_envelope(r, 400)
    })
}

/// One character → 200 with a WAV.
pub(crate) async fn min_input(c: &reqwest::Client, t: &Target) -> Finding {
    Finding::of(speech_json(c, t, &t.speak_body("A")).await, wav_audio)
}

/// [`LONG_INPUT_CHARS`] of text, streamed: refused with the 400 envelope, or audio
/// starts (the stream is then dropped); never a 5xx, a broken reply or a hang.
pub(crate) async fn long_input(c: &reqwest::Client, t: &Target) -> Finding {
    let text = "All work and no play. ".repeat(LONG_INPUT_CHARS / 22 + 1);
    let mut b = t.speak_body(&text[..LONG_INPUT_CHARS]);
    super::stream::streaming(&mut b);
    match super::stream::first_bytes(c, t, &b).await {
        Ok(super::stream::Start::Audio(n)) => {
            Finding::pass(format!("200 <first {n} bytes of audio>"))
        }
        Ok(super::stream::Start::Refused(r)) => Finding::of(Ok(r), |r| error_envelope(r, 400)),
        Err(e) => Finding::fail(String::new(), e.to_string()),
    }
}

/// `voice` no server has → 400 envelope.
pub(crate) async fn unknown_voice(c: &reqwest::Client, t: &Target) -> Finding {
    let b =
        json!({"model": t.model, "input": "Hello there.", "voice": "dfx_contract_no_such_voice"});
    let b = b.as_object().cloned().unwrap_or_default();
    Finding::of(speech_json(c, t, &b).await, |r| error_envelope(r, 400))
}

/// `task_type` outside CustomVoice / VoiceDesign / Base → 400 envelope.
pub(crate) async fn unknown_task_type(c: &reqwest::Client, t: &Target) -> Finding {
    let mut b = t.speak_body("Hello there.");
    b.insert("task_type".into(), json!("DfxUnknownTask"));
    Finding::of(speech_json(c, t, &b).await, |r| error_envelope(r, 400))
}

/// `response_format` outside wav / pcm / flac / mp3 / opus → 400 envelope.
pub(crate) async fn unknown_response_format(c: &reqwest::Client, t: &Target) -> Finding {
    let mut b = t.speak_body("Hello there.");
    b.insert("response_format".into(), json!("dfx_unknown"));
    Finding::of(speech_json(c, t, &b).await, |r| error_envelope(r, 400))
}
