//! Omni model profiles (`docs/simulator.md` ("Omni profiles")): a thinker (text AR) →
//! talker (codec AR) → code2wav pipeline, the media-token rules of the checkpoint, and
//! the performance parameters of each stage.
//!
//! Qwen3-Omni 30B-A3B parameters are calibrated against the H100 baselines of
//! `perf-configs/test_qwen3_omni_async_chunk.json` and vllm-omni's published CI figures
//! (BENCHMARKS.md, "Qwen3-Omni profile"); MiniCPM-o parameters are guesses (no published
//! vllm-omni figures) and say so in [`OmniProfile::basis`].

use dfx_core::models::model_key;
use serde::Serialize;

/// Codec frames per second of audio (Qwen3-Omni's 12.5 Hz talker codec).
pub(crate) const OMNI_FRAME_RATE_HZ: f64 = 12.5;

/// How the checkpoint turns media into prompt tokens.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MediaRules {
    /// Vision patch size, pixels.
    pub patch: u32,
    /// Spatial merge (tokens = patches / merge²).
    pub spatial_merge: u32,
    /// Video frames per temporal patch.
    pub temporal_patch: u32,
    /// Largest image area after resizing, pixels (bigger images are scaled down).
    pub max_pixels: u64,
    /// Smallest image area after resizing, pixels.
    pub min_pixels: u64,
    /// Largest area of one video frame after resizing, pixels.
    pub video_max_pixels: u64,
    /// Audio tokens per 100 mel frames (1 s at 16 kHz, hop 160); the remainder is
    /// downsampled three times by 2 (Qwen3-Omni's AuT encoder: 13).
    pub audio_tokens_per_100_frames: u32,
    /// Tokens wrapping every media item (start/end markers).
    pub item_wrap_tokens: u32,
    /// Chat-template tokens of a one-turn conversation (system prompt, role markers).
    pub template_tokens: u32,
}

/// Thinker (stage 0) parameters, seconds of simulated time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThinkerParams {
    /// Fixed cost of one decode step.
    pub step_base_s: f64,
    /// Added per running sequence.
    pub step_per_seq_s: f64,
    /// Prefill cost per prompt token (text, template and media tokens).
    pub prefill_per_token_s: f64,
    /// Fixed per-request CPU pre-processing (chat template, request handling), before
    /// the request joins the thinker queue.
    pub request_overhead_s: f64,
    /// Audio encoder cost per second of input audio.
    pub audio_encode_per_s: f64,
    /// Vision encoder cost per vision token (images and videos).
    pub vision_encode_per_token_s: f64,
    /// CPU decoding of one media item (image, video or audio container), seconds.
    pub media_item_s: f64,
    /// Continuous-batching limit (`stages[0].max_num_seqs`).
    pub max_num_seqs: usize,
    /// Slow-down of a thinker step while the talker or code2wav compute on a shared GPU.
    pub contention: f64,
}

/// Talker (stage 1) parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TalkerStageParams {
    /// Fixed cost of one step (one codec frame per sequence, residual codebooks incl.).
    pub step_base_s: f64,
    /// Added per active sequence.
    pub step_per_seq_s: f64,
    /// Prefill of an admitted request (thinker hidden states in), seconds.
    pub prefill_s: f64,
    /// Continuous-batching limit (`stages[1].max_num_seqs`).
    pub max_num_seqs: usize,
    /// Slow-down of a talker step while the thinker computes on a shared GPU.
    pub contention: f64,
    /// With async chunk: thinker tokens that must exist before the talker starts.
    pub start_after_tokens: u32,
}

/// Code2wav (stage 2) parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Code2WavParams {
    /// Fixed cost of one decode step.
    pub step_base_s: f64,
    /// Cost per decoded frame (own and left-context frames).
    pub per_frame_s: f64,
    /// Frames per streamed chunk (async chunk).
    pub chunk_frames: u32,
    /// Left-context frames re-decoded with every chunk after the first.
    pub left_context_frames: u32,
    /// Chunks decoded in one step at most (`stages[2].max_num_seqs`).
    pub max_num_seqs: usize,
}

