//! Test support for the native chat-omni bench: an axum server that answers
//! `/v1/chat/completions` with a scripted SSE byte timeline (pieces written at known
//! delays, split wherever the script splits them), and a chat trial builder.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::HeaderMap;
use axum::response::Response;
use base64::Engine;
use dfx_core::plan::{
    BenchEntry, Dialect, GoodputSpec, PercentileKeys, SourceRef, StepKind, SweepStep, Trial,
};
use dfx_core::server::{ServeArgs, ServerSpec, ServerType};
use serde_json::{Map, Value, json};

/// One write of the script: wait this long after the previous one, then write the bytes.
pub(crate) type Piece = (Duration, Vec<u8>);

/// A request as the server received it (raw body bytes, to check key order).
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// The running server.
pub(crate) struct ChatServer {
    pub base_url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    _rt: tokio::runtime::Runtime,
}

/// `data: <json>\n\n`.
pub(crate) fn event(v: &Value) -> Vec<u8> {
    format!("data: {v}\n\n").into_bytes()
}

/// A complete mono 16-bit WAV of `frames` silent frames, base64.
pub(crate) fn wav_b64(frames: usize, rate: u32) -> String {
    let data = frames * 2;
    let mut b = b"RIFF".to_vec();
    b.extend_from_slice(&(36 + data as u32).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&rate.to_le_bytes());
    b.extend_from_slice(&(rate * 2).to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(data as u32).to_le_bytes());
    b.extend(std::iter::repeat_n(0u8, data));
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// A text chunk with cumulative usage.
pub(crate) fn text_chunk(content: &str, completion: u64) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0,
        "delta": {"role": "assistant", "content": content}}], "modality": "text",
        "usage": {"prompt_tokens": 77, "completion_tokens": completion}})
}

/// An audio chunk holding `frames` frames of 24 kHz audio.
pub(crate) fn audio_chunk(frames: usize) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0,
        "delta": {"role": "assistant", "content": wav_b64(frames, 24_000)},
        "audio_metadata": {"format": "wav", "sample_rate_hz": 24000, "frame_count": frames, "channels": 1}}],
        "modality": "audio", "usage": {"completion_tokens": 0}})
}

/// The final usage chunk (no modality), with stage metrics when `stage` is set.
pub(crate) fn usage_chunk(prompt: u64, completion: u64, stage: bool) -> Value {
    let mut v = json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}});
    if stage {
        v["metrics"] = json!({"stage_metrics": {"0": {"stage_id": 0, "final_output_type": "text",
            "num_tokens_out": completion, "finish_reason": "length"},
            "1": {"stage_id": 1, "audio_frames": 4800, "audio_duration_s": 0.2}}});
    }
    v
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The script for a text + audio answer (times after the handler starts):
/// 50 ms modality-less chunk with content, 100 ms role chunk, 150 ms 1 token, 250 ms
/// 2 more tokens (one message), 350 ms audio (2400 frames, split in two writes 30 ms
/// apart: completed at 380 ms), 480 ms audio (2400 frames), 500 ms stop chunk without
/// modality, 550 ms usage (prompt 77, completion 3, stage metrics), [DONE].
pub(crate) fn text_audio_script() -> Vec<Piece> {
    let a1 = event(&audio_chunk(2400));
    let (a1a, a1b) = a1.split_at(a1.len() / 2);
    vec![
        (
            ms(50),
            event(&json!({"choices": [{"index": 0, "delta": {"content": "ignored"}}]})),
        ),
        (ms(50), event(&text_chunk("", 0))),
        (ms(50), event(&text_chunk("Hel", 1))),
        (ms(100), event(&text_chunk("lo!", 3))),
        (ms(100), a1a.to_vec()),
        (ms(30), a1b.to_vec()),
        (ms(100), event(&audio_chunk(2400))),
        (
            ms(20),
            event(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
        ),
        (ms(50), event(&usage_chunk(77, 3, true))),
        (ms(0), b"data: [DONE]\n\n".to_vec()),
    ]
}

/// A text-only answer: role at 100 ms, 4 single-token messages every 100 ms from 200 ms,
/// usage at 520 ms.
pub(crate) fn text_only_script() -> Vec<Piece> {
    let mut p = vec![(ms(100), event(&text_chunk("", 0)))];
    for i in 1..=4 {
        p.push((ms(100), event(&text_chunk("w", i))));
    }
    p.push((ms(20), event(&usage_chunk(77, 4, false))));
    p.push((ms(0), b"data: [DONE]\n\n".to_vec()));
    p
}

/// An answer that fails mid-stream with an `error` chunk.
pub(crate) fn error_script() -> Vec<Piece> {
    vec![
        (ms(50), event(&text_chunk("", 0))),
        (ms(50), event(&text_chunk("a", 1))),
        (
            ms(50),
            event(&json!({"error": {"message": "engine overloaded", "code": 503}})),
        ),
        (ms(0), b"data: [DONE]\n\n".to_vec()),
    ]
}

impl ChatServer {
    /// Serves `script` to every request.
    pub(crate) fn start(script: Vec<Piece>) -> ChatServer {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let s2 = seen.clone();
        let script = Arc::new(script);
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move |h: HeaderMap, b: Bytes| {
                let (seen, script) = (s2.clone(), script.clone());
                async move {
                    seen.lock().unwrap().push(Seen {
                        headers: h,
                        body: b.to_vec(),
                    });
                    let it = (*script).clone().into_iter();
                    let stream = futures_util::stream::unfold(it, |mut it| async move {
                        let (d, bytes) = it.next()?;
                        tokio::time::sleep(d).await;
                        Some((Ok::<_, std::io::Error>(Bytes::from(bytes)), it))
                    });
                    Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(Body::from_stream(stream))
                        .unwrap()
                }
            }),
        );
        rt.spawn(async move { axum::serve(listener, app).await });
        ChatServer {
            base_url: format!("http://{addr}"),
            seen,
            _rt: rt,
        }
    }
}

