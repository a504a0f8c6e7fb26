//! One realtime WebSocket session: the handshake, the unprompted response, the close.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::ws::{Message, WebSocket};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use super::events;
use super::responder::{self, Piece, Responder, TurnInput};
use super::{IDLE_TIMEOUT, LISTEN_MS, MAX_INPUT_AUDIO_MS, MAX_OPEN_SESSIONS, MAX_SESSION};
use crate::http::AppState;

/// How the session was opened.
#[derive(Debug, Clone, Copy)]
pub(super) struct Opts {
    /// `duplex=1` in the query.
    pub duplex: bool,
    /// `autostart=1` in the query.
    pub autostart: bool,
    /// The served model is duplex-served.
    pub served: bool,
}

/// What to do after an event.
enum Flow {
    Go,
    /// Send a close frame and end.
    Close,
    /// Drop the socket without a close frame.
    Drop,
}

/// A response in progress.
struct Active {
    id: String,
    rx: UnboundedReceiver<Piece>,
    pending_text: String,
    transcript: String,
    cum_ms: f64,
}

struct Session {
    st: Arc<AppState>,
    responder: Arc<dyn Responder>,
    socket: WebSocket,
    id: String,
    number: u64,
    seq: Option<u64>,
    created: bool,
    autostart: bool,
    turn: Option<TurnInput>,
    input_ms: f64,
    active: Option<Active>,
    responses: u64,
    audio_deltas: u32,
    /// A MiniCPM-o native-duplex session (`extra_body.minicpmo45_native_duplex` without an
    /// initial text): each committed user turn gets one spoken reply.
    native: bool,
}

/// Runs a session to its end.
pub(super) async fn run(socket: WebSocket, st: Arc<AppState>, opts: Opts) {
    let number = st.realtime.sessions.fetch_add(1, Ordering::SeqCst) + 1;
    let mut s = Session {
        responder: responder::for_state(&st),
        seq: st.cfg.options.faults.realtime_event_seq.then_some(0),
        st,
        socket,
        id: format!("sess_{number:08x}"),
        number,
        created: false,
        autostart: opts.autostart,
        turn: None,
        input_ms: 0.0,
        active: None,
        responses: 0,
        audio_deltas: 0,
        native: false,
    };
    if !opts.duplex || !opts.served {
        let why = if opts.duplex {
            "model-native duplex is not served for this model"
        } else {
            "only model-native duplex sessions (duplex=1) are simulated"
        };
        let _ = s.send(events::error("unsupported", why)).await;
        let _ = s.socket.send(Message::Close(None)).await;
        return;
    }
    let flow = s.serve().await;
    if matches!(flow, Flow::Close) {
        let _ = s.socket.send(Message::Close(None)).await;
    }
    tracing::debug!(session = %s.id, "realtime session ended");
}

async fn next_piece(active: &mut Option<Active>) -> Option<Piece> {
    match active {
        Some(a) => a.rx.recv().await,
        None => std::future::pending().await,
    }
}

impl Session {
    async fn serve(&mut self) -> Flow {
        let deadline = Instant::now() + MAX_SESSION;
        let mut idle = Instant::now() + IDLE_TIMEOUT;
        loop {
            let flow = tokio::select! {
                m = self.socket.recv() => {
                    idle = Instant::now() + IDLE_TIMEOUT;
                    match m {
                        Some(Ok(msg)) => self.on_message(msg).await,
                        _ => Flow::Drop,
                    }
                }
                p = next_piece(&mut self.active) => {
                    idle = Instant::now() + IDLE_TIMEOUT;
                    self.on_piece(p).await
                }
                _ = tokio::time::sleep_until(idle), if self.active.is_none() => {
                    let _ = self.send(events::error("idle_timeout", "no client event for too long")).await;
                    Flow::Close
                }
                _ = tokio::time::sleep_until(deadline) => {
                    let _ = self.send(events::error("session_expired", "the session reached its maximum length")).await;
                    Flow::Close
                }
            };
            if !matches!(flow, Flow::Go) {
                return flow;
            }
        }
    }