/// One omni profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OmniProfile {
    /// Stable name (`--sim-profile`).
    pub name: &'static str,
    /// What the numbers are based on (shown in `/sim/info`).
    pub basis: &'static str,
    /// Output audio sample rate, Hz.
    pub sample_rate: u32,
    /// Seconds of speech per generated text token (audio length follows the text).
    pub audio_secs_per_token: f64,
    /// Default `max_tokens` when a request gives none.
    pub default_max_tokens: u32,
    /// Context length: prompt + `max_tokens` must fit.
    pub max_model_len: u32,
    /// Media rules.
    pub media: MediaRules,
    /// Stage 0.
    pub thinker: ThinkerParams,
    /// Stage 1.
    pub talker: TalkerStageParams,
    /// Stage 2.
    pub code2wav: Code2WavParams,
    /// Whether the shipped deploy file streams between stages (`async_chunk`).
    pub async_chunk_default: bool,
    /// Thinking checkpoint: text only, no talker (Qwen3-Omni Thinking / Captioner).
    pub text_only: bool,
}

/// Every omni profile name `--sim-profile` accepts.
pub(crate) const NAMES: &[&str] = &[
    "qwen3-omni-30b-a3b-instruct",
    "qwen3-omni-30b-a3b-thinking",
    "qwen3-omni-30b-a3b-captioner",
    "minicpm-o-2.6",
    "minicpm-o-4.5",
];

fn qwen3_omni() -> OmniProfile {
    OmniProfile {
        name: NAMES[0],
        basis: "calibrated to the H100 baselines of test_qwen3_omni_async_chunk.json and \
                vllm-omni CI figures (BENCHMARKS.md, Qwen3-Omni profile); stage costs fitted, \
                not measured per stage",
        sample_rate: 24_000,
        // 100 random-dataset tokens speak for about 30–33 s in the H100 baselines
        // (e2el / audio_rtf), i.e. ≈ 0.32 s per token.
        audio_secs_per_token: 0.32,
        default_max_tokens: 2048,
        max_model_len: 65_536,
        media: MediaRules {
            patch: 16,
            spatial_merge: 2,
            temporal_patch: 2,
            max_pixels: 16_384 * 32 * 32,
            min_pixels: 4 * 32 * 32,
            video_max_pixels: 768 * 32 * 32,
            audio_tokens_per_100_frames: 13,
            item_wrap_tokens: 2,
            template_tokens: 3,
        },
        thinker: ThinkerParams {
            step_base_s: 0.0046,
            step_per_seq_s: 0.00025,
            prefill_per_token_s: 0.000_02,
            request_overhead_s: 0.06,
            audio_encode_per_s: 0.0025,
            vision_encode_per_token_s: 0.000_13,
            media_item_s: 0.012,
            max_num_seqs: 64,
            contention: 0.35,
        },
        talker: TalkerStageParams {
            step_base_s: 0.0067,
            step_per_seq_s: 0.0009,
            prefill_s: 0.02,
            max_num_seqs: 64,
            contention: 0.15,
            start_after_tokens: 4,
        },
        code2wav: Code2WavParams {
            step_base_s: 0.008,
            per_frame_s: 0.0001,
            chunk_frames: 25,
            left_context_frames: 25,
            max_num_seqs: 64,
        },
        async_chunk_default: false,
        text_only: false,
    }
}

fn minicpm_o(name: &'static str, faster: f64) -> OmniProfile {
    let mut p = qwen3_omni();
    p.name = name;
    p.basis = "guess: Qwen3-Omni profile with a dense 8B thinker and CosyVoice-style \
               talker scaled (no published vllm-omni figures)";
    p.audio_secs_per_token = 0.3;
    p.max_model_len = 32_768;
    // MiniCPM-o: SigLIP 14 px patches resampled to 64 query tokens per image slice;
    // approximated with 28 px per token and a low pixel cap.
    p.media.patch = 14;
    p.media.spatial_merge = 2;
    p.media.temporal_patch = 1;
    p.media.max_pixels = 448 * 448 * 4;
    p.media.video_max_pixels = 448 * 448;
    p.media.audio_tokens_per_100_frames = 25;
    p.thinker.step_base_s = 0.0075 * faster;
    p.thinker.step_per_seq_s = 0.0002 * faster;
    p.thinker.prefill_per_token_s = 0.000_04 * faster;
    p.talker.step_base_s = 0.009 * faster;
    p
}

