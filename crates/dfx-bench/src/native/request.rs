//! Request bodies and headers exactly as `docs/bench.md` ("Requests") describes them:
//! `model`, `input`, `stream`, `stream_format`, `response_format`, then sampling flags,
//! then `extra_body`, then the dataset's per-row fields (which replace same-named
//! `extra_body` values in place, like a Python dict update).

use base64::Engine;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Map, Value};

use super::dataset::{DatasetKind, Row};
use crate::native::BenchError;

/// Sampling flags of `vllm bench serve` that travel in the request body, as written in an
/// entry (dashes or underscores).
const SAMPLING_FLAGS: [&str; 7] = [
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repetition_penalty",
    "frequency_penalty",
    "presence_penalty",
];

/// `max_new_tokens` when the entry does not set it.
pub(crate) const DEFAULT_MAX_NEW_TOKENS: u64 = 2048;

/// What every body of one step shares.
#[derive(Debug, Clone)]
pub(crate) struct BodyTemplate {
    pub model: String,
    pub kind: DatasetKind,
    /// `English` / `Chinese` / the locale as written.
    pub language: String,
    pub max_new_tokens: u64,
    /// Sampling flags from the entry, in entry order.
    pub sampling: Map<String, Value>,
    pub extra_body: Map<String, Value>,
}

impl BodyTemplate {
    /// The template for an entry's raw keys.
    pub(crate) fn new(
        model: &str,
        kind: DatasetKind,
        locale: &str,
        raw: &Map<String, Value>,
        extra_body: Option<&Map<String, Value>>,
    ) -> Self {
        let mut sampling = Map::new();
        let mut max_new_tokens = DEFAULT_MAX_NEW_TOKENS;
        for (k, v) in raw {
            let key = k.replace('-', "_");
            if SAMPLING_FLAGS.contains(&key.as_str()) && !v.is_null() {
                sampling.insert(key, v.clone());
            } else if key == "max_new_tokens" {
                max_new_tokens = v.as_u64().unwrap_or(DEFAULT_MAX_NEW_TOKENS);
            }
        }
        BodyTemplate {
            model: model.to_string(),
            kind,
            language: language_for(locale),
            max_new_tokens,
            sampling,
            extra_body: extra_body.cloned().unwrap_or_default(),
        }
    }

    /// The body for one row. `ref_audio` is the row's data URL (seed-tts only).
    pub(crate) fn body(&self, row: &Row, ref_audio: Option<&str>) -> Map<String, Value> {
        let mut b = Map::new();
        b.insert("model".into(), Value::from(self.model.as_str()));
        b.insert("input".into(), Value::from(row.text.as_str()));
        b.insert("stream".into(), Value::Bool(true));
        b.insert("stream_format".into(), Value::from("audio"));
        b.insert("response_format".into(), Value::from("pcm"));
        for (k, v) in self.sampling.iter().chain(self.extra_body.iter()) {
            b.insert(k.clone(), v.clone());
        }
        let lang = Value::from(self.language.as_str());
        let max_new = Value::from(self.max_new_tokens);
        match self.kind {
            DatasetKind::SeedTts => {
                b.insert(
                    "ref_audio".into(),
                    Value::from(ref_audio.unwrap_or_default()),
                );
                b.insert("ref_text".into(), Value::from(row.ref_text.as_str()));
                b.insert("task_type".into(), Value::from("Base"));
                b.insert("language".into(), lang);
                b.insert("max_new_tokens".into(), max_new);
            }
            DatasetKind::SeedTtsText => {}
            DatasetKind::SeedTtsDesign => {
                let desc = row.voice_description.as_deref().unwrap_or_default();
                b.insert("instructions".into(), Value::from(desc));
                b.insert("task_type".into(), Value::from("VoiceDesign"));
                b.insert("language".into(), lang);
                b.insert("max_new_tokens".into(), max_new);
            }
        }
        b
    }
}

/// The `language` field for a seed-tts locale.
pub(crate) fn language_for(locale: &str) -> String {
    match locale {
        "en" => "English".into(),
        "zh" => "Chinese".into(),
        other => other.into(),
    }
}