/// A chat trial: `raw` holds the entry's keys (dataset keys, percentile-metrics, …).
pub(crate) fn chat_trial(raw: Value, kind: StepKind, num_prompts: u64) -> Trial {
    let raw: Map<String, Value> = raw.as_object().cloned().unwrap_or_default();
    let s = |k: &str| raw.get(k).and_then(Value::as_str).map(String::from);
    let entry = BenchEntry {
        index: 0,
        suffix: "t".into(),
        dialect: Dialect::Omni,
        dataset_name: s("dataset_name"),
        backend: s("backend").or(Some("openai-chat-omni".into())),
        endpoint: s("endpoint").or(Some("/v1/chat/completions".into())),
        dataset_path: s("dataset_path"),
        seed_tts_locale: None,
        percentiles: PercentileKeys::parse(
            s("percentile-metrics").as_deref(),
            s("metric-percentiles").as_deref(),
        )
        .expect("valid percentile keys"),
        goodput: raw
            .get("goodput")
            .filter(|g| !g.is_null())
            .map(|g| GoodputSpec::parse(g).expect("valid goodput")),
        extra_body: raw.get("extra_body").and_then(Value::as_object).cloned(),
        num_warmups: raw
            .get("num_warmups")
            .and_then(Value::as_u64)
            .map(|n| n as u32),
        burstiness: None,
        seed: None,
        task: None,
        eval_phase: None,
        name: None,
        trust_remote_code: false,
        raw,
        case: Default::default(),
        connection: None,
        repeats: None,
        capacity: None,
        load: Default::default(),
        runner: Default::default(),
        gates: Default::default(),
    };
    let label = match kind {
        StepKind::Concurrency { max_concurrency } => format!("c{max_concurrency}"),
        StepKind::RequestRate { request_rate } => format!("qps{request_rate}"),
    };
    Trial {
        name: format!("test_chat::t::{label}"),
        test_name: "test_chat".into(),
        marks: vec![],
        hardware_marks: vec![],
        source: SourceRef {
            file: PathBuf::from("perf-configs/test.json"),
            case_index: 0,
            raw_entry_index: 0,
        },
        server: Arc::new(ServerSpec {
            server_type: ServerType::VllmOmni,
            model: "Qwen/Qwen3-Omni-30B-A3B-Instruct".into(),
            deploy: None,
            stage_overrides: None,
            serve_args: ServeArgs::default(),
            extra_cli_args: vec![],
            use_omni: true,
            default_timeouts: true,
            env: BTreeMap::new(),
            ready_timeout: None,
            judge: None,
        }),
        entry: Arc::new(entry),
        step: SweepStep {
            kind,
            index: 0,
            num_prompts: std::num::NonZeroU64::new(num_prompts).unwrap(),
            label,
        },
        thresholds: Default::default(),
        unsupported: None,
    }
}

/// The records written to `records.jsonl`.
pub(crate) fn read_records(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
