//! A small streaming client for the simulator's tests, calibration and benchmarks:
//! measures time to first packet and end-to-end latency the way the suite's bench does
//! (monotonic clock read right before sending; first non-empty body read; end of body).

#![allow(dead_code)]

use std::time::{Duration, Instant};

use base64::Engine as _;
use futures_util::StreamExt;
use serde_json::{Value, json};

/// One request's measurement.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    /// Response headers received, after send (the server answers them right after it
    /// queued the request, before the first chunk).
    pub headers_at: Option<Duration>,
    /// First non-empty body read after send.
    pub ttfp: Option<Duration>,
    /// End of body after send.
    pub e2el: Duration,
    pub bytes: Vec<u8>,
    /// (seconds since send, bytes) per body read.
    pub reads: Vec<(f64, usize)>,
    /// A transport error ended the body.
    pub error: Option<String>,
}

impl Measured {
    /// Audio seconds of the s16le mono body at `rate`.
    pub(crate) fn audio_secs(&self, rate: u32) -> f64 {
        (self.bytes.len() / 2) as f64 / f64::from(rate)
    }

    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    }
}

/// A loopback client (never uses a proxy).
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(2048)
        .build()
        .expect("client")
}

/// POSTs `body` to `url` and reads the whole response, timing every read; gives up
/// after `limit`.
pub(crate) async fn post_stream(
    c: &reqwest::Client,
    url: &str,
    body: &Value,
    limit: Duration,
) -> Measured {
    let sent = Instant::now();
    let resp = tokio::time::timeout(limit, c.post(url).json(body).send()).await;
    let resp = match resp {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return failed(sent, e.to_string()),
        Err(_) => return failed(sent, "timeout waiting for headers".into()),
    };
    let headers_at = Some(sent.elapsed());
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let mut stream = resp.bytes_stream();
    let mut out = Measured {
        status,
        headers,
        headers_at,
        ttfp: None,
        e2el: Duration::ZERO,
        bytes: Vec::new(),
        reads: Vec::new(),
        error: None,
    };
    let deadline = sent + limit;
    loop {
        let next = tokio::time::timeout_at(deadline.into(), stream.next()).await;
        match next {
            Ok(Some(Ok(chunk))) => {
                if chunk.is_empty() {
                    continue;
                }
                let t = sent.elapsed();
                out.ttfp.get_or_insert(t);
                out.reads.push((t.as_secs_f64(), chunk.len()));
                out.bytes.extend_from_slice(&chunk);
            }
            Ok(Some(Err(e))) => {
                out.error = Some(e.to_string());
                break;
            }
            Ok(None) => break,
            Err(_) => {
                out.error = Some("timeout reading the body".into());
                break;
            }
        }
    }
    out.e2el = sent.elapsed();
    out
}

fn failed(sent: Instant, error: String) -> Measured {
    Measured {
        status: 0,
        headers: Default::default(),
        headers_at: None,
        ttfp: None,
        e2el: sent.elapsed(),
        bytes: Vec::new(),
        reads: Vec::new(),
        error: Some(error),
    }
}

/// Twenty seed-tts-like English sentences, 52–153 characters.
pub(crate) const PROMPTS: &[&str] = &[
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "He said the meeting would start at nine, but nobody arrived before ten.",
    "A gentle breeze carried the smell of fresh bread through the narrow streets of the old town.",
    "The library will be closed on Monday for maintenance.",
    "She opened the window, looked at the grey sky, and decided to take an umbrella after all.",
    "Our team finished the project two weeks ahead of schedule, which surprised everyone in the office.",
    "I would like a cup of coffee with milk and no sugar, please.",
    "When the train finally pulled into the station, the platform was already crowded with tired travellers waiting to go home.",
    "The museum's new exhibition explores how ancient sailors navigated by the stars.",
    "Could you tell me the way to the nearest post office?",
    "After years of practice, he could play the piano without looking at the keys at all.",
    "The children laughed as the puppy chased its own tail around the garden.",
    "Scientists announced on Tuesday that the comet would be visible to the naked eye next month, weather permitting.",
    "Turn left at the second traffic light and you will see the hotel on your right.",
    "It was the best of times, it was the worst of times.",
    "The chef recommends the grilled salmon, served with roasted vegetables and a lemon butter sauce.",
    "Remember to back up your files before installing the update, because some settings may be reset.",
    "Rain is expected throughout the weekend, so outdoor events have been moved indoors.",
    "She wrote a long letter to her grandmother describing every detail of her first week at university, from the crowded lecture halls to the tiny dorm room.",
];

/// A short, valid 24 kHz mono WAV (0.5 s of a quiet tone) as a data URL.
pub(crate) fn ref_audio_data_url() -> String {
    let rate = 24_000u32;
    let samples: Vec<i16> = (0..rate / 2)
        .map(|i| {
            ((i as f64 * 2.0 * std::f64::consts::PI * 220.0 / f64::from(rate)).sin() * 3000.0)
                as i16
        })
        .collect();
    let data_len = (samples.len() * 2) as u32;
    let mut wav = Vec::with_capacity(44 + data_len as usize);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes());
    wav.extend_from_slice(&rate.to_le_bytes());
    wav.extend_from_slice(&(rate * 2).to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    for s in samples {
        wav.extend_from_slice(&s.to_le_bytes());
    }
    format!(
        "data:audio/wav;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(wav)
    )
}

/// The bench's voice-clone body (seed-tts, task Base).
pub(crate) fn voice_clone_body(model: &str, text: &str, ref_audio: &str) -> Value {
    json!({"model": model, "input": text, "stream": true, "stream_format": "audio",
        "response_format": "pcm", "ref_audio": ref_audio, "ref_text": "A short reference sentence.",
        "task_type": "Base", "language": "English", "max_new_tokens": 2048})
}

/// The bench's voice-design body (seed-tts-design, task VoiceDesign).
pub(crate) fn voice_design_body(model: &str, text: &str) -> Value {
    json!({"model": model, "input": text, "stream": true, "stream_format": "audio",
        "response_format": "pcm", "instructions": "A warm, calm female voice speaking clearly.",
        "task_type": "VoiceDesign", "language": "English", "max_new_tokens": 2048})
}

/// The bench's default-voice body (seed-tts-text, task CustomVoice).
pub(crate) fn custom_voice_body(model: &str, text: &str) -> Value {
    json!({"model": model, "input": text, "stream": true, "stream_format": "audio",
        "response_format": "pcm", "voice": "Vivian", "language": "English", "task_type": "CustomVoice"})
}
