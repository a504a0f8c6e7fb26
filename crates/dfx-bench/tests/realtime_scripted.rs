//! The realtime client against a scripted WebSocket server whose events leave at known
//! times after the first append: hand-computed per-turn and per-request figures, event
//! acks and duplicates, `resource_exhausted` retries, a missing `response.created`, a
//! missing `session.closed` (bounded wait).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use base64::Engine as _;
use dfx_bench::native::realtime::metrics::{TurnRecord, request_record, turn_metrics};
use dfx_bench::native::realtime::session::{TurnError, TurnLimits, run_turn};
use dfx_bench::native::record::{Dispatch, Sample};
use serde_json::{Map, Value, json};

#[derive(Clone, Default)]
struct Script {
    /// Every client event received, as (ms since the first append, event).
    seen: Arc<Mutex<Vec<(f64, Value)>>>,
    connections: Arc<AtomicU32>,
}

async fn upgrade(State(s): State<Script>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| serve(socket, s))
}

async fn send(ws: &mut WebSocket, v: Value) {
    let _ = ws.send(Message::Text(v.to_string().into())).await;
}

async fn recv(ws: &mut WebSocket) -> Option<Value> {
    loop {
        match ws.recv().await? {
            Ok(Message::Text(t)) => return serde_json::from_str(t.as_str()).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

fn audio(rid: &str, bytes: usize, cum_ms: u64) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD.encode(vec![0u8; bytes]);
    json!({"type": "response.output_audio.delta", "response_id": rid, "delta": b64,
           "sample_rate_hz": 24000, "metadata": {"audio_duration_ms": cum_ms}})
}

/// The script, chosen by the turn's text: `NORMAL`, `EXHAUST` (the first two
/// connections are refused), `SEQ` (numbered events, one duplicate), `NOCREATED`,
/// `NOCLOSED`, `STALL` (audio stops after the first delta).
async fn serve(mut ws: WebSocket, s: Script) {
    let conn = s.connections.fetch_add(1, Ordering::SeqCst);
    let Some(update) = recv(&mut ws).await else {
        return;
    };
    let text = update["session"]["extra_body"]["duplex_initial_user_text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if text == "EXHAUST" && conn < 2 {
        send(&mut ws, json!({"type": "error", "error": {"type": "server_error", "code": "resource_exhausted", "message": "busy"}})).await;
        return;
    }
    let seq = text == "SEQ";
    let mut n = 0u64;
    let mut out = |mut v: Value| {
        if seq {
            n += 1;
            v["server_event_seq"] = json!(n);
        }
        v
    };
    send(
        &mut ws,
        out(json!({"type": "session.created", "session": {"id": "sess_1"}})),
    )
    .await;
    // Wait for the first append: the script's clock starts there.
    let first = recv(&mut ws).await.unwrap_or_default();
    let t0 = Instant::now();
    s.seen.lock().unwrap().push((0.0, first));
    let at = |ms: u64| tokio::time::sleep_until((t0 + Duration::from_millis(ms)).into());
    {
        let seen = s.seen.clone();
        let (mut tx, mut rx) = futures_util::StreamExt::split(ws);
        let h = tokio::spawn(async move {
            use futures_util::StreamExt;
            while let Some(Ok(Message::Text(t))) = rx.next().await {
                let v: Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                let closing = v["type"] == "session.close";
                seen.lock()
                    .unwrap()
                    .push((t0.elapsed().as_secs_f64() * 1000.0, v));
                if closing {
                    return true;
                }
            }
            false
        });
        let mut events = Vec::new();
        if text != "NOCREATED" {
            events.push((100, out(json!({"type": "response.created", "response_id": "r1", "response": {"id": "r1"}}))));
        }
        events.push((150, out(json!({"type": "response.output_audio_transcript.delta", "response_id": "r1", "delta": "hello world"}))));
        events.push((250, out(audio("r1", 4800, 100))));
        let second = out(audio("r1", 4800, 200));
        events.push((300, second.clone()));
        if seq {
            events.push((310, second)); // a duplicate: same seq, must be ignored
        }
        events.push((
            320,
            out(json!({"type": "response.done", "response_id": "r1"})),
        ));
        if text == "STALL" {
            events.retain(|(ms, _)| *ms <= 250);
        }
        use futures_util::SinkExt;
        for (ms, v) in events {
            at(ms).await;
            let _ = tx.send(Message::Text(v.to_string().into())).await;
        }
        if h.await.unwrap_or(false) && text != "NOCLOSED" {
            let _ = tx
                .send(Message::Text(
                    json!({"type": "session.closed"}).to_string().into(),
                ))
                .await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

fn start() -> (tokio::runtime::Runtime, String, Script) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let s = Script::default();
    let app = axum::Router::new()
        .route("/v1/realtime", axum::routing::get(upgrade))
        .with_state(s.clone());
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, app).await });
    (
        rt,
        format!("ws://{addr}/v1/realtime?duplex=1&model=m&autostart=0"),
        s,
    )
}

fn update(text: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), json!("session.update"));
    m.insert(
        "session".into(),
        json!({"model": "m", "extra_body": {"duplex_initial_user_text": text}}),
    );
    m
}