/// The omni profile called `name` (one of [`NAMES`]).
pub(crate) fn by_name(name: &str) -> Option<OmniProfile> {
    Some(match name {
        "qwen3-omni-30b-a3b-instruct" => qwen3_omni(),
        "qwen3-omni-30b-a3b-thinking" | "qwen3-omni-30b-a3b-captioner" => {
            let mut p = qwen3_omni();
            p.name = if name.ends_with("thinking") {
                NAMES[1]
            } else {
                NAMES[2]
            };
            p.basis = "Qwen3-Omni Instruct profile without talker/code2wav (the Thinking \
                       and Captioner checkpoints output text only)";
            p.text_only = true;
            p
        }
        "minicpm-o-2.6" => minicpm_o(NAMES[3], 1.0),
        "minicpm-o-4.5" => minicpm_o(NAMES[4], 0.9),
        _ => return None,
    })
}

/// The omni profile for a model id or path (last path component, case-insensitive):
/// `Qwen3-Omni-*` (`Thinking`, `Captioner` or otherwise Instruct), `MiniCPM-o-2_6`,
/// `MiniCPM-o-4_5` (other `MiniCPM-o` versions → 4.5). `None` for non-omni models.
pub(crate) fn for_model(model: &str) -> Option<OmniProfile> {
    let name = model_key(model);
    let pick = if name.starts_with("qwen3-omni") {
        if name.contains("thinking") {
            NAMES[1]
        } else if name.contains("captioner") {
            NAMES[2]
        } else {
            NAMES[0]
        }
    } else if name.starts_with("minicpm-o") {
        if name.contains("2_6") || name.contains("2.6") {
            NAMES[3]
        } else {
            NAMES[4]
        }
    } else {
        return None;
    };
    by_name(pick)
}

impl OmniProfile {
    /// Audio samples per codec frame.
    #[cfg(test)]
    pub(crate) fn samples_per_frame(&self) -> u32 {
        (f64::from(self.sample_rate) / OMNI_FRAME_RATE_HZ).round() as u32
    }

    /// Codec frames spoken for `tokens` text tokens (at least 1 when `tokens > 0`).
    pub(crate) fn frames_for_tokens(&self, tokens: u32, jitter: f64) -> u32 {
        if tokens == 0 {
            return 0;
        }
        let secs = f64::from(tokens) * self.audio_secs_per_token * jitter;
        ((secs * OMNI_FRAME_RATE_HZ).round() as u32).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_pick_profiles() {
        let p = |m: &str| for_model(m).map(|p| p.name);
        assert_eq!(
            p("Qwen/Qwen3-Omni-30B-A3B-Instruct"),
            Some("qwen3-omni-30b-a3b-instruct")
        );
        assert_eq!(
            p("/models/Qwen3-Omni-30B-A3B-Thinking/"),
            Some("qwen3-omni-30b-a3b-thinking")
        );
        assert_eq!(
            p("Qwen/Qwen3-Omni-30B-A3B-Captioner"),
            Some("qwen3-omni-30b-a3b-captioner")
        );
        assert_eq!(p("openbmb/MiniCPM-o-2_6"), Some("minicpm-o-2.6"));
        assert_eq!(p("openbmb/MiniCPM-o-4_5"), Some("minicpm-o-4.5"));
        assert_eq!(p("Qwen/Qwen3-TTS-12Hz-1.7B-Base"), None);
        for n in NAMES {
            assert_eq!(by_name(n).map(|p| p.name), Some(*n));
        }
        assert!(by_name(NAMES[1]).unwrap().text_only);
        assert!(!by_name(NAMES[0]).unwrap().text_only);
    }

    #[test]
    fn audio_follows_text_length() {
        let p = qwen3_omni();
        assert_eq!(p.samples_per_frame(), 1920);
        assert_eq!(p.frames_for_tokens(0, 1.0), 0);
        assert_eq!(p.frames_for_tokens(100, 1.0), 400);
        assert!(p.frames_for_tokens(200, 1.0) > p.frames_for_tokens(100, 1.0));
    }
}