/// `data:audio/wav;base64,<whole file>`.
pub(crate) fn wav_data_url(wav: &[u8]) -> String {
    let mut s = String::from("data:audio/wav;base64,");
    base64::engine::general_purpose::STANDARD.encode_string(wav, &mut s);
    s
}

/// Headers of every request: JSON content type and, when a token is configured, the bearer
/// token (marked sensitive so it never shows in debug output). Upstream sends
/// `Bearer None` without a key; dfx-perf sends no `Authorization` header then.
pub(crate) fn base_headers(token: Option<&str>) -> Result<HeaderMap, BenchError> {
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(token) = token {
        let mut v = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            BenchError::Input("the auth token contains characters not allowed in a header".into())
        })?;
        v.set_sensitive(true);
        h.insert(AUTHORIZATION, v);
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn row(desc: Option<&str>) -> Row {
        Row {
            line: 1,
            utt_id: "u1".into(),
            ref_text: "hello reference zero".into(),
            ref_wav: PathBuf::from("x.wav"),
            text: "The quick brown fox jumps.".into(),
            voice_description: desc.map(String::from),
        }
    }

    fn keys(m: &Map<String, Value>) -> Vec<&str> {
        m.keys().map(String::as_str).collect()
    }

    #[test]
    fn seed_tts_body_matches_reference_order() {
        let raw: Map<String, Value> =
            serde_json::from_str(r#"{"dataset_name":"seed-tts","top-p":0.9}"#).unwrap();
        let extra: Map<String, Value> =
            serde_json::from_str(r#"{"seed":1,"language":"German"}"#).unwrap();
        let t = BodyTemplate::new("fake-tts", DatasetKind::SeedTts, "en", &raw, Some(&extra));
        let b = t.body(&row(None), Some("data:audio/wav;base64,UklG"));
        assert_eq!(
            keys(&b),
            [
                "model",
                "input",
                "stream",
                "stream_format",
                "response_format",
                "top_p",
                "seed",
                "language",
                "ref_audio",
                "ref_text",
                "task_type",
                "max_new_tokens"
            ]
        );
        // The per-row language wins over extra_body's and keeps extra_body's position.
        assert_eq!(b["language"], "English");
        assert_eq!(b["max_new_tokens"], 2048);
        assert_eq!(b["stream"], true);
        assert_eq!(b["response_format"], "pcm");
    }

    #[test]
    fn text_and_design_bodies() {
        let extra: Map<String, Value> = serde_json::from_str(
            r#"{"voice":"Vivian","task_type":"CustomVoice","language":"English"}"#,
        )
        .unwrap();
        let t = BodyTemplate::new(
            "m",
            DatasetKind::SeedTtsText,
            "en",
            &Map::new(),
            Some(&extra),
        );
        let b = t.body(&row(None), None);
        let reference = r#"{"model": "m", "input": "The quick brown fox jumps.", "stream": true, "stream_format": "audio", "response_format": "pcm", "voice": "Vivian", "task_type": "CustomVoice", "language": "English"}"#;
        let want: Map<String, Value> = serde_json::from_str(reference).unwrap();
        assert_eq!(keys(&b), keys(&want));
        assert_eq!(b, want);
        let raw: Map<String, Value> = serde_json::from_str(r#"{"max_new_tokens":512}"#).unwrap();
        let t = BodyTemplate::new("m", DatasetKind::SeedTtsDesign, "zh", &raw, None);
        let b = t.body(&row(Some("A calm narrator")), None);
        assert_eq!(b["instructions"], "A calm narrator");
        assert_eq!(b["task_type"], "VoiceDesign");
        assert_eq!(b["language"], "Chinese");
        assert_eq!(b["max_new_tokens"], 512);
    }

    #[test]
    fn headers_and_data_url() {
        let h = base_headers(None).unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(h[CONTENT_TYPE], "application/json");
        let h = base_headers(Some("s3cret")).unwrap();
        assert_eq!(h[AUTHORIZATION], "Bearer s3cret");
        assert!(!format!("{h:?}").contains("s3cret"));
        assert_eq!(wav_data_url(b"RIFF"), "data:audio/wav;base64,UklGRg==");
    }
}
