//! One native-duplex session (`docs/bench.md` ("Native duplex")): one WebSocket, the
//! `session.update` handshake, the start gate shared with the trial's other sessions,
//! then `turns` turns (the clip in 200 ms appends, paced in real time when
//! `realtime_input`, the final commit, the response, its playback ack), then
//! `session.close`. Every wait is bounded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::Barrier;
use tokio::time::Instant as TInstant;

use crate::native::lapse::TimeLapse;
use tokio_tungstenite::tungstenite::Message;

use super::metrics::{Resp, TurnAt, TurnRecord, turn_record};
use super::protocol as p;
use crate::native::error::WsError;
use crate::native::ws::{MAX_MESSAGE, Ws, connect};

/// Responses tracked per session at most.
const MAX_RESPONSES: usize = 4096;

/// The bounds and shape of a session.
#[derive(Debug, Clone)]
pub(crate) struct SessionSpec {
    /// The session's WebSocket address ([`p::session_url`]).
    pub url: String,
    pub model: String,
    pub session_id: String,
    pub turns: usize,
    /// Pace the appends at the audio's own rate (upstream's `realtime_input`).
    pub realtime_input: bool,
    /// Upstream's `timeout_s` (default 180): each wait of a turn.
    pub timeout: Duration,
    /// Wait for `session.created` and `session.closed` (upstream: 20 s).
    pub handshake: Duration,
    /// The clip of every turn (PCM16, 16 kHz).
    pub clip: Arc<Vec<u8>>,
    /// `realtime_input` paces the clip at K times its rate when time-lapsed.
    pub lapse: TimeLapse,
}

/// Everything one session did.
#[derive(Debug)]
pub struct SessionOutcome {
    pub session: usize,
    pub session_id: String,
    /// Connect + `session.created`, seconds.
    pub handshake_s: Option<f64>,
    pub turns: Vec<TurnRecord>,
    pub closed: bool,
    /// The first failure: class (`error_counts` key) and message.
    pub error: Option<(&'static str, String)>,
}

struct Conn {
    ws: Ws,
    responses: Vec<Resp>,
    /// Response ids whose playback history the server committed.
    committed: Vec<String>,
    closed: bool,
    created: bool,
    server_error: Option<String>,
    rate: u32,
}

enum Wait {
    Ok,
    Failed(&'static str, String),
}

impl Conn {
    async fn send(&mut self, text: String) -> Result<(), WsError> {
        self.ws
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| WsError::Send(Box::new(e)))
    }

    fn find(&mut self, id: Option<&str>) -> Option<&mut Resp> {
        let id = id?;
        self.responses.iter_mut().find(|r| r.id == id)
    }

    /// Applies one server event received at `now`.
    fn on_event(&mut self, v: &Value, now: Instant) {
        let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
        let rid = v
            .get("response_id")
            .and_then(Value::as_str)
            .or_else(|| v.get("response")?.get("id")?.as_str())
            .map(String::from);
        match kind {
            "session.created" => self.created = true,
            "session.closed" => self.closed = true,
            "response.created" => {
                if let Some(id) = rid.filter(|_| self.responses.len() < MAX_RESPONSES)
                    && self.find(Some(&id)).is_none()
                {
                    self.responses.push(Resp::new(id, now, self.rate));
                }
            }
            "response.done" => {
                let sent = p::playback_sent_ms(v);
                if let Some(r) = self.find(rid.as_deref()) {
                    r.done.get_or_insert(now);
                    r.sent_ms = sent;
                }
            }
            "playback.acknowledged" => {
                let ids: Vec<String> = self.responses.iter().map(|r| r.id.clone()).collect();
                for id in ids {
                    if p::history_committed(v, &id) && !self.committed.contains(&id) {
                        self.committed.push(id);
                    }
                }
            }
            "error" => {
                let (code, message) = crate::native::realtime::protocol::error_of(v);
                self.server_error
                    .get_or_insert(format!("server error: {code}: {message}"));
            }
            k if p::is_text_delta(k) => {
                let n = v.get("delta").and_then(Value::as_str).map_or(0, str::len);
                if let Some(r) = self.find(rid.as_deref()).filter(|_| n > 0) {
                    r.first_text.get_or_insert(now);
                    r.transcript_chars += n;
                }
            }
            k if p::is_audio_delta(k) => self.on_audio(v, rid.as_deref(), now),
            _ => {}
        }
    }

