//! Per-request decisions that depend only on the request and the seed: audio length,
//! leading silence, signal start, the engine job, and the HTTP 500 draw.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::audio::AudioPlan;
use crate::engine::Job;
use crate::error::ApiError;
use crate::options::SimConfig;
use crate::profile::FRAME_RATE_HZ;
use crate::request::{self, SpeechRequest};
use dfx_core::hash::fnv1a64_parts;

/// Spread of the audio length around the per-character estimate (±8 %).
const LENGTH_JITTER: (f64, f64) = (0.92, 1.08);
/// Leading silence bounds, seconds.
const LEADING_SILENCE: (f64, f64) = (0.08, 0.15);
/// `min_tokens` of the stock talker sampling parameters.
const MIN_FRAMES: u32 = 2;

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af)
}

/// Audio seconds the text would take at speed 1, before jitter.
pub(crate) fn nominal_seconds(cfg: &SimConfig, text: &str) -> f64 {
    let p = &cfg.profile;
    text.trim()
        .chars()
        .map(|c| {
            if is_cjk(c) {
                p.secs_per_cjk_char
            } else {
                p.secs_per_char
            }
        })
        .sum()
}

/// The audio plan and the engine job of a validated request (deterministic in the
/// request and the simulator seed).
pub fn plan(cfg: &SimConfig, req: &SpeechRequest, words: usize) -> (AudioPlan, Job) {
    let seed = fnv1a64_parts(&[
        &cfg.options.seed.to_le_bytes(),
        req.input.as_bytes(),
        req.voice.as_deref().unwrap_or("").as_bytes(),
        req.task.as_str().as_bytes(),
        &req.seed.unwrap_or(0).to_le_bytes(),
    ]);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let secs = nominal_seconds(cfg, &req.input)
        * rng.random_range(LENGTH_JITTER.0..LENGTH_JITTER.1)
        / req.speed;
    let frames = ((secs * FRAME_RATE_HZ).round() as u32)
        .clamp(MIN_FRAMES, req.max_new_tokens.max(MIN_FRAMES));
    let p = &cfg.profile;
    let spf = p.samples_per_frame();
    let total = u64::from(frames) * u64::from(spf);
    let silence_s = rng.random_range(LEADING_SILENCE.0..LEADING_SILENCE.1);
    let silence = ((silence_s * f64::from(p.sample_rate)) as u64).min(total / 2);
    let audio = AudioPlan {
        frames,
        samples_per_frame: spf,
        leading_silence_samples: silence,
        word: rng.random_range(0..words.max(1)),
    };
    let job = Job {
        id: 0,
        frames,
        prefill_s: if req.clone {
            p.prefill_clone_s
        } else {
            p.prefill_plain_s
        },
        ref_context_frames: if req.in_context {
            p.clone_context_frames
        } else {
            0
        },
        initial_chunk_frames: req.initial_chunk_frames,
    };
    (audio, job)
}

/// The engine job the server runs for the `/v1/audio/speech` JSON `body` on `cfg` (no
/// uploaded voices): the same validation (`request::parse`) and the same per-request
/// plan ([`plan`]) as the HTTP handler, so a virtual bench ([`crate::vbench`]) can replay
/// a client's load with exactly the server's prefill, reference context and length.
pub fn job_for_body(cfg: &SimConfig, body: &[u8]) -> Result<Job, ApiError> {
    let names = cfg.model_names();
    let ctx = request::Context {
        profile: &cfg.profile,
        model_names: &names,
        uploaded: &|_: &str| None,
    };
    let req = request::parse(body, &ctx)?;
    Ok(plan(cfg, &req, 1).1)
}

/// Whether the `index`-th speech request (arrival order) gets the injected HTTP 500.
pub(crate) fn draws_500(seed: u64, index: u64, share: f64) -> bool {
    let mut rng = ChaCha8Rng::seed_from_u64(fnv1a64_parts(&[
        b"error500",
        &seed.to_le_bytes(),
        &index.to_le_bytes(),
    ]));
    rng.random_bool(share.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::SimOptions;
    use crate::request::{Delivery, Format, Task};

    fn req(text: &str) -> SpeechRequest {
        SpeechRequest {
            input: text.into(),
            task: Task::CustomVoice,
            voice: Some("vivian".into()),
            format: Format::Pcm,
            delivery: Delivery::Audio,
            speed: 1.0,
            max_new_tokens: 2048,
            initial_chunk_frames: None,
            clone: false,
            in_context: false,
            seed: None,
        }
    }

    #[test]
    fn length_follows_text_and_is_deterministic() {
        let cfg = SimOptions::new("Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice")
            .resolve()
            .unwrap();
        let text = "The quick brown fox jumps over the lazy dog near the river bank.";
        let (a, _) = plan(&cfg, &req(text), 50);
        let (b, _) = plan(&cfg, &req(text), 50);
        assert_eq!(a, b);
        let secs = f64::from(a.frames) / 12.5;
        let nominal = text.len() as f64 * 0.065;
        assert!((secs / nominal - 1.0).abs() <= 0.09, "{secs} vs {nominal}");
        let silence = a.leading_silence_samples as f64 / 24_000.0;
        assert!((0.08..0.15).contains(&silence));
        let other = SimOptions::new("Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice")
            .seed(7)
            .resolve()
            .unwrap();
        let lens: Vec<u32> = (0..8)
            .map(|i| plan(&other, &req(&format!("{text} {i}")), 50).0.frames)
            .collect();
        let base: Vec<u32> = (0..8)
            .map(|i| plan(&cfg, &req(&format!("{text} {i}")), 50).0.frames)
            .collect();
        assert_ne!(lens, base, "the seed changes the draws");
    }

    #[test]
    fn limits_apply() {
        let cfg = SimOptions::new("Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice")
            .resolve()
            .unwrap();
        let mut r = req(&"word ".repeat(200));
        r.max_new_tokens = 100;
        assert_eq!(plan(&cfg, &r, 10).0.frames, 100);
        assert_eq!(plan(&cfg, &req("a"), 10).0.frames, 2);
        let cjk = nominal_seconds(&cfg, "你好世界");
        assert!((cjk - 0.88).abs() < 1e-9);
    }

    #[test]
    fn share_of_500s() {
        let hits = (0..2000).filter(|i| draws_500(3, *i, 0.25)).count();
        assert!((400..600).contains(&hits), "{hits}");
        assert_eq!(
            (0..50).map(|i| draws_500(3, i, 0.5)).collect::<Vec<_>>(),
            (0..50).map(|i| draws_500(3, i, 0.5)).collect::<Vec<_>>()
        );
    }
}
