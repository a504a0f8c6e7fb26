//! Chat completion bodies: the SSE stream (role chunk → text chunks → audio chunks, each
//! content chunk with a top-level `modality`; final usage chunk; `data: [DONE]`) and the
//! non-streaming JSON, built from the engine's emissions as they arrive.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::engine::{OmniEmission, OmniOutput};
use super::profile::OMNI_FRAME_RATE_HZ;
use crate::audio::{AudioPlan, VoiceBuffer, wav_header};

/// A chat request in flight.
pub(crate) type OmniGuard = crate::driver::InFlight<super::engine::OmniEngine>;

/// Everything a body needs besides the emissions.
pub(crate) struct ChatCtx {
    pub id: String,
    pub created: u64,
    pub model: String,
    pub prompt_tokens: u64,
    pub include_usage: bool,
    pub continuous_usage: bool,
    pub want_audio: bool,
    pub stage_metrics: bool,
    pub text_finish: &'static str,
    pub draw: u64,
    pub total_frames: u32,
    pub voice: Arc<VoiceBuffer>,
    pub speed: f64,
    pub arrived: Instant,
    pub stall_after: Option<u32>,
    pub truncate_after: Option<u32>,
}

const WORDS: &[&str] = &[
    " the", " sound", " of", " a", " river", " and", " light", " over", " quiet", " hills", " we",
    " can", " hear", " it", " now", ",", " then", " more", " voices", " join", ".",
];

/// The text piece of token `i` (deterministic in the request draw).
pub(crate) fn piece(draw: u64, i: u32) -> &'static str {
    WORDS[((draw >> 7).wrapping_add(u64::from(i) * 7) % WORDS.len() as u64) as usize]
}

/// Timings seen so far, simulated milliseconds since arrival.
#[derive(Default)]
struct Seen {
    text_ms: Vec<f64>,
    tokens: u32,
    first_audio_ms: Option<f64>,
    last_audio_ms: f64,
    frames: u64,
}

impl ChatCtx {
    fn sim_ms(&self) -> f64 {
        self.arrived.elapsed().as_secs_f64() * 1000.0 * self.speed
    }

    fn usage(&self, completion: u32) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "total_tokens": self.prompt_tokens + u64::from(completion),
            "completion_tokens": completion,
        })
    }

    fn chunk(&self, choices: Value, modality: Option<&str>) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("id".into(), json!(self.id));
        m.insert("object".into(), json!("chat.completion.chunk"));
        m.insert("created".into(), json!(self.created));
        m.insert("model".into(), json!(self.model));
        m.insert("choices".into(), choices);
        if let Some(md) = modality {
            m.insert("modality".into(), json!(md));
        }
        m
    }

    /// A standalone mono 16-bit WAV of frames `[start, start + frames)`.
    pub(crate) fn wav(&self, start: u32, frames: u32) -> Vec<u8> {
        let plan = AudioPlan {
            frames: self.total_frames,
            samples_per_frame: (f64::from(self.voice.sample_rate) / OMNI_FRAME_RATE_HZ) as u32,
            leading_silence_samples: 0,
            word: (self.draw % 997) as usize,
        };
        let (from, to) = plan.chunk_samples(start, frames);
        let mut buf = BytesMut::with_capacity(44 + ((to - from) * 2) as usize);
        buf.extend_from_slice(&wav_header(self.voice.sample_rate, (to - from) * 2));
        self.voice.render(&plan, from, to, &mut buf);
        buf.to_vec()
    }

    fn stage_metrics(&self, s: &Seen, text_done: bool) -> Value {
        let ttft = s.text_ms.first().copied().unwrap_or(0.0);
        let itls: Vec<f64> = s
            .text_ms
            .windows(2)
            .map(|w| ((w[1] - w[0]) * 1000.0).round() / 1000.0)
            .collect();
        let tpot = if itls.is_empty() {
            0.0
        } else {
            itls.iter().sum::<f64>() / itls.len() as f64
        };
        let last_text = s.text_ms.last().copied().unwrap_or(0.0);
        let mut stages = serde_json::Map::new();
        stages.insert(
            "0".into(),
            json!({
                "stage_id": 0, "final_output_type": "text",
                "finish_reason": if text_done { Some(self.text_finish) } else { None },
                "num_tokens_in": self.prompt_tokens, "num_tokens_out": s.tokens,
                "stage_gen_time_ms": last_text,
                "vllm_ttft_ms": ttft, "vllm_tpot_ms": tpot, "vllm_itls_ms": itls,
            }),
        );
        if self.want_audio && s.frames > 0 {
            let rate = self.voice.sample_rate;
            let samples = s.frames * u64::from(rate) * 2 / 25;
            let first = s.first_audio_ms.unwrap_or(0.0);
            stages.insert(
                "1".into(),
                json!({
                    "stage_id": 1, "final_output_type": "latent",
                    "num_tokens_out": s.frames, "stage_gen_time_ms": s.last_audio_ms,
                }),
            );
            stages.insert(
                "2".into(),
                json!({
                    "stage_id": 2, "final_output_type": "audio", "finish_reason": "stop",
                    "audio_frames": samples, "audio_sample_rate": rate,
                    "audio_duration_s": s.frames as f64 / OMNI_FRAME_RATE_HZ,
                    "output_unit_type": "audio_sample", "output_unit_count": samples,
                    "serving_time_to_first_output_ms": first,
                    "stage_gen_time_ms": s.last_audio_ms - first,
                }),
            );
        }
        json!({
            "stage_metrics": stages,
            "num_tokens_in": self.prompt_tokens,
            "num_tokens_out": s.tokens,
            "stage_id": 0,
            "final_output_type": "text",
        })
    }
}