    /// Sends one event (numbered when the event-seq switch is on); `Err` when the client
    /// is gone.
    async fn send(&mut self, mut v: Value) -> Result<(), ()> {
        if let Some(n) = self.seq.as_mut() {
            *n += 1;
            v["server_event_seq"] = Value::from(*n);
        }
        self.socket
            .send(Message::Text(v.to_string().into()))
            .await
            .map_err(|_| ())
    }

    async fn send_flow(&mut self, v: Value) -> Flow {
        match self.send(v).await {
            Ok(()) => Flow::Go,
            Err(()) => Flow::Drop,
        }
    }

    async fn on_message(&mut self, msg: Message) -> Flow {
        let text = match msg {
            Message::Text(t) => t,
            Message::Close(_) => return Flow::Drop,
            Message::Ping(_) | Message::Pong(_) => return Flow::Go,
            Message::Binary(_) => {
                return self
                    .send_flow(events::error(
                        "invalid_event",
                        "binary frames are not accepted",
                    ))
                    .await;
            }
        };
        let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else {
            return self
                .send_flow(events::error("invalid_event", "the event is not JSON"))
                .await;
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "session.update" => self.on_update(&v).await,
            "input_audio_buffer.append" => self.on_append(&v).await,
            "input_audio_buffer.commit" if self.native => self.on_native_commit().await,
            "input_audio_buffer.commit" | "response.create" => self.start_response().await,
            "session.close" => {
                let closed = events::session_closed(&self.id);
                let _ = self.send(closed).await;
                Flow::Close
            }
            "playback.ack" if self.native => {
                let item = v.get("item_id").and_then(Value::as_str).unwrap_or_default();
                let item: String = item.chars().take(128).collect();
                let ms = v.get("played_ms").and_then(Value::as_u64).unwrap_or(0);
                self.send_flow(events::playback_acknowledged(&item, ms))
                    .await
            }
            "playback.ack" | "session.event_ack" | "input_audio_buffer.clear" => Flow::Go,
            other => {
                let why = format!(
                    "unknown event type {:?}",
                    other.chars().take(64).collect::<String>()
                );
                self.send_flow(events::error("unknown_event", &why)).await
            }
        }
    }

    async fn on_update(&mut self, v: &Value) -> Flow {
        let session = v.get("session").cloned().unwrap_or(Value::Null);
        let turn = turn_of(&session);
        if self.created {
            if turn.is_some() {
                self.turn = turn;
            }
            let updated = events::session_updated(&self.id);
            return self.send_flow(updated).await;
        }
        let rt = &self.st.realtime;
        let n = rt.handshakes.fetch_add(1, Ordering::SeqCst);
        let exhausted = self
            .st
            .cfg
            .options
            .faults
            .realtime_exhausted
            .is_some_and(|k| n < u64::from(k));
        if exhausted || rt.open.load(Ordering::SeqCst) > MAX_OPEN_SESSIONS {
            let e = events::error("resource_exhausted", "no free realtime session slot");
            let _ = self.send(e).await;
            return Flow::Close;
        }
        self.created = true;
        self.native = turn.is_none() && native_duplex(&session);
        self.turn = turn;
        let model = self.st.cfg.served_name().to_string();
        if let Flow::Drop = self
            .send_flow(events::session_created(&self.id, &model))
            .await
        {
            return Flow::Drop;
        }
        if self.autostart {
            return self.start_response().await;
        }
        Flow::Go
    }

    async fn on_append(&mut self, v: &Value) -> Flow {
        if !self.created {
            let e = events::error("session_not_ready", "send session.update first");
            return self.send_flow(e).await;
        }
        self.input_ms += append_ms(v);
        if self.input_ms > MAX_INPUT_AUDIO_MS {
            let e = events::error("input_audio_buffer_full", "too much input audio");
            let _ = self.send(e).await;
            return Flow::Close;
        }
        if self.input_ms >= LISTEN_MS {
            return self.start_response().await;
        }
        Flow::Go
    }

