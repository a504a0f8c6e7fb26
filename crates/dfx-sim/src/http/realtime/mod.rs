//! `GET /v1/realtime` (WebSocket): the model-native duplex sessions of vllm-omni 0.30
//! (`docs/simulator.md` ("Realtime")). A client opens
//! `/v1/realtime?duplex=1&model=M&autostart=0`, sends `session.update` (answered by
//! `session.created`), then streams `input_audio_buffer.append` silence; the server starts
//! the response on its own (no commit, no VAD) once it has heard [`LISTEN_MS`] of input:
//! `response.created`, transcript and audio deltas at the model's pace (timing from a
//! [`responder::Responder`]), `response.done`. `session.close` → `session.closed`.
//! A MiniCPM-o native-duplex session (`extra_body.minicpmo45_native_duplex`, no initial
//! text) instead answers each committed user turn with a spoken reply, in the event names
//! of vllm-omni's MiniCPM-o duplex driver (`response.audio.delta`, …), and acknowledges
//! playback.
//!
//! Bounds: message and frame size, session length, buffered input audio, an idle timeout
//! and a cap on open sessions (beyond it, `resource_exhausted`).

pub(crate) mod events;
pub(crate) mod responder;
mod session;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use dfx_core::lenient::is_on;
use dfx_core::models::model_key;
use serde::Deserialize;

use crate::http::AppState;

/// Largest client message (a `session.update` carries the reference clip as a data URL).
pub(crate) const MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;
/// Longest a session may stay open.
pub(crate) const MAX_SESSION: Duration = Duration::from_secs(3600);
/// A session with no client message and no response in progress for this long is closed.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Most input audio a session may append, milliseconds (10 minutes).
pub(crate) const MAX_INPUT_AUDIO_MS: f64 = 600_000.0;
/// Most sessions open at once; a further `session.update` gets `resource_exhausted`.
pub(crate) const MAX_OPEN_SESSIONS: usize = 1024;
/// Input audio the model listens to before it starts answering, milliseconds (the first
/// 200 ms append of the bench starts the response).
pub(crate) const LISTEN_MS: f64 = 200.0;
/// Longest `duplex_initial_user_text`, characters.
pub(crate) const MAX_TEXT_CHARS: usize = crate::request::MAX_INPUT_CHARS;

/// Counters shared by every realtime session of an instance.
#[derive(Debug, Default)]
pub(crate) struct RealtimeState {
    /// `session.update` handshakes seen (the `realtime-exhausted` fault counts these).
    pub handshakes: AtomicU64,
    /// Sessions ever opened (ids).
    pub sessions: AtomicU64,
    /// Sessions open now.
    pub open: AtomicUsize,
}

/// The query of `/v1/realtime`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RealtimeQuery {
    /// `1` for a model-native duplex session.
    pub duplex: Option<String>,
    /// The model the client wants (informational; the served model answers).
    pub model: Option<String>,
    /// `1`: start the response right after `session.created`, without waiting for input.
    pub autostart: Option<String>,
}

/// Whether a model (or profile) name stands for a duplex-served checkpoint: Qwen3-Omni,
/// Qwen2.5-Omni, MiniCPM-o, Gander (anything whose last path component contains `omni`,
/// `minicpm-o` or `gander`, case-insensitively).
pub(crate) fn duplex_served(name: &str) -> bool {
    let last = model_key(name);
    ["omni", "minicpm-o", "gander"]
        .iter()
        .any(|k| last.contains(k))
}

/// The route handler: refuses before the upgrade when the server is not ready, else
/// upgrades with the message and frame bounds and runs the session.
pub(crate) async fn handler(
    State(st): State<Arc<AppState>>,
    Query(q): Query<RealtimeQuery>,
    ws: WebSocketUpgrade,
) -> Response {
    if let Err(e) = st.check_ready() {
        return e.into_response();
    }
    let cfg = &st.cfg;
    let served = duplex_served(&cfg.options.model)
        || duplex_served(cfg.served_name())
        || duplex_served(cfg.profile.name);
    let opts = session::Opts {
        duplex: is_on(q.duplex.as_deref()),
        autostart: is_on(q.autostart.as_deref()),
        served,
    };
    if let Some(m) = &q.model {
        tracing::debug!("realtime session requested for model {m:?}");
    }
    ws.max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| async move {
            st.realtime.open.fetch_add(1, Ordering::SeqCst);
            session::run(socket, st.clone(), opts).await;
            st.realtime.open.fetch_sub(1, Ordering::SeqCst);
        })
}
