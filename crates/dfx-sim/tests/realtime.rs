//! `/v1/realtime` lifecycle: handshake, the unprompted response and its event order,
//! `session.closed`, the unsupported-model error, faults, a client vanishing mid-session,
//! concurrent sessions.

use std::time::{Duration, Instant};

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

const OMNI: &str = "Qwen/Qwen3-Omni-30B-A3B-Instruct";
const TEXT: &str = "The quick brown fox jumps over the lazy dog.";

async fn spawn(model: &str, faults: &str) -> dfx_sim::SimHandle {
    let mut o = dfx_sim::SimOptions::new(model).speed(10.0);
    if !faults.is_empty() {
        o = o.fault(faults).unwrap();
    }
    dfx_sim::spawn(o).await.unwrap()
}

async fn connect(h: &dfx_sim::SimHandle) -> Ws {
    let url = format!("ws://{}/v1/realtime?duplex=1&model=m&autostart=0", h.addr);
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

/// The next JSON event, or `None` when the socket ended; at most 10 s.
async fn next(ws: &mut Ws) -> Option<Value> {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("an event within 10 s")?;
        match m {
            Ok(Message::Text(t)) => return Some(serde_json::from_str(t.as_str()).unwrap()),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

fn update(text: &str) -> Value {
    json!({"type": "session.update", "session": {"model": OMNI, "modalities": ["audio", "text"],
        "turn_detection": null, "extra_body": {"auto_response": true, "ref_audio": "data:audio/wav;base64,UklG",
        "ref_text": "ref", "task_type": "Base", "language": "English", "max_new_tokens": 2048,
        "return_stage_metrics": true, "duplex_initial_user_text": text, "force_listen_count": 0}},
        "event_id": "evt_0"})
}

fn append(end_ms: u64) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD.encode(vec![0u8; 6400]);
    json!({"type": "input_audio_buffer.append", "audio": b64, "format": "pcm16",
        "sample_rate_hz": 16000, "duration_ms": 200, "audio_end_ms": end_ms, "is_speech": false})
}

/// Handshake, then appends every 50 ms until `response.done`; returns every event seen.
async fn one_turn(ws: &mut Ws, text: &str) -> Vec<Value> {
    send(ws, update(text)).await;
    let created = next(ws).await.unwrap();
    assert_eq!(created["type"], "session.created", "{created}");
    assert!(
        created["session"]["id"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    let mut seen = Vec::new();
    let mut end = 0;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    loop {
        tokio::select! {
            _ = tick.tick() => { end += 200; send(ws, append(end)).await; }
            e = next(ws) => {
                let e = e.expect("socket open until response.done");
                let done = e["type"] == "response.done";
                seen.push(e);
                if done { return seen; }
            }
        }
    }
}

async fn close(ws: &mut Ws) {
    send(ws, json!({"type": "session.close"})).await;
    let t = Instant::now();
    let e = next(ws).await.unwrap();
    assert_eq!(e["type"], "session.closed", "{e}");
    assert!(t.elapsed() < Duration::from_millis(500));
}

fn check_response(events: &[Value]) {
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"response.created"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"response.done"));
    let first_text = kinds
        .iter()
        .position(|k| *k == "response.output_audio_transcript.delta");
    let first_audio = kinds
        .iter()
        .position(|k| *k == "response.output_audio.delta");
    assert!(first_text.unwrap() < first_audio.unwrap(), "{kinds:?}");
    let rid = events[0]["response"]["id"].as_str().unwrap();
    assert_eq!(events[0]["response_id"], rid);
    let mut cum = 0.0;
    let mut bytes = 0usize;
    let mut transcript = String::new();
    for e in events {
        assert_eq!(e["response_id"], rid, "{e}");
        if e["type"] == "response.output_audio_transcript.delta" {
            transcript.push_str(e["delta"].as_str().unwrap());
        }
        if e["type"] == "response.output_audio.delta" {
            assert_eq!(e["sample_rate_hz"], 24000);
            let pcm = base64::engine::general_purpose::STANDARD
                .decode(e["delta"].as_str().unwrap())
                .unwrap();
            assert_eq!(pcm.len() % 2, 0);
            bytes += pcm.len();
            let d = e["metadata"]["audio_duration_ms"].as_f64().unwrap();
            assert!(d > cum, "cumulative duration grows");
            cum = d;
        }
    }
    assert!((cum - bytes as f64 / 48.0).abs() < 0.01, "{cum} vs {bytes}");
    // ~0.065 s per character ± 8 %.
    let expect = TEXT.len() as f64 * 65.0;
    assert!((cum / expect - 1.0).abs() < 0.1, "{cum} ms for {expect}");
    assert_eq!(transcript, TEXT);
}

#[tokio::test]
async fn unprompted_response_in_order_then_closed() {
    let h = spawn(OMNI, "").await;
    let mut ws = connect(&h).await;
    let t = Instant::now();
    let events = one_turn(&mut ws, TEXT).await;
    check_response(&events);
    // Real time at speed 10: ~2.9 s of audio takes well under 2.9 s, but more than 0.
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    send(
        &mut ws,
        json!({"type": "playback.ack", "played_ms": 10, "response_id": "x"}),
    )
    .await;
    send(
        &mut ws,
        json!({"type": "session.event_ack", "server_event_seq": 3}),
    )
    .await;
    close(&mut ws).await;
    assert!(
        next(&mut ws).await.is_none(),
        "socket closed after session.closed"
    );
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn non_duplex_model_gets_unsupported_then_close() {
    let h = spawn("Qwen/Qwen3-TTS-12Hz-1.7B-Base", "").await;
    let mut ws = connect(&h).await;
    let e = next(&mut ws).await.unwrap();
    assert_eq!(e["type"], "error");
    assert_eq!(e["error"]["code"], "unsupported");
    assert!(next(&mut ws).await.is_none());
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn resource_exhausted_fault_then_success() {
    let h = spawn(OMNI, "realtime-exhausted=2,realtime-event-seq").await;
    for _ in 0..2 {
        let mut ws = connect(&h).await;
        send(&mut ws, update(TEXT)).await;
        let e = next(&mut ws).await.unwrap();
        assert_eq!(e["error"]["code"], "resource_exhausted", "{e}");
        assert!(next(&mut ws).await.is_none());
    }
    let mut ws = connect(&h).await;
    let events = one_turn(&mut ws, TEXT).await;
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e["server_event_seq"].as_u64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    assert_eq!(seqs[0], 2, "session.created was event 1");
    close(&mut ws).await;
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn drop_fault_cuts_the_socket_mid_response() {
    let h = spawn(OMNI, "realtime-drop-after-chunks=2").await;
    let mut ws = connect(&h).await;
    send(&mut ws, update(TEXT)).await;
    assert_eq!(next(&mut ws).await.unwrap()["type"], "session.created");
    send(&mut ws, append(200)).await;
    let mut audio = 0;
    while let Some(e) = next(&mut ws).await {
        assert_ne!(e["type"], "response.done");
        audio += usize::from(e["type"] == "response.output_audio.delta");
    }
    assert_eq!(audio, 2);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn client_vanishing_mid_session_leaves_the_server_usable() {
    let h = spawn(OMNI, "").await;
    let mut ws = connect(&h).await;
    send(&mut ws, update(TEXT)).await;
    next(&mut ws).await.unwrap();
    send(&mut ws, append(200)).await;
    assert_eq!(next(&mut ws).await.unwrap()["type"], "response.created");
    drop(ws);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut ws = connect(&h).await;
    check_response(&one_turn(&mut ws, TEXT).await);
    close(&mut ws).await;
    let stats: Value = reqwest::get(format!("{}/sim/stats", h.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["inflight"], 0, "{stats}");
    assert!(stats["cancelled"].as_u64().unwrap() >= 1, "{stats}");
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn concurrent_sessions_share_the_engine() {
    let h = spawn(OMNI, "").await;
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let mut ws = connect(&h).await;
        tasks.push(tokio::spawn(async move {
            let ev = one_turn(&mut ws, TEXT).await;
            close(&mut ws).await;
            ev
        }));
    }
    for t in tasks {
        check_response(&t.await.unwrap());
    }
    let stats: Value = reqwest::get(format!("{}/sim/stats", h.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["completed"], 4, "{stats}");
    assert!(stats["peak_inflight"].as_u64().unwrap() >= 2, "{stats}");
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_events_get_errors_and_the_session_stays_usable() {
    let h = spawn(OMNI, "").await;
    let mut ws = connect(&h).await;
    send(&mut ws, append(200)).await;
    assert_eq!(
        next(&mut ws).await.unwrap()["error"]["code"],
        "session_not_ready"
    );
    ws.send(Message::Text("not json".into())).await.unwrap();
    assert_eq!(
        next(&mut ws).await.unwrap()["error"]["code"],
        "invalid_event"
    );
    ws.send(Message::Binary(vec![1u8, 2, 3].into()))
        .await
        .unwrap();
    assert_eq!(
        next(&mut ws).await.unwrap()["error"]["code"],
        "invalid_event"
    );
    send(&mut ws, json!({"type": "explode"})).await;
    assert_eq!(
        next(&mut ws).await.unwrap()["error"]["code"],
        "unknown_event"
    );
    check_response(&one_turn(&mut ws, TEXT).await);
    close(&mut ws).await;
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn explicit_commit_and_autostart_start_the_response() {
    let h = spawn(OMNI, "").await;
    let mut ws = connect(&h).await;
    send(&mut ws, update(TEXT)).await;
    assert_eq!(next(&mut ws).await.unwrap()["type"], "session.created");
    send(
        &mut ws,
        json!({"type": "input_audio_buffer.commit", "final": true}),
    )
    .await;
    let mut events = Vec::new();
    while let Some(e) = next(&mut ws).await {
        let done = e["type"] == "response.done";
        events.push(e);
        if done {
            break;
        }
    }
    check_response(&events);
    close(&mut ws).await;
    let url = format!("ws://{}/v1/realtime?duplex=1&autostart=1", h.addr);
    let mut ws = tokio_tungstenite::connect_async(url).await.unwrap().0;
    send(&mut ws, update(TEXT)).await;
    assert_eq!(next(&mut ws).await.unwrap()["type"], "session.created");
    assert_eq!(next(&mut ws).await.unwrap()["type"], "response.created");
    h.shutdown().await.unwrap();
}
