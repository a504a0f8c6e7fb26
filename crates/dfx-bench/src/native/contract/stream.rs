//! A client that disconnects mid-stream must not hurt the server: the next request
//! succeeds.

use serde_json::{Map, Value, json};

use super::Finding;
use super::expect::wav_audio;
use super::http::{Reply, Target, read, speech_json};
use crate::native::BenchError;

/// Text long enough to stream for a while.
const PARAGRAPH: &str = "The harbour was quiet that morning. Gulls circled above the boats, \
the fishermen mended their nets, and the tide crept slowly up the grey stones of the pier \
while the town behind them woke, one shutter at a time.";

/// How a streamed request started.
pub(crate) enum Start {
    /// 200 and this many bytes of the first read; the stream was dropped after it.
    Audio(usize),
    /// Not 200: the whole reply.
    Refused(Reply),
}

/// Turns a body into a raw-audio stream (`stream_format: "audio"`, PCM).
pub(crate) fn streaming(b: &mut Map<String, Value>) {
    b.insert("stream".into(), json!(true));
    b.insert("stream_format".into(), json!("audio"));
    b.insert("response_format".into(), json!("pcm"));
}

/// Sends `b` and reads until the first non-empty body read, then drops the connection.
pub(crate) async fn first_bytes(
    c: &reqwest::Client,
    t: &Target,
    b: &Map<String, Value>,
) -> Result<Start, BenchError> {
    let mut resp = c
        .post(t.url("/v1/audio/speech"))
        .json(b)
        .send()
        .await
        .map_err(BenchError::Request)?;
    if resp.status().as_u16() != 200 {
        return read(resp).await.map(Start::Refused);
    }
    loop {
        match resp.chunk().await {
            Ok(Some(ch)) if !ch.is_empty() => return Ok(Start::Audio(ch.len())),
            Ok(Some(_)) => {}
            Ok(None) => return Err(BenchError::StreamWithoutAudio),
            Err(e) => return Err(BenchError::ReadStream(e)),
        }
    }
}

/// Streams [`PARAGRAPH`], drops the connection after the first audio bytes, then asks for
/// a short clip: it must come back whole.
pub(crate) async fn disconnect_mid_stream(c: &reqwest::Client, t: &Target) -> Finding {
    let mut b = t.speak_body(PARAGRAPH);
    streaming(&mut b);
    let first = match first_bytes(c, t, &b).await {
        Ok(Start::Audio(n)) => format!("stream 200 <{n} bytes, then disconnected>"),
        Ok(Start::Refused(r)) => {
            return Finding::fail(r.summary(), "the stream was refused".into());
        }
        Err(e) => return Finding::fail(String::new(), e.to_string()),
    };
    let after = speech_json(c, t, &t.speak_body("Still there?")).await;
    let mut f = Finding::of(after, wav_audio);
    f.got = format!("{first}; next request {}", f.got);
    if let Some(p) = f.problem.take() {
        f.problem = Some(format!("the request after the disconnect: {p}"));
    }
    f
}