fn event(v: &impl serde::Serialize) -> String {
    format!("data: {}\n\n", serde_json::to_string(v).unwrap_or_default())
}

/// Pull-based SSE body.
pub(crate) struct SseBody {
    pub ctx: ChatCtx,
    pub rx: UnboundedReceiver<OmniEmission>,
    pub guard: OmniGuard,
    seen: Seen,
    started: bool,
    done: bool,
    sent: u32,
}

/// How long a truncated stream lets its last chunk drain before the connection drops.
const CUT_DELAY: Duration = Duration::from_millis(100);

impl SseBody {
    /// A body for `ctx`, fed by `rx`.
    pub(crate) fn new(ctx: ChatCtx, rx: UnboundedReceiver<OmniEmission>, guard: OmniGuard) -> Self {
        SseBody {
            ctx,
            rx,
            guard,
            seen: Seen::default(),
            started: false,
            done: false,
            sent: 0,
        }
    }

    /// The next write, `None` at the end.
    pub(crate) async fn next_write(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if self.done {
            return None;
        }
        let c = &self.ctx;
        if !self.started {
            self.started = true;
            let mut m = c.chunk(
                json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]),
                Some("text"),
            );
            if c.continuous_usage {
                m.insert("usage".into(), c.usage(0));
            }
            return Some(Ok(Bytes::from(event(&m))));
        }
        if c.truncate_after.is_some_and(|n| self.sent >= n) {
            tokio::time::sleep(CUT_DELAY).await;
            self.done = true;
            return Some(Err(std::io::Error::other(
                "stream truncated (simulated fault)",
            )));
        }
        if c.stall_after.is_some_and(|n| self.sent >= n) {
            std::future::pending::<()>().await;
        }
        let Some(e) = self.rx.recv().await else {
            self.done = true;
            let err = json!({"error": {"message": "server stopped before the response was complete", "type": "InternalServerError", "param": null, "code": 500}});
            return Some(Ok(Bytes::from(format!("{}data: [DONE]\n\n", event(&err)))));
        };
        self.sent += 1;
        let now = c.sim_ms();
        let mut out = String::new();
        let finished = e.finishes(c.want_audio);
        match e.out {
            OmniOutput::Text { tokens, last } => {
                self.seen.text_ms.push(now);
                let from = self.seen.tokens;
                self.seen.tokens = tokens;
                let text: String = (from..tokens).map(|i| piece(c.draw, i)).collect();
                let fin = (last && !c.want_audio).then_some(c.text_finish);
                let mut m = c.chunk(
                    json!([{"index": 0, "delta": {"content": text}, "logprobs": null, "finish_reason": fin}]),
                    Some("text"),
                );
                if c.continuous_usage {
                    m.insert("usage".into(), c.usage(tokens));
                }
                if last && c.stage_metrics {
                    m.insert("metrics".into(), c.stage_metrics(&self.seen, true));
                }
                out.push_str(&event(&m));
            }
            OmniOutput::Audio {
                start_frame,
                frames,
                last,
            } => {
                self.seen.first_audio_ms.get_or_insert(now);
                self.seen.last_audio_ms = now;
                self.seen.frames += u64::from(frames);
                let wav = c.wav(start_frame, frames);
                let samples = (wav.len() - 44) / 2;
                let b64 = base64::engine::general_purpose::STANDARD.encode(&wav);
                let fin = last.then_some("stop");
                let mut m = c.chunk(
                    json!([{"index": 0, "delta": {"role": "assistant", "content": b64}, "logprobs": null,
                        "finish_reason": fin,
                        "audio_metadata": {"format": "wav", "sample_rate_hz": c.voice.sample_rate, "frame_count": samples, "channels": 1}}]),
                    Some("audio"),
                );
                m.insert("usage".into(), c.usage(0));
                self.guard
                    .stats
                    .pcm_bytes
                    .fetch_add(samples as u64 * 2, Ordering::Relaxed);
                out.push_str(&event(&m));
            }
        }
        self.guard.stats.chunks.fetch_add(1, Ordering::Relaxed);
        if finished {
            self.done = true;
            self.guard.finished = true;
            if c.include_usage {
                let mut m = c.chunk(json!([]), None);
                m.insert("usage".into(), c.usage(self.seen.tokens));
                if c.stage_metrics {
                    m.insert("metrics".into(), c.stage_metrics(&self.seen, true));
                }
                out.push_str(&event(&m));
            }
            out.push_str("data: [DONE]\n\n");
        }
        Some(Ok(Bytes::from(out)))
    }
}