    fn on_audio(&mut self, v: &Value, rid: Option<&str>, now: Instant) {
        let rate = v
            .get("sample_rate_hz")
            .and_then(Value::as_u64)
            .filter(|r| (1..=384_000).contains(r));
        if let Some(rate) = rate {
            self.rate = rate as u32;
        }
        let n = p::audio_delta_bytes(v).unwrap_or(0);
        let meta = v
            .get("metadata")
            .and_then(|m| m.get("audio_duration_ms"))
            .and_then(Value::as_f64)
            .filter(|m| m.is_finite() && *m >= 0.0);
        let current = self.rate;
        let Some(r) = self.find(rid) else { return };
        if n == 0 {
            return;
        }
        r.rate = current;
        r.first_audio.get_or_insert(now);
        r.last_audio = Some(now);
        r.bytes += n as u64;
        r.deltas += 1;
        if let Some(ms) = meta {
            r.meta_ms = Some(r.meta_ms.map_or(ms, |m| m.max(ms)));
        }
    }

    /// Reads events until `deadline` (an event, a close or the deadline ends a read).
    /// `Err` when the connection ended.
    async fn read_until(&mut self, deadline: TInstant) -> Result<(), WsError> {
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) => return Ok(()),
                Ok(None) => return Err(WsError::Closed),
                Ok(Some(Err(e))) => return Err(WsError::Lost(Box::new(e))),
                Ok(Some(Ok(Message::Text(t)))) => {
                    let now = Instant::now();
                    if let Ok(v) = serde_json::from_str::<Value>(t.as_str()) {
                        self.on_event(&v, now);
                    }
                }
                Ok(Some(Ok(Message::Close(_)))) => {
                    return Err(WsError::Closed);
                }
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// Reads events until `done` holds, a server error, or `timeout` passed (`what` names
    /// the awaited event in the failure).
    async fn wait_for(
        &mut self,
        timeout: Duration,
        what: &str,
        done: impl Fn(&Conn) -> bool,
    ) -> Wait {
        let deadline = TInstant::now() + timeout;
        loop {
            if let Some(e) = self.server_error.clone() {
                return Wait::Failed("server_error", e);
            }
            if done(self) {
                return Wait::Ok;
            }
            if TInstant::now() >= deadline {
                return Wait::Failed("timeout", format!("no {what} within {timeout:?}"));
            }
            let step = (TInstant::now() + Duration::from_millis(50)).min(deadline);
            if let Err(e) = self.read_until(step).await {
                return Wait::Failed("transport", e.to_string());
            }
        }
    }
}

/// Runs session `index` of a trial whose turns are timed from `base`; `gate` holds every
/// session of the trial until all are created (upstream's synchronized start; bounded
/// by `min(timeout, 30 s)`).
pub(crate) async fn run_session(
    spec: &SessionSpec,
    at: TurnAt,
    gate: Arc<Barrier>,
) -> SessionOutcome {
    let mut out = SessionOutcome {
        session: at.session,
        session_id: spec.session_id.clone(),
        handshake_s: None,
        turns: Vec::new(),
        closed: false,
        error: None,
    };
    let opened = open(spec).await;
    let gate_wait = spec.timeout.min(Duration::from_secs(30));
    let released = tokio::time::timeout(gate_wait, gate.wait()).await.is_ok();
    let mut c = match opened {
        Ok((c, s)) => {
            out.handshake_s = Some(spec.lapse.to_real_s(s));
            c
        }
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    if !released {
        out.error = Some((
            "handshake",
            format!("synchronized start timed out after {gate_wait:?}"),
        ));
    }
    for turn in 0..spec.turns {
        if out.error.is_some() {
            break;
        }
        let at = TurnAt { turn, ..at };
        let rec = run_turn(&mut c, spec, at).await;
        if let Some(e) = &rec.error {
            out.error = Some((error_class(e), e.clone()));
        }
        out.turns.push(rec);
    }
    close(&mut c, spec, &mut out).await;
    out
}

fn error_class(msg: &str) -> &'static str {
    ["server_error", "timeout", "transport"]
        .into_iter()
        .find(|k| msg.starts_with(k))
        .unwrap_or("no_audio")
}

async fn open(spec: &SessionSpec) -> Result<(Conn, f64), (&'static str, String)> {
    let t = Instant::now();
    let ws = connect(&spec.url, MAX_MESSAGE, spec.handshake)
        .await
        .map_err(|e| ("transport", e.to_string()))?;
    let mut c = Conn {
        ws,
        responses: Vec::new(),
        committed: Vec::new(),
        closed: false,
        created: false,
        server_error: None,
        rate: p::OUTPUT_RATE_HZ,
    };
    c.send(p::session_update(&spec.model, &spec.session_id))
        .await
        .map_err(|e| ("transport", e.to_string()))?;
    match c
        .wait_for(spec.handshake, "session.created", |c| c.created)
        .await
    {
        Wait::Ok => Ok((c, t.elapsed().as_secs_f64())),
        Wait::Failed(_, e) => Err(("handshake", format!("handshake failed: {e}"))),
    }
}

/// Streams the clip in [`p::CHUNK_MS`] appends (reading events between them), then
/// commits.
async fn stream_clip(c: &mut Conn, spec: &SessionSpec) -> Result<Instant, WsError> {
    let bytes = (u64::from(p::INPUT_RATE_HZ) * 2 * p::CHUNK_MS / 1000) as usize;
    let start = TInstant::now();
    let mut end_ms = 0u64;
    for chunk in spec.clip.chunks(bytes.max(2)) {
        let ms = chunk.len() as u64 * 1000 / (u64::from(p::INPUT_RATE_HZ) * 2);
        end_ms += ms;
        c.send(p::append(chunk, ms, end_ms)).await?;
        if spec.realtime_input {
            c.read_until(start + spec.lapse.to_wall(Duration::from_millis(end_ms)))
                .await?;
        }
    }
    let commit = Instant::now();
    c.send(p::commit()).await?;
    Ok(commit)
}

async fn run_turn(c: &mut Conn, spec: &SessionSpec, at: TurnAt) -> TurnRecord {
    let before = c.responses.len();
    let commit = match stream_clip(c, spec).await {
        Ok(t) => t,
        Err(e) => return turn_record(at, Instant::now(), None, Some(format!("transport: {e}"))),
    };
    let fail = |c: &Conn, class: &str, e: String| {
        let r = c.responses.get(before);
        turn_record(at, commit, r, Some(format!("{class}: {e}")))
    };
    let t = spec.timeout;
    if let Wait::Failed(k, e) = c
        .wait_for(t, "response.created", |c| c.responses.len() > before)
        .await
    {
        return fail(c, k, e);
    }
    let eligible = |c: &Conn| c.responses[before..].iter().position(Resp::eligible);
    if let Wait::Failed(k, e) = c
        .wait_for(t, "completed response with audio and transcript", |c| {
            eligible(c).is_some()
        })
        .await
    {
        return fail(c, k, e);
    }
    let i = before + eligible(c).unwrap_or(0);
    let (id, sent) = (c.responses[i].id.clone(), c.responses[i].sent_ms);
    if let Some(ms) = sent {
        if let Err(e) = c.send(p::playback_ack(&id, ms)).await {
            return fail(c, "transport", e.to_string());
        }
        if let Wait::Failed(k, e) = c
            .wait_for(t, "playback history commit", |c| c.committed.contains(&id))
            .await
        {
            return fail(c, k, e);
        }
    }
    turn_record(at, commit, Some(&c.responses[i]), None)
}

async fn close(c: &mut Conn, spec: &SessionSpec, out: &mut SessionOutcome) {
    if c.send(p::session_close()).await.is_ok() {
        let _ = c
            .wait_for(spec.handshake, "session.closed", |c| c.closed)
            .await;
    }
    out.closed = c.closed;
    if !c.closed && out.error.is_none() {
        out.error = Some((
            "close",
            format!("no session.closed within {:?}", spec.handshake),
        ));
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), c.ws.close(None)).await;
}
