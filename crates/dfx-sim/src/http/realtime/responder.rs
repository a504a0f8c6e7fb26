//! Where a realtime response's timing and audio come from: the [`Responder`] seam and its
//! default, [`EngineResponder`], which runs the spoken text through the shared TTS engine
//! (talker + code2wav of the server's profile), so realtime sessions and
//! `/v1/audio/speech` requests compete for the same simulated GPU capacity.
//!
//! Another timing source (an omni profile with a thinker stage, say) implements
//! [`Responder`] and is picked in [`for_state`].

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::http::AppState;
use crate::request::{Delivery, Format, SpeechRequest, Task};
use crate::stream::{Guard, Render};
use crate::{engine, plan};

/// What a turn asks the model to say.
#[derive(Debug, Clone)]
pub(crate) struct TurnInput {
    /// The text to speak (`session.extra_body.duplex_initial_user_text`).
    pub text: String,
    /// Whether the session carried reference audio (voice clone: longer prefill).
    pub clone: bool,
    /// Frame cap (`session.extra_body.max_new_tokens`).
    pub max_new_tokens: u32,
}

/// One piece of a response, in the order the session sends it.
#[derive(Debug, Clone)]
pub(crate) enum Piece {
    /// The transcript part spoken by the next audio piece (may be empty).
    Text(String),
    /// PCM16 mono at [`Responder::sample_rate`].
    Audio(Bytes),
    /// The response is complete.
    Done,
}

/// A source of response timing and audio for realtime sessions.
pub(crate) trait Responder: Send + Sync {
    /// Output sample rate of the audio pieces, Hz.
    fn sample_rate(&self) -> u32;
    /// Starts generating `turn` now; pieces arrive on the channel at the model's pace and
    /// the channel closes after [`Piece::Done`] (or early if the server stops). Dropping
    /// the receiver cancels the generation.
    fn start(&self, turn: &TurnInput) -> mpsc::UnboundedReceiver<Piece>;
}

/// The responder the server uses.
pub(crate) fn for_state(st: &Arc<AppState>) -> Arc<dyn Responder> {
    Arc::new(EngineResponder { st: st.clone() })
}

/// Runs each turn as one job of the server's TTS engine.
pub(crate) struct EngineResponder {
    st: Arc<AppState>,
}

impl EngineResponder {
    fn request(turn: &TurnInput) -> SpeechRequest {
        SpeechRequest {
            input: turn.text.clone(),
            task: if turn.clone {
                Task::Base
            } else {
                Task::CustomVoice
            },
            voice: None,
            format: Format::Pcm,
            delivery: Delivery::Audio,
            speed: 1.0,
            max_new_tokens: turn.max_new_tokens,
            initial_chunk_frames: None,
            clone: turn.clone,
            in_context: false,
            seed: None,
        }
    }
}

impl Responder for EngineResponder {
    fn sample_rate(&self) -> u32 {
        self.st.cfg.profile.sample_rate
    }

    fn start(&self, turn: &TurnInput) -> mpsc::UnboundedReceiver<Piece> {
        let st = &self.st;
        let req = Self::request(turn);
        let (audio, job) = plan::plan(&st.cfg, &req, st.voice_buf.word_count());
        st.stats.enter();
        let (id, rx) = st.engine.submit(job, Instant::now());
        let guard = Guard {
            id,
            engine: st.engine.clone(),
            stats: st.stats.clone(),
            finished: false,
        };
        let render = Render {
            voice: st.voice_buf.clone(),
            plan: audio,
            format: Format::Pcm,
            odd_byte: false,
        };
        let (tx, out) = mpsc::unbounded_channel();
        let words: Vec<String> = turn.text.split_whitespace().map(String::from).collect();
        tokio::spawn(relay(rx, render, guard, words, tx));
        out
    }
}

/// Forwards the engine's chunks as pieces: before each audio chunk, the words it speaks
/// (in proportion to the frames decoded so far; the first chunk carries at least one).
async fn relay(
    mut rx: mpsc::UnboundedReceiver<engine::Emission>,
    render: Render,
    mut guard: Guard,
    words: Vec<String>,
    tx: mpsc::UnboundedSender<Piece>,
) {
    let total = u64::from(render.plan.frames.max(1));
    let mut said = 0usize;
    while let Some(e) = rx.recv().await {
        let upto = u64::from(e.start_frame + e.frames).min(total);
        let mut want = (words.len() as u64 * upto / total) as usize;
        if e.last {
            want = words.len();
        }
        let want = want.max(said.min(words.len())).max(1).min(words.len());
        let text = words
            .get(said..want)
            .map(|w| w.join(" "))
            .unwrap_or_default();
        let text = if said > 0 && !text.is_empty() {
            format!(" {text}")
        } else {
            text
        };
        said = said.max(want);
        if tx.send(Piece::Text(text)).is_err() || tx.send(Piece::Audio(render.chunk(&e))).is_err() {
            return;
        }
        if e.last {
            guard.finished = true;
            let _ = tx.send(Piece::Done);
            return;
        }
    }
}
