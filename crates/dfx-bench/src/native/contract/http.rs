//! The contract scenarios' HTTP: one bounded request at a time (a total timeout, a body
//! cap), on connections that are never reused, so a scenario cannot leak state into the
//! next one through the pool.

use std::time::Duration;

use crate::native::BenchError;
use base64::Engine as _;
use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};

/// Largest reply body a scenario reads (a short WAV is far below).
pub(crate) const MAX_REPLY_BYTES: usize = 16 * 1024 * 1024;

/// What a scenario needs to know of the server under test.
#[derive(Debug, Clone)]
pub struct Target {
    /// `http://host:port`.
    pub base_url: String,
    /// The `model` field of every request.
    pub model: String,
    /// Per request: connect, send and read the whole reply.
    pub timeout: Duration,
}

/// A reply as a scenario judges it.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The `Content-Type` header; empty when absent or not text.
    pub content_type: String,
    /// The whole body (at most `MAX_REPLY_BYTES`).
    pub body: Vec<u8>,
}

impl Reply {
    /// `400 {"error": …}`, the body cut at 300 characters, for `got`.
    pub fn summary(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text: String = if self.content_type.starts_with("audio/") {
            format!("<{} bytes of {}>", self.body.len(), self.content_type)
        } else {
            text.chars().take(300).collect()
        };
        format!("{} {text}", self.status)
    }
}

impl Target {
    /// A client with no idle connections kept (every request connects anew).
    pub fn client(&self) -> Result<reqwest::Client, BenchError> {
        reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .connect_timeout(self.timeout)
            .timeout(self.timeout)
            .build()
            .map_err(BenchError::HttpClient)
    }

    /// `base_url` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim_end_matches('/'))
    }

    /// The body of a request that the server can answer with speech: the voice-clone
    /// fields on a Base model (a generated reference clip and its transcript),
    /// `instructions` on a VoiceDesign model, else the input alone (the default voice).
    pub(crate) fn speak_body(&self, input: &str) -> serde_json::Map<String, Value> {
        let mut b = serde_json::Map::new();
        b.insert("model".into(), json!(self.model));
        b.insert("input".into(), json!(input));
        b.insert("response_format".into(), json!("wav"));
        if dfx_core::contract::is_clone_model(&self.model) {
            b.insert("task_type".into(), json!("Base"));
            b.insert("ref_audio".into(), json!(reference_data_url()));
            b.insert("ref_text".into(), json!(REFERENCE_TEXT));
        } else if self.model.to_ascii_lowercase().contains("voicedesign") {
            b.insert(
                "instructions".into(),
                json!("A calm, clear adult narrator voice."),
            );
        }
        b
    }
}

/// Transcript sent with the generated reference clip.
pub(crate) const REFERENCE_TEXT: &str = "This is a short reference clip.";

/// A 1.5 s mono 16 kHz WAV (a tone with a slow vibrato): long enough for vllm-omni's
/// 1 s minimum of reference audio, short enough to stay small.
pub fn reference_wav() -> Vec<u8> {
    let rate = 16_000u32;
    let n = rate * 3 / 2;
    let mut out = Vec::with_capacity(44 + n as usize * 2);
    let push32 = |o: &mut Vec<u8>, v: u32| o.extend_from_slice(&v.to_le_bytes());
    out.extend_from_slice(b"RIFF");
    push32(&mut out, 36 + n * 2);
    out.extend_from_slice(b"WAVEfmt ");
    push32(&mut out, 16);
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    push32(&mut out, rate);
    push32(&mut out, rate * 2);
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    push32(&mut out, n * 2);
    for i in 0..n {
        let t = f64::from(i) / f64::from(rate);
        let f = 180.0 + 20.0 * (t * 5.0).sin();
        let s = (t * f * std::f64::consts::TAU).sin() * 0.3 * f64::from(i16::MAX);
        out.extend_from_slice(&(s as i16).to_le_bytes());
    }
    out
}

/// [`reference_wav`] as a `data:audio/wav;base64,…` URL.
pub(crate) fn reference_data_url() -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(reference_wav());
    format!("data:audio/wav;base64,{b64}")
}

/// Reads a whole reply, at most `MAX_REPLY_BYTES`.
pub async fn read(resp: reqwest::Response) -> Result<Reply, BenchError> {
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let mut resp = resp;
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(BenchError::ReadReply)? {
        if body.len() + chunk.len() > MAX_REPLY_BYTES {
            return Err(BenchError::ReplyTooLarge {
                cap: MAX_REPLY_BYTES,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Reply {
        status,
        content_type,
        body,
    })
}

/// `POST /v1/audio/speech` with `body` as the raw request bytes.
pub(crate) async fn post_speech(
    client: &reqwest::Client,
    t: &Target,
    body: Vec<u8>,
) -> Result<Reply, BenchError> {
    let resp = client
        .post(t.url("/v1/audio/speech"))
        .header(CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .map_err(BenchError::Request)?;
    read(resp).await
}

/// `POST /v1/audio/speech` with a JSON body.
pub(crate) async fn speech_json(
    client: &reqwest::Client,
    t: &Target,
    body: &serde_json::Map<String, Value>,
) -> Result<Reply, BenchError> {
    post_speech(client, t, serde_json::to_vec(body).unwrap_or_default()).await
}

/// A bare `GET` / `DELETE` of `path`.
pub async fn call(
    client: &reqwest::Client,
    t: &Target,
    method: reqwest::Method,
    path: &str,
) -> Result<Reply, BenchError> {
    let resp = client
        .request(method, t.url(path))
        .send()
        .await
        .map_err(BenchError::Request)?;
    read(resp).await
}

/// A `multipart/form-data` body of text fields and one file field: (content type, bytes).
pub fn multipart(fields: &[(&str, &str)], file: (&str, &str, &str, &[u8])) -> (String, Vec<u8>) {
    let boundary = format!("dfx-contract-{:016x}", rand::random::<u64>());
    let mut b = Vec::new();
    for (name, value) in fields {
        b.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    let (name, filename, mime, data) = file;
    b.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: {mime}\r\n\r\n"
        )
        .as_bytes(),
    );
    b.extend_from_slice(data);
    b.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), b)
}