fn limits() -> TurnLimits {
    TurnLimits {
        close_wait: Duration::from_millis(300),
        ..TurnLimits::default()
    }
}

fn near(x: f64, want: f64, tol: f64, what: &str) {
    assert!((x - want).abs() <= tol, "{what}: {x} vs {want} ± {tol}");
}

#[test]
fn scripted_turn_gives_hand_computed_figures() {
    let (rt, url, s) = start();
    let o = rt.block_on(run_turn(&url, &update("NORMAL"), &limits()));
    assert!(o.error.is_none(), "{:?}", o.error);
    assert!(o.closed);
    let m = turn_metrics(&o).unwrap();
    near(m.ttft_ms.unwrap(), 150.0, 25.0, "ttft");
    near(m.ttfp_ms, 250.0, 25.0, "ttfp");
    near(m.audio_generation_ms, 300.0, 25.0, "generation");
    assert_eq!(m.audio_duration_ms, 200.0, "from metadata");
    near(m.rtf, 1.5, 0.08, "rtf");
    assert_eq!(m.output_tokens, 2, "two transcript words");
    assert_eq!(
        o.appends, 2,
        "appends at 0 and 200 ms, stopped by response.done at 320 ms"
    );
    let seen = s.seen.lock().unwrap().clone();
    let kinds: Vec<&str> = seen
        .iter()
        .filter_map(|(_, v)| v["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "input_audio_buffer.append",
            "input_audio_buffer.append",
            "playback.ack",
            "session.close"
        ]
    );
    near(seen[1].0, 200.0, 25.0, "second append in real time");
    assert_eq!(seen[1].1["audio_end_ms"], 400);
    assert_eq!(seen[2].1["played_ms"], 200);
    assert_eq!(seen[2].1["item_id"], "item_r1");
}

#[test]
fn request_of_two_turns_sums_durations_and_means_latencies() {
    let (rt, url, _s) = start();
    let start = Instant::now();
    let (a, pcm) = TurnRecord::new(
        0,
        "u0",
        &rt.block_on(run_turn(&url, &update("NORMAL"), &limits())),
        start,
    );
    let (b, _) = TurnRecord::new(
        1,
        "u1",
        &rt.block_on(run_turn(&url, &update("NORMAL"), &limits())),
        start,
    );
    let end = Instant::now();
    let d = Dispatch {
        index: 0,
        warmup: false,
        planned: start,
        dispatched: start,
        slot: start,
        saturated: None,
    };
    let sample = Sample {
        request_id: Some("bench-0".into()),
        sample_id: "u0".into(),
        text_len: 12,
        quality: None,
    };
    let r = request_record(
        &d,
        sample,
        "seed-tts-bench-0".into(),
        vec![a, b],
        pcm,
        (start, end),
        start,
    );
    assert!(r.base.end.ok);
    assert_eq!(r.base.audio_s, 0.4);
    assert_eq!(r.base.audio_frames, 9600);
    near(r.base.ttfp_s.unwrap(), 0.25, 0.025, "mean ttfp");
    near(r.ttft_s, 0.15, 0.025, "mean ttft");
    near(r.base.rtf.unwrap(), 1.5, 0.08, "mean rtf");
    near(
        r.base.e2el_s.unwrap(),
        (end - start).as_secs_f64(),
        1e-9,
        "e2el spans both sessions",
    );
    assert!(r.base.e2el_s.unwrap() > 0.6, "two turns of > 320 ms each");
    assert_eq!(r.output_tokens, 4);
    assert_eq!(r.turns[1].audio_bytes, [4800, 4800]);
}

