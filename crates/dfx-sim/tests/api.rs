//! API contract of the simulator (`docs/simulator.md` ("API")): status codes, envelopes,
//! PCM byte counts against the promised duration, chunk cadence, WAV headers, SSE, voices.

mod common;

use std::time::Duration;

use common::client::{self, Measured, post_stream};
use dfx_sim::SimOptions;
use serde_json::{Value, json};

const CV: &str = "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice";
const BASE: &str = "Qwen/Qwen3-TTS-12Hz-1.7B-Base";
const LIMIT: Duration = Duration::from_secs(30);

async fn start(model: &str, speed: f64) -> dfx_sim::SimHandle {
    dfx_sim::spawn(SimOptions::new(model).speed(speed))
        .await
        .unwrap()
}

async fn speech(h: &dfx_sim::SimHandle, body: &Value) -> Measured {
    post_stream(
        &client::client(),
        &format!("{}/v1/audio/speech", h.base_url()),
        body,
        LIMIT,
    )
    .await
}

fn frames(m: &Measured) -> u64 {
    m.header("x-dfx-sim-audio-frames").unwrap().parse().unwrap()
}

fn chunk_plan(m: &Measured) -> Vec<u64> {
    m.header("x-dfx-sim-chunk-frames")
        .unwrap()
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect()
}

