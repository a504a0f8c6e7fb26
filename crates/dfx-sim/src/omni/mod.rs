//! The omni profile family: `POST /v1/chat/completions` served the way vllm-omni 0.30.0
//! serves Qwen3-Omni (thinker → talker → code2wav), with a performance model of the
//! three stages (`docs/simulator.md` ("Omni models")).
//!
//! - `profile`: Qwen3-Omni 30B-A3B and MiniCPM-o profiles, media-token rules.
//! - [`media`]: data URLs, JPEG/PNG/MP4/WAV headers, media tokens.
//! - [`request`]: chat bodies → [`request::ChatRequest`] or a 400.
//! - `engine`: the discrete-event model; [`vbench`]: a virtual bench over it.
//! - `driver`, `stream`, `http`: the engine thread, the SSE / JSON bodies, the handler.

pub(crate) mod engine;
pub mod fixtures;
pub mod media;
pub(crate) mod profile;
pub mod request;
pub(crate) mod stream;
pub mod vbench;

#[cfg(test)]
mod tests;

/// The omni engine's thread, as the handlers see it.
pub(crate) type OmniHandle = crate::driver::EngineHandle<engine::OmniEngine>;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::deploy::DeploySettings;
use dfx_core::hash::fnv1a64_parts;
use engine::{OmniEngineConfig, OmniJob};
use media::MediaInfo;
use profile::OmniProfile;
use request::ChatRequest;

/// Most codec frames of one answer (the talker's stock `max_tokens`, 4096 frames ≈ 328 s).
pub(crate) const MAX_AUDIO_FRAMES: u32 = 4096;
/// Natural answer length without `ignore_eos`, text tokens (uniform draw, capped by
/// `max_tokens`).
pub(crate) const NATURAL_TOKENS: (u32, u32) = (40, 400);

/// The omni part of a resolved configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OmniConfig {
    /// The profile in use.
    pub profile: OmniProfile,
    /// The effective engine parameters (deploy file and overrides applied).
    pub engine: OmniEngineConfig,
}

/// Whether a `--sim-profile` name is an omni profile.
pub(crate) fn is_omni_profile(name: &str) -> bool {
    profile::NAMES.contains(&name)
}

fn flag_async_chunk(extra_flags: &[(String, Option<String>)]) -> Option<bool> {
    let mut v = None;
    for (flag, value) in extra_flags {
        match flag.as_str() {
            "--async-chunk" => {
                v = Some(!matches!(
                    value.as_deref().map(str::to_ascii_lowercase).as_deref(),
                    Some("false" | "0" | "no" | "off")
                ));
            }
            "--no-async-chunk" => v = Some(false),
            _ => {}
        }
    }
    v
}

fn devices_disjoint(d: &DeploySettings) -> bool {
    let set = |id: u32| -> Option<Vec<String>> {
        d.devices
            .iter()
            .rev()
            .find(|(s, _)| *s == id)
            .map(|(_, v)| v.split(',').map(|x| x.trim().to_string()).collect())
    };
    let (Some(a), Some(b), Some(c)) = (set(0), set(1), set(2)) else {
        return false;
    };
    let meet = |x: &[String], y: &[String]| x.iter().any(|i| y.contains(i));
    !meet(&a, &b) && !meet(&a, &c) && !meet(&b, &c)
}

/// What of the simulator's options [`resolve`] reads.
#[derive(Debug, Clone, Copy)]
pub struct OmniChoice<'a> {
    /// `--sim-profile`, if given.
    pub profile: Option<&'a str>,
    /// The served model (`serve <model>`).
    pub model: &'a str,
    /// The vllm-omni flags the simulator accepts and ignores (`--async-chunk` is read).
    pub extra_flags: &'a [(String, Option<String>)],
}