    /// A native-duplex user turn ended: `input_audio_buffer.committed`, then the reply
    /// (ignored while a reply is still speaking: the `listen_only` overlap policy).
    async fn on_native_commit(&mut self) -> Flow {
        if !self.created || self.active.is_some() {
            return Flow::Go;
        }
        let item = format!("item_in_{:08x}_{}", self.number, self.responses + 1);
        if let Flow::Drop = self.send_flow(events::committed(&item)).await {
            return Flow::Drop;
        }
        self.turn = Some(native_reply(self.number + self.responses));
        self.start_response().await
    }

    /// Starts the response to the pending turn, if there is one and none is running.
    async fn start_response(&mut self) -> Flow {
        if !self.created || self.active.is_some() {
            return Flow::Go;
        }
        let Some(turn) = self.turn.take() else {
            return Flow::Go;
        };
        self.responses += 1;
        let id = format!("resp_{:08x}_{}", self.number, self.responses);
        let rx = self.responder.start(&turn);
        self.active = Some(Active {
            id: id.clone(),
            rx,
            pending_text: String::new(),
            transcript: String::new(),
            cum_ms: 0.0,
        });
        self.send_flow(events::response_created(&id)).await
    }

    async fn on_piece(&mut self, p: Option<Piece>) -> Flow {
        let Some(a) = self.active.as_mut() else {
            return Flow::Go;
        };
        let id = a.id.clone();
        match p {
            Some(Piece::Text(t)) => {
                a.pending_text.push_str(&t);
                Flow::Go
            }
            Some(Piece::Audio(pcm)) => {
                let rate = self.responder.sample_rate().max(1);
                a.cum_ms += (pcm.len() / 2) as f64 * 1000.0 / f64::from(rate);
                let text = std::mem::take(&mut a.pending_text);
                a.transcript.push_str(&text);
                let (audio, said) = if self.native {
                    let a = events::native_audio_delta(&id, &pcm, rate, a.cum_ms);
                    (a, events::native_transcript_delta(&id, &text))
                } else {
                    let a = events::audio_delta(&id, &pcm, rate, a.cum_ms);
                    (a, events::transcript_delta(&id, &text))
                };
                if !text.is_empty()
                    && let Flow::Drop = self.send_flow(said).await
                {
                    return Flow::Drop;
                }
                if let Flow::Drop = self.send_flow(audio).await {
                    return Flow::Drop;
                }
                self.audio_deltas += 1;
                let drop_at = self.st.cfg.options.faults.realtime_drop_after_chunks;
                if drop_at.is_some_and(|n| self.audio_deltas >= n) {
                    tracing::debug!(session = %self.id, "dropping the session (fault)");
                    return Flow::Drop;
                }
                Flow::Go
            }
            Some(Piece::Done) => {
                let transcript = std::mem::take(&mut a.transcript);
                let sent_ms = a.cum_ms.round() as u64;
                self.active = None;
                if !self.native {
                    return self
                        .send_flow(events::response_done(&id, &transcript))
                        .await;
                }
                for v in events::native_audio_done(&id, &transcript) {
                    if let Flow::Drop = self.send_flow(v).await {
                        return Flow::Drop;
                    }
                }
                let done = events::native_response_done(&id, &transcript, sent_ms);
                self.send_flow(done).await
            }
            None => {
                self.active = None;
                let e = events::error("server_error", "the server stopped generating");
                self.send_flow(e).await
            }
        }
    }
}

/// Input audio of one append, ms: `duration_ms` when given, else the base64 payload's
/// length at 16 kHz PCM16 (bounded by the message size, so never huge).
fn append_ms(v: &Value) -> f64 {
    if let Some(d) = v.get("duration_ms").and_then(Value::as_f64)
        && d.is_finite()
        && d >= 0.0
    {
        return d.min(MAX_INPUT_AUDIO_MS);
    }
    let b64 = v.get("audio").and_then(Value::as_str).map_or(0, str::len);
    (b64 / 4 * 3) as f64 / 32.0
}