/// `GET url` and its JSON body (the test fails on a transport or decoding error).
async fn get_json(c: &reqwest::Client, url: impl reqwest::IntoUrl) -> Value {
    c.get(url).send().await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn health_and_models() {
    let h = start(CV, 20.0).await;
    let c = client::client();
    let r = c
        .get(format!("{}/health", h.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v = get_json(&c, format!("{}/v1/models", h.base_url())).await;
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], CV);
    assert_eq!(v["data"][0]["root"], CV);
    let r = c
        .get(format!("{}/v1/nothing", h.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], 404);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn invalid_requests_get_the_openai_envelope() {
    let h = start(BASE, 20.0).await;
    let c = client::client();
    let url = format!("{}/v1/audio/speech", h.base_url());
    let cases = [
        (json!({"input": ""}), Some("input")),
        (
            json!({"ref_audio": client::ref_audio_data_url(), "ref_text": "x"}),
            Some("input"),
        ),
        (json!({"input": 5}), Some("input")),
        (json!({"input": "x".repeat(5000)}), Some("input")),
        (
            json!({"input": "hi", "task_type": "Nope"}),
            Some("task_type"),
        ),
        (
            json!({"input": "hi", "response_format": "ogg"}),
            Some("response_format"),
        ),
        (
            json!({"input": "hi", "ref_text": "x", "ref_audio": "data:audio/wav;base64,%%%"}),
            Some("ref_audio"),
        ),
        (json!({"input": "hi", "speed": 9}), Some("speed")),
        (
            json!({"input": "hi", "task_type": "CustomVoice", "voice": "vivian"}),
            Some("task_type"),
        ),
    ];
    for (body, param) in cases {
        let r = c.post(&url).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 400, "{body}");
        let v: Value = r.json().await.unwrap();
        let e = &v["error"];
        assert_eq!(e["type"], "BadRequestError", "{v}");
        assert_eq!(e["code"], 400);
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert_eq!(e["param"].as_str(), param, "{v}");
    }
    let r = c
        .post(&url)
        .body("{oops")
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = c
        .post(&url)
        .json(&json!({"input": "hi", "model": "other/model"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let stats = get_json(&c, format!("{}/sim/stats", h.base_url())).await;
    assert_eq!(stats["rejected_400"], 10);
    assert_eq!(stats["speech_requests"], 0);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn streamed_pcm_matches_the_promised_duration_and_chunk_plan() {
    // Slow enough that a few ms of CPU contention between parallel tests stay small in
    // simulated time.
    let speed = 2.0;
    let h = start(CV, speed).await;
    let text = client::PROMPTS[8];
    let m = speech(&h, &client::custom_voice_body(CV, text)).await;
    assert_eq!(m.status, 200);
    assert!(m.error.is_none(), "{:?}", m.error);
    assert_eq!(m.header("content-type").as_deref(), Some("audio/pcm"));
    let f = frames(&m);
    assert_eq!(
        m.bytes.len() as u64,
        f * 1920 * 2,
        "bytes = frames × 1920 samples × 2"
    );
    let secs = f as f64 / 12.5;
    let nominal = text.len() as f64 * 0.065;
    assert!(
        (secs / nominal - 1.0).abs() < 0.09,
        "{secs} s for {} chars",
        text.len()
    );
    let plan = chunk_plan(&m);
    assert_eq!(plan.iter().sum::<u64>(), f);
    assert_eq!(plan[0], 1);
    assert!(plan[1..plan.len() - 1].iter().all(|&n| n == 25));
    // Cadence: reads cluster into one burst per decoded chunk; bursts are one talker
    // chunk (25 frames × step time) apart, i.e. far more than a read apart.
    let mut bursts: Vec<(f64, usize)> = Vec::new();
    for &(t, n) in &m.reads {
        match bursts.last_mut() {
            Some(b) if t - b.0 < 0.01 => b.1 += n,
            _ => bursts.push((t, n)),
        }
    }
    let sizes: Vec<u64> = bursts.iter().map(|b| b.1 as u64 / 3840).collect();
    assert_eq!(sizes, plan, "one write per codec chunk");
    let gaps: Vec<f64> = bursts
        .windows(2)
        .skip(1)
        .map(|w| (w[1].0 - w[0].0) * speed)
        .collect();
    // 25 talker steps of one sequence, each slowed by the contention factor while
    // code2wav decodes the previous chunk (about a third of the time).
    let engine = SimOptions::new(CV).resolve().unwrap().engine;
    let step = engine.talker.step_base_s + engine.talker.step_per_seq_s;
    let (lo, hi) = (25.0 * step, 25.0 * step * (1.0 + engine.contention));
    for g in &gaps[..gaps.len() - 1] {
        assert!(
            (0.9 * lo..1.2 * hi).contains(g),
            "steady chunk gap {g} s (simulated) outside {lo:.3}–{hi:.3} s, gaps {gaps:?}"
        );
    }
    h.shutdown().await.unwrap();
}

/// Audible onset as `docs/bench.md` ("Per-request definitions") defines it: first 5 ms
/// window whose RMS reaches 5 % of the clip's peak and stays there for 4 windows.
fn leading_silence_ms(pcm: &[u8], rate: usize) -> f64 {
    let s: Vec<f64> = pcm
        .chunks_exact(2)
        .map(|c| f64::from(i16::from_le_bytes([c[0], c[1]])))
        .collect();
    let peak = s.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let w = rate / 200;
    let rms: Vec<f64> = s
        .chunks(w)
        .map(|c| (c.iter().map(|x| x * x).sum::<f64>() / c.len() as f64).sqrt())
        .collect();
    let loud = |i: usize| rms.get(i).is_some_and(|r| *r >= 0.05 * peak);
    (0..rms.len())
        .find(|&i| (i..i + 4).all(loud))
        .map_or(0.0, |i| i as f64 * 5.0)
}

#[tokio::test]
async fn audio_has_a_measurable_leading_silence_then_speech() {
    let h = start(CV, 20.0).await;
    for text in &client::PROMPTS[..4] {
        let m = speech(&h, &client::custom_voice_body(CV, text)).await;
        let promised: f64 = m
            .header("x-dfx-sim-leading-silence-ms")
            .unwrap()
            .parse()
            .unwrap();
        assert!((80.0..150.0).contains(&promised));
        let found = leading_silence_ms(&m.bytes, 24_000);
        assert!(
            (found - promised).abs() <= 25.0,
            "onset {found} ms, promised {promised} ms"
        );
    }
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn wav_stream_whole_body_and_sse() {
    let h = start(CV, 20.0).await;
    let mut body = client::custom_voice_body(CV, "A short sentence for the header test.");
    body["response_format"] = json!("wav");
    let m = speech(&h, &body).await;
    assert_eq!(m.header("content-type").as_deref(), Some("audio/wav"));
    let data = frames(&m) * 3840;
    let b = &m.bytes;
    assert_eq!(b.len() as u64, 44 + data);
    assert_eq!(&b[0..4], b"RIFF");
    assert_eq!(
        u32::from_le_bytes(b[4..8].try_into().unwrap()) as u64,
        36 + data
    );
    assert_eq!(&b[8..16], b"WAVEfmt ");
    assert_eq!(u16::from_le_bytes(b[20..22].try_into().unwrap()), 1, "PCM");
    assert_eq!(u16::from_le_bytes(b[22..24].try_into().unwrap()), 1, "mono");
    assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 24_000);
    assert_eq!(u16::from_le_bytes(b[34..36].try_into().unwrap()), 16);
    assert_eq!(&b[36..40], b"data");
    assert_eq!(
        u32::from_le_bytes(b[40..44].try_into().unwrap()) as u64,
        data
    );
    // The header travels with the first chunk, not before it.
    assert!(m.reads[0].1 > 44);

    // Non-streaming: one complete body with a length.
    let whole = json!({"input": "A short sentence for the header test.", "voice": "ryan", "response_format": "pcm"});
    let m2 = speech(&h, &whole).await;
    assert_eq!(m2.status, 200);
    assert_eq!(
        m2.header("content-length").unwrap().parse::<u64>().unwrap(),
        frames(&m2) * 3840
    );
    assert_eq!(m2.bytes.len() as u64, frames(&m2) * 3840);
    let default_wav = json!({"input": "Default format is wav."});
    let m3 = speech(&h, &default_wav).await;
    assert_eq!(&m3.bytes[0..4], b"RIFF");

    // SSE: delta events with base64 audio, then done.
    let sse = json!({"input": "Server sent events.", "voice": "vivian", "stream": true, "response_format": "pcm"});
    let m4 = speech(&h, &sse).await;
    assert_eq!(
        m4.header("content-type").as_deref(),
        Some("text/event-stream")
    );
    let text = String::from_utf8(m4.bytes.clone()).unwrap();
    let deltas = text.matches("event: speech.audio.delta").count() as u64;
    let plan = chunk_plan(&m4);
    assert_eq!(deltas, plan.len() as u64);
    assert!(text.trim_end().ends_with('}') && text.contains("event: speech.audio.done"));
    h.shutdown().await.unwrap();
}

fn multipart(fields: &[(&str, &str)], file: Option<&[u8]>) -> (String, Vec<u8>) {
    let boundary = "dfxsimboundary7d1";
    let mut body = Vec::new();
    for (k, v) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n")
                .as_bytes(),
        );
    }
    if let Some(f) = file {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"audio_sample\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\n").as_bytes(),
        );
        body.extend_from_slice(f);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

#[tokio::test]
async fn voices_lifecycle() {
    let h = start(BASE, 20.0).await;
    let c = client::client();
    let url = format!("{}/v1/audio/voices", h.base_url());
    let v = get_json(&c, &url).await;
    assert_eq!(v["uploaded_voices"], json!([]));
    let wav = b"RIFF\x24\x00\x00\x00WAVEfmt some audio bytes";
    let (ctype, body) = multipart(
        &[
            ("name", "alice"),
            ("consent", "c-1"),
            ("ref_text", "Hello there."),
        ],
        Some(wav),
    );
    let r = c
        .post(&url)
        .header("content-type", ctype)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["success"], true);
    assert_eq!(v["voice"]["name"], "alice");
    assert_eq!(v["voice"]["file_size"], wav.len());
    let v = get_json(&c, &url).await;
    assert_eq!(v["voices"], json!(["alice"]));
    assert_eq!(v["uploaded_voices"][0]["ref_text"], "Hello there.");
    // Usable as a voice: a Base request without ref_audio.
    let m = speech(&h, &json!({"input": "Cloned voice speaking.", "voice": "alice", "stream_format": "audio", "response_format": "pcm"})).await;
    assert_eq!(m.status, 200);
    assert!(!m.bytes.is_empty());
    // Missing consent / file → 400.
    let (ctype, body) = multipart(&[("name", "bob")], Some(wav));
    let r = c
        .post(&url)
        .header("content-type", ctype)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let (ctype, body) = multipart(&[("name", "bob"), ("consent", "c")], None);
    let r = c
        .post(&url)
        .header("content-type", ctype)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["param"], "audio_sample");
    // Delete, then it is gone and unusable.
    let r = c.delete(format!("{url}/alice")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = c.delete(format!("{url}/alice")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let m = speech(&h, &json!({"input": "Gone.", "voice": "alice"})).await;
    assert_eq!(m.status, 400);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn voxcpm2_is_48_khz_single_stage() {
    let h = start("openbmb/VoxCPM2", 20.0).await;
    let m = speech(&h, &json!({"input": "Forty eight kilohertz audio.", "stream_format": "audio", "response_format": "pcm"})).await;
    assert_eq!(m.status, 200);
    assert_eq!(m.header("x-dfx-sim-sample-rate").as_deref(), Some("48000"));
    assert_eq!(m.bytes.len() as u64, frames(&m) * 3840 * 2);
    assert!(chunk_plan(&m).iter().all(|&n| n <= 3));
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn sim_info_reports_options() {
    let opts = SimOptions::new(CV)
        .speed(7.0)
        .seed(42)
        .fault("error500=0.5")
        .unwrap();
    let h = dfx_sim::spawn(opts).await.unwrap();
    let v: Value = client::client()
        .get(format!("{}/sim/info", h.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["model"], CV);
    assert_eq!(v["speed"], 7.0);
    assert_eq!(v["seed"], 42);
    assert_eq!(v["faults"]["error500"], 0.5);
    assert_eq!(v["profile"]["name"], "qwen3-tts-1.7b-customvoice");
    assert_eq!(v["engine"]["codec"]["decode_batch"], 1);
    assert_eq!(v["ready"], true);
    h.shutdown().await.unwrap();
}