/// Waits for every output, then builds the non-streaming response: one choice per
/// output modality (text, then audio as `message.audio` with a whole WAV), as
/// vllm-omni's serving_chat does. `None` when the engine stopped first.
pub(crate) async fn whole(
    ctx: &ChatCtx,
    rx: &mut UnboundedReceiver<OmniEmission>,
    guard: &mut OmniGuard,
) -> Option<Value> {
    let mut seen = Seen::default();
    loop {
        let e = rx.recv().await?;
        let now = ctx.sim_ms();
        match e.out {
            OmniOutput::Text { tokens, .. } => {
                seen.text_ms.push(now);
                seen.tokens = tokens;
            }
            OmniOutput::Audio { frames, .. } => {
                seen.first_audio_ms.get_or_insert(now);
                seen.last_audio_ms = now;
                seen.frames += u64::from(frames);
            }
        }
        if e.finishes(ctx.want_audio) {
            break;
        }
    }
    guard.finished = true;
    let text: String = (0..seen.tokens).map(|i| piece(ctx.draw, i)).collect();
    let mut choices = vec![json!({
        "index": 0,
        "message": {"role": "assistant", "content": text, "reasoning_content": null, "tool_calls": []},
        "logprobs": null, "finish_reason": ctx.text_finish, "stop_reason": null,
    })];
    if ctx.want_audio {
        let wav = ctx.wav(0, u32::try_from(seen.frames).unwrap_or(u32::MAX));
        choices.push(json!({
            "index": 0,
            "message": {"role": "assistant", "content": null, "audio": {
                "id": format!("audio-{:016x}", ctx.draw),
                "data": base64::engine::general_purpose::STANDARD.encode(&wav),
                "expires_at": ctx.created + 86_400,
                "transcript": "",
            }},
            "logprobs": null, "finish_reason": "stop", "stop_reason": null,
        }));
    }
    let mut v = json!({
        "id": ctx.id, "object": "chat.completion", "created": ctx.created, "model": ctx.model,
        "choices": choices, "usage": ctx.usage(seen.tokens),
        "prompt_logprobs": null, "kv_transfer_params": null,
    });
    if ctx.stage_metrics {
        v["metrics"] = ctx.stage_metrics(&seen, true);
    }
    Some(v)
}