/// Whether a `session` object asks for MiniCPM-o's native duplex
/// (`extra_body.minicpmo45_native_duplex: true`).
fn native_duplex(session: &Value) -> bool {
    session
        .get("extra_body")
        .and_then(|e| e.get("minicpmo45_native_duplex"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// Replies of the simulated model to a native-duplex user turn (the input audio carries no
/// words the simulator could understand), picked in turn.
const NATIVE_REPLIES: [&str; 4] = [
    "Sure, I can help with that. Let me walk you through it step by step.",
    "That is a good question, and the short answer is yes, it works that way.",
    "I heard you clearly. Here is what I think we should do next about it.",
    "Thanks for asking. The weather today looks calm and a little warmer than usual.",
];

/// The reply spoken to the `n`-th native-duplex turn.
fn native_reply(n: u64) -> TurnInput {
    TurnInput {
        text: NATIVE_REPLIES[(n % NATIVE_REPLIES.len() as u64) as usize].to_string(),
        clone: false,
        max_new_tokens: 2048,
    }
}

/// The turn a `session` object asks for: `extra_body.duplex_initial_user_text`
/// (truncated to [`super::MAX_TEXT_CHARS`]), voice clone when `ref_audio` is present.
fn turn_of(session: &Value) -> Option<TurnInput> {
    let extra = session.get("extra_body")?;
    let text = extra.get("duplex_initial_user_text")?.as_str()?.trim();
    if text.is_empty() {
        return None;
    }
    let text: String = text.chars().take(super::MAX_TEXT_CHARS).collect();
    let clone = extra
        .get("ref_audio")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    let max_new_tokens = extra
        .get("max_new_tokens")
        .and_then(Value::as_u64)
        .map_or(2048, |n| n.clamp(2, 8192) as u32);
    Some(TurnInput {
        text,
        clone,
        max_new_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn append_duration_and_turn() {
        assert_eq!(append_ms(&json!({"duration_ms": 200})), 200.0);
        let audio = "A".repeat(8536); // 6402 bytes of base64 payload ≈ 200 ms
        assert!((append_ms(&json!({ "audio": audio })) - 200.0).abs() < 0.2);
        assert_eq!(append_ms(&json!({"duration_ms": -1})), 0.0);
        let t = turn_of(
            &json!({"extra_body": {"duplex_initial_user_text": " Hi there ",
            "ref_audio": "data:audio/wav;base64,UklG", "max_new_tokens": 99999}}),
        )
        .unwrap();
        assert_eq!(t.text, "Hi there");
        assert!(t.clone);
        assert_eq!(t.max_new_tokens, 8192);
        assert!(turn_of(&json!({"extra_body": {"duplex_initial_user_text": ""}})).is_none());
        assert!(turn_of(&json!({})).is_none());
    }

    #[test]
    fn native_duplex_sessions_and_replies() {
        let native = json!({"extra_body": {"minicpmo45_native_duplex": true}});
        assert!(native_duplex(&native) && turn_of(&native).is_none());
        assert!(!native_duplex(&json!({"extra_body": {}})));
        assert_ne!(native_reply(1).text, native_reply(2).text);
        assert_eq!(native_reply(0).text, native_reply(4).text);
    }

    #[test]
    fn duplex_served_names() {
        assert!(super::super::duplex_served(
            "Qwen/Qwen3-Omni-30B-A3B-Instruct"
        ));
        assert!(super::super::duplex_served("openbmb/MiniCPM-o-4_5"));
        assert!(super::super::duplex_served("Gander-Unit8-vllm"));
        assert!(!super::super::duplex_served(
            "Qwen/Qwen3-TTS-12Hz-1.7B-Base"
        ));
    }
}
