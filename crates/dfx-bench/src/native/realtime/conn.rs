//! A realtime session's socket: client events out, server events in (acks of numbered
//! events, duplicates dropped); audio deltas read by [`event::audio_delta`] without a
//! `serde_json::Value`, everything else as a `Value`.

use std::collections::HashSet;
use std::time::Instant;

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use super::event;
use super::protocol as p;
use crate::native::error::WsError;
use crate::native::ws::Ws;

/// `server_event_seq`s remembered for duplicate detection (then forgotten and restarted).
const MAX_SEQS: usize = 1 << 20;

pub(super) enum Ev {
    Json(Value),
    /// An audio delta read by [`event::audio_delta`]; its audio is in [`Reader::pcm`].
    Audio(AudioEv),
    Ended(String),
}

/// An audio delta as `session::on_audio` takes it.
pub(super) struct AudioEv {
    /// When it was read (before decoding, as the `Value` path stamps it).
    pub(super) at: Instant,
    pub(super) response_id: Option<String>,
    /// Decoded bytes at the start of [`Reader::pcm`]; `None` when its base64 was invalid.
    pub(super) pcm_len: Option<usize>,
    pub(super) sample_rate_hz: Option<u64>,
    pub(super) meta_ms: Option<f64>,
}

/// Server events from their text: acks, duplicates, the audio buffer.
#[derive(Default)]
pub(super) struct Reader {
    seen: HashSet<u64>,
    /// `server_event_seq`s read but not yet acknowledged.
    acks: Vec<u64>,
    /// The last audio delta's decoded bytes (the buffer is reused, grown as needed).
    pub(super) pcm: Vec<u8>,
}

impl Reader {
    /// The event of a text message; `None` when it is not JSON or repeats a seq. A numbered
    /// event queues its ack.
    pub(super) fn read(&mut self, text: &str) -> Option<Ev> {
        if let Some(d) = event::audio_delta(text) {
            if self.repeated(d.seq) {
                return None;
            }
            let at = Instant::now();
            let pcm_len = self.decode(d.delta.as_deref().unwrap_or_default());
            return Some(Ev::Audio(AudioEv {
                at,
                response_id: d.response_id.map(String::from),
                pcm_len,
                sample_rate_hz: d.sample_rate_hz,
                meta_ms: d.meta_ms,
            }));
        }
        let v = serde_json::from_str::<Value>(text).ok()?;
        if self.repeated(v.get("server_event_seq").and_then(Value::as_u64)) {
            return None;
        }
        Some(Ev::Json(v))
    }

    /// Queues `seq`'s ack; `true` when it was seen before (the event is dropped).
    fn repeated(&mut self, seq: Option<u64>) -> bool {
        let Some(seq) = seq else { return false };
        if self.acks.len() < 4096 {
            self.acks.push(seq);
        }
        if self.seen.len() >= MAX_SEQS {
            self.seen.clear();
        }
        !self.seen.insert(seq)
    }

    /// Decodes `b64` into [`Reader::pcm`] (as `STANDARD.decode` does, without a new
    /// buffer): the decoded length, `None` when it is not base64.
    fn decode(&mut self, b64: &str) -> Option<usize> {
        let need = base64::decoded_len_estimate(b64.len());
        if self.pcm.len() < need {
            self.pcm.resize(need, 0);
        }
        base64::engine::general_purpose::STANDARD
            .decode_slice(b64, &mut self.pcm)
            .ok()
    }
}

pub(super) struct Conn {
    pub(super) ws: Ws,
    pub(super) rd: Reader,
}

impl Conn {
    pub(super) fn new(ws: Ws) -> Self {
        Conn {
            ws,
            rd: Reader::default(),
        }
    }

    pub(super) async fn send(&mut self, text: String) -> Result<(), WsError> {
        self.ws
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| WsError::Send(Box::new(e)))
    }

    /// Queues `text` to leave with the next [`Conn::send`], in the same write.
    pub(super) async fn queue(&mut self, text: String) -> Result<(), WsError> {
        self.ws
            .feed(Message::Text(text.into()))
            .await
            .map_err(|e| WsError::Send(Box::new(e)))
    }

    /// Sends the pending `session.event_ack`s.
    pub(super) async fn flush_acks(&mut self) -> Result<(), WsError> {
        for seq in std::mem::take(&mut self.rd.acks) {
            self.send(p::event_ack(seq)).await?;
        }
        Ok(())
    }

    /// The next new JSON event ([`Reader::read`]; its acks are sent by
    /// [`Conn::flush_acks`]). Cancel-safe: its only await is the socket read, so a
    /// `select!` losing the race loses no event.
    pub(super) async fn next(&mut self) -> Ev {
        loop {
            let t = match self.ws.next().await {
                None => return Ev::Ended("connection closed by the server".into()),
                Some(Err(e)) => return Ev::Ended(format!("connection lost: {e}")),
                Some(Ok(Message::Text(t))) => t,
                Some(Ok(Message::Close(_))) => {
                    return Ev::Ended("connection closed by the server".into());
                }
                Some(Ok(_)) => continue,
            };
            if let Some(ev) = self.rd.read(t.as_str()) {
                return ev;
            }
        }
    }

    /// [`Conn::next`], then the acks it queued.
    pub(super) async fn next_acked(&mut self) -> Ev {
        let ev = self.next().await;
        match self.flush_acks().await {
            Ok(()) => ev,
            Err(e) => Ev::Ended(e.to_string()),
        }
    }
}
