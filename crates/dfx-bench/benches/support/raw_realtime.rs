//! A zero-delay realtime server for the scale benchmark (`/v1/realtime`, the protocol of
//! `native::realtime`): `session.created` at once, and on a session's first
//! `input_audio_buffer.append` the whole response at once (`response.created`, three audio
//! deltas, `response.done`); `session.closed` on `session.close`. Per session it keeps the
//! time between reading that append and writing the first audio delta (`GET /timings`, by
//! session id), so a client's TTFP minus it is the client's overhead (plus the WebSocket
//! frame codec on the server, which is the same for every client). vllm bench 0.30's
//! `openai-realtime-tts` needs nothing more (checked against its `DuplexClient`): it waits
//! for `session.created` (its `session.id` is the key of the timings), appends 200 ms of
//! silence, settles on `response.done`, sends `playback.ack` (ignored here, as by the
//! simulator for a TTS session) and `session.close`; it stamps TTFP on its own clock, as
//! no response carries a metrics event.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use base64::Engine as _;
use serde_json::{Value, json};

/// Audio deltas per response, and bytes of each (100 ms of 24 kHz PCM16).
const DELTAS: usize = 3;
const DELTA_BYTES: usize = 4800;

#[derive(Clone, Default)]
struct Shared {
    /// First-audio delay (written − append read), seconds, by session id.
    timings: Arc<Mutex<HashMap<String, f64>>>,
    sessions: Arc<AtomicU64>,
    /// The base64 audio of one delta.
    audio: Arc<str>,
}

fn mono() -> f64 {
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime writes into the struct we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

async fn upgrade(State(s): State<Shared>, ws: WebSocketUpgrade) -> Response {
    // tungstenite zero-fills its whole read buffer (128 KiB by default) before every read:
    // the server's own cost per session would queue the clients' events behind it.
    ws.read_buffer_size(32 << 10)
        .on_upgrade(move |socket| session(socket, s))
}

/// The `type` of a client event (the rest is not read).
#[derive(serde::Deserialize, Default)]
struct Kind<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: std::borrow::Cow<'a, str>,
}

async fn send(ws: &mut WebSocket, v: Value) -> bool {
    ws.send(Message::Text(v.to_string().into())).await.is_ok()
}

/// One session: answers until the client closes it or the socket ends.
async fn session(mut ws: WebSocket, s: Shared) {
    let id = format!("sess_{}", s.sessions.fetch_add(1, Ordering::Relaxed));
    let mut answered = false;
    while let Some(Ok(msg)) = ws.recv().await {
        let Message::Text(t) = msg else { continue };
        let arrived = mono();
        let v: Kind<'_> = serde_json::from_str(t.as_str()).unwrap_or_default();
        let ok = match &*v.kind {
            "session.update" => {
                send(
                    &mut ws,
                    json!({"type": "session.created", "session": {"id": id}}),
                )
                .await
            }
            "input_audio_buffer.append" if !answered => {
                answered = true;
                respond(&mut ws, &s, &id, arrived).await
            }
            "session.close" => {
                let _ = send(&mut ws, json!({"type": "session.closed"})).await;
                false
            }
            _ => true,
        };
        if !ok {
            return;
        }
    }
}

async fn respond(ws: &mut WebSocket, s: &Shared, id: &str, arrived: f64) -> bool {
    let rid = format!("resp_{id}");
    let created = json!({"type": "response.created", "response_id": rid, "response": {"id": rid}});
    if !send(ws, created).await {
        return false;
    }
    for i in 0..DELTAS {
        // The text `json!` would give, without copying the audio into a `Value` and
        // escaping it again for every delta (base64 needs no escapes; `rid` neither).
        let delta = format!(
            r#"{{"type":"response.output_audio.delta","response_id":"{rid}","delta":"{}","sample_rate_hz":24000,"metadata":{{"audio_duration_ms":{}}}}}"#,
            s.audio,
            (i + 1) * 100
        );
        if ws.send(Message::Text(delta.into())).await.is_err() {
            return false;
        }
        if i == 0 {
            let written = mono();
            s.timings
                .lock()
                .unwrap()
                .insert(id.to_string(), written - arrived);
        }
    }
    send(ws, json!({"type": "response.done", "response_id": rid})).await
}

async fn timings(State(s): State<Shared>) -> axum::Json<HashMap<String, f64>> {
    axum::Json(s.timings.lock().unwrap().clone())
}

async fn stats(State(s): State<Shared>) -> axum::Json<Value> {
    let n = s.sessions.load(Ordering::Relaxed);
    axum::Json(json!({"connections": n, "requests": n}))
}

/// Serves on an ephemeral loopback port (2 runtime threads), prints `http://addr`, and
/// returns when stdin closes.
pub(crate) fn serve() {
    use std::io::Read;
    let (rt, listener) = super::raw_server::bind();
    let pcm = super::native_support::pcm(DELTA_BYTES / 2, true, 0);
    let s = Shared {
        audio: base64::engine::general_purpose::STANDARD.encode(pcm).into(),
        ..Shared::default()
    };
    let app = axum::Router::new()
        .route("/v1/realtime", axum::routing::get(upgrade))
        .route("/timings", axum::routing::get(timings))
        .route("/stats", axum::routing::get(stats))
        .with_state(s);
    // Nagle's algorithm would hold the small events back for the client's delayed ACK.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    rt.spawn(async move { axum::serve(listener, app).await });
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