/// The omni configuration for these options, or `None` for a TTS model.
pub fn resolve(o: OmniChoice<'_>, d: &DeploySettings, slowdown: f64) -> Option<OmniConfig> {
    let profile = match o.profile {
        Some(name) => profile::by_name(name)?,
        None => profile::for_model(o.model)?,
    };
    let mut engine = OmniEngineConfig {
        thinker: profile.thinker.clone(),
        talker: profile.talker.clone(),
        code2wav: profile.code2wav.clone(),
        async_chunk: profile.async_chunk_default,
        shared_gpu: true,
        slowdown,
    };
    for (stage, n) in &d.stage_max_num_seqs {
        match stage {
            0 => engine.thinker.max_num_seqs = *n,
            1 => engine.talker.max_num_seqs = *n,
            2 => engine.code2wav.max_num_seqs = *n,
            _ => {}
        }
    }
    if let Some(n) = d.chunk_frames {
        engine.code2wav.chunk_frames = n;
    }
    if let Some(n) = d.left_context_frames {
        engine.code2wav.left_context_frames = n;
    }
    if let Some(a) = d.async_chunk {
        engine.async_chunk = a;
    }
    if let Some(a) = flag_async_chunk(o.extra_flags) {
        engine.async_chunk = a;
    }
    engine.shared_gpu = !devices_disjoint(d);
    Some(OmniConfig { profile, engine })
}

/// What the engine and the stream need to know about one request.
#[derive(Debug, Clone, PartialEq)]
pub struct OmniPlan {
    /// The engine job.
    pub job: OmniJob,
    /// `finish_reason` of the text: `length` when `max_tokens` was reached.
    pub text_finish: &'static str,
    /// Seed of the text pieces and of the audio signal start.
    pub draw: u64,
}

/// GPU prefill seconds of a request: prompt tokens and media encoders.
pub fn prefill_s(p: &OmniProfile, req: &ChatRequest) -> f64 {
    let t = &p.thinker;
    let media: f64 = req
        .media
        .iter()
        .map(|m| match m {
            MediaInfo::Audio { duration_s, .. } => t.audio_encode_per_s * duration_s,
            other => t.vision_encode_per_token_s * media::tokens(&p.media, other) as f64,
        })
        .sum();
    t.prefill_per_token_s * req.prompt_tokens() as f64 + media
}

/// CPU pre-processing seconds of a request: fixed overhead and media decoding.
pub(crate) fn preprocess_s(p: &OmniProfile, req: &ChatRequest) -> f64 {
    let t = &p.thinker;
    t.request_overhead_s + t.media_item_s * req.media.len() as f64
}

/// Output length and audio length of a validated request (deterministic in the request
/// and the simulator seed).
pub fn plan(cfg: &OmniConfig, seed: u64, req: &ChatRequest) -> OmniPlan {
    let draw = fnv1a64_parts(&[
        &seed.to_le_bytes(),
        req.text.as_bytes(),
        &req.seed.unwrap_or(0).to_le_bytes(),
        &req.prompt_tokens().to_le_bytes(),
    ]);
    let mut rng = ChaCha8Rng::seed_from_u64(draw);
    let natural = rng.random_range(NATURAL_TOKENS.0..=NATURAL_TOKENS.1);
    let jitter: f64 = rng.random_range(0.95..1.05);
    let tokens = if req.ignore_eos {
        req.max_tokens
    } else {
        natural.min(req.max_tokens)
    };
    let text_finish = if tokens >= req.max_tokens {
        "length"
    } else {
        "stop"
    };
    let frames = if req.want_audio {
        cfg.profile
            .frames_for_tokens(tokens, jitter)
            .min(MAX_AUDIO_FRAMES)
    } else {
        0
    };
    OmniPlan {
        job: OmniJob {
            id: 0,
            preprocess_s: preprocess_s(&cfg.profile, req),
            prefill_s: prefill_s(&cfg.profile, req),
            text_tokens: tokens.max(1),
            audio_frames: frames,
        },
        text_finish,
        draw,
    }
}