#[test]
fn event_seqs_are_acked_and_duplicates_dropped() {
    let (rt, url, s) = start();
    let o = rt.block_on(run_turn(&url, &update("SEQ"), &limits()));
    assert!(o.error.is_none(), "{:?}", o.error);
    let r = o.selected().unwrap();
    assert_eq!(r.bytes, 9600, "the duplicate delta was dropped");
    let seen = s.seen.lock().unwrap().clone();
    let acks: Vec<u64> = seen
        .iter()
        .filter(|(_, v)| v["type"] == "session.event_ack")
        .map(|(_, v)| v["server_event_seq"].as_u64().unwrap())
        .collect();
    // session.created (1) is acked right after the handshake, before the first append.
    assert_eq!(
        acks,
        [1, 2, 3, 4, 5, 5, 6],
        "every seq acked, the duplicate too"
    );
    assert!(
        seen.iter()
            .all(|(_, v)| v["type"] != "session.event_ack" || v.get("event_id").is_none())
    );
}

#[test]
fn resource_exhausted_is_retried_with_backoff() {
    let (rt, url, s) = start();
    let o = rt.block_on(run_turn(&url, &update("EXHAUST"), &limits()));
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!(o.attempts, 3);
    assert_eq!(s.connections.load(Ordering::SeqCst), 3);
    let waited = (o.turn_start.unwrap() - o.started).as_secs_f64();
    assert!(waited >= 0.75, "0.25 s then 0.5 s of backoff, got {waited}");
    let m = turn_metrics(&o).unwrap();
    near(m.ttfp_ms, 250.0, 25.0, "ttfp excludes the handshake");
}

#[test]
fn exhausted_beyond_the_retry_window_fails_the_handshake() {
    let (rt, url, _s) = start();
    let lim = TurnLimits {
        retry_for: Duration::from_millis(100),
        ..limits()
    };
    let o = rt.block_on(run_turn(&url, &update("EXHAUST"), &lim));
    let (class, msg) = o.error.clone().unwrap();
    assert_eq!(class, TurnError::Handshake);
    assert!(msg.contains("resource_exhausted"), "{msg}");
    assert!(o.turn_start.is_none());
}

#[test]
fn missing_response_created_fails_the_turn() {
    let (rt, url, _s) = start();
    let o = rt.block_on(run_turn(&url, &update("NOCREATED"), &limits()));
    let (class, msg) = turn_metrics(&o).unwrap_err();
    assert_eq!(class, TurnError::NoAudio);
    assert!(msg.contains("response.created"), "{msg}");
}

#[test]
fn missing_session_closed_waits_only_the_bound() {
    let (rt, url, _s) = start();
    let o = rt.block_on(run_turn(&url, &update("NOCLOSED"), &limits()));
    assert!(o.error.is_none());
    assert!(!o.closed);
    let total = (o.end - o.turn_start.unwrap()).as_secs_f64();
    assert!(
        (0.6..1.0).contains(&total),
        "320 ms of turn + 300 ms close wait, got {total}"
    );
    assert!(
        turn_metrics(&o).is_ok(),
        "a missing session.closed fails nothing"
    );
}

#[test]
fn refused_connection_is_a_transport_failure() {
    let o = tokio::runtime::Runtime::new().unwrap().block_on(run_turn(
        "ws://127.0.0.1:9/v1/realtime",
        &update("NORMAL"),
        &limits(),
    ));
    assert_eq!(o.error.unwrap().0, TurnError::Transport);
}

#[test]
fn audio_that_stops_fails_the_turn_as_stalled() {
    let (rt, url, _s) = start();
    let lim = TurnLimits {
        stall: dfx_bench::native::stall::StallRule {
            window: Duration::from_millis(500),
            floor: 64,
            in_a_row: 3,
        },
        ..limits()
    };
    let started = Instant::now();
    let o = rt.block_on(run_turn(&url, &update("STALL"), &lim));
    let (class, msg) = o.error.clone().expect("the turn stalled");
    assert_eq!(class, TurnError::Stall, "{msg}");
    assert!(msg.contains("below the floor of 64 bytes"), "{msg}");
    // Not the 30 s of appends nor the 180 s wait for response.done.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}
