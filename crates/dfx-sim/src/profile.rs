//! Per-model profiles: sample rate, voices, languages, supported tasks and the calibrated
//! performance parameters (`docs/simulator.md` ("Performance model")).
//!
//! The Qwen3-TTS 1.7B parameters were fitted to the H20 table of `docs/simulator.md`
//! ("Calibration") for the configuration of that sweep: talker `max_num_seqs` 64;
//! code2wav decoding one chunk per step (the "codec batch 1" of `docs/simulator.md`
//! ("Performance model")) in queue order for 4 resident requests (fitted); chunks of 1
//! then 25 frames with 72 frames of left context; both stages on one GPU.
//! The fit (`examples/fit.rs`) scores the median over client arrival orders on two
//! prompt sets, three audio-length draws and three arrival spreads. See
//! docs/benchmarks-history.md ("The model, and how it was fitted") and BENCHMARKS.md
//! ("Simulator") for the fit and the measured result.
//! The other profiles are derived or generic, and say so.

use dfx_core::models::model_key;
use serde::Serialize;

use crate::engine::{Chunking, CodecParams, TalkerParams};

/// Codec frames per second of audio (Qwen3-TTS 12 Hz tokenizer: 12.5 frames/s).
pub(crate) const FRAME_RATE_HZ: f64 = 12.5;

/// Which checkpoint family a profile stands for; decides task support and voices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Qwen3-TTS Base: voice clone only (reference audio or uploaded voice).
    QwenBase,
    /// Qwen3-TTS CustomVoice: preset speakers, also serves VoiceDesign.
    QwenCustomVoice,
    /// Qwen3-TTS VoiceDesign: voice from a description, also preset speakers.
    QwenVoiceDesign,
    /// VoxCPM2: single stage, presets not checked, clone by reference.
    VoxCpm,
    /// Voxtral TTS: preset voices.
    Voxtral,
    /// Any other model: every task, any voice name.
    Generic,
}

/// A model profile: what the simulated checkpoint accepts and how fast it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// Stable name, accepted by `--sim-profile`.
    pub name: &'static str,
    /// Checkpoint family (tasks, voices).
    pub family: Family,
    /// What the parameters are based on (shown in `/sim/info`).
    pub basis: &'static str,
    /// Output sample rate, Hz.
    pub sample_rate: u32,
    /// Talker defaults (the deploy file and stage overrides may change `max_num_seqs`).
    pub talker: TalkerParams,
    /// Code2wav defaults; `None` for single-stage models.
    pub codec: Option<CodecParams>,
    /// Default chunking.
    pub chunking: Chunking,
    /// Talker slow-down while code2wav decodes on the same GPU (see
    /// [`crate::engine::EngineConfig::contention`]).
    pub contention: f64,
    /// Prefill of a request without reference audio, seconds.
    pub prefill_plain_s: f64,
    /// Prefill of a voice-clone request (encodes the reference), seconds.
    pub prefill_clone_s: f64,
    /// Reference frames the decoder carries with each chunk of an in-context clone.
    pub clone_context_frames: u32,
    /// Seconds of audio per character of Latin-script text.
    pub secs_per_char: f64,
    /// Seconds of audio per CJK character.
    pub secs_per_cjk_char: f64,
    /// Preset voices (lower case); empty = not checked (Base checkpoints only take
    /// uploaded voices, and a request naming another voice then needs `ref_audio`).
    pub voices: &'static [&'static str],
    /// Voice used when a request names none (CustomVoice-style tasks).
    pub default_voice: Option<&'static str>,
    /// Accepted `language` values (compared case-insensitively); empty = any.
    pub languages: &'static [&'static str],
}

const QWEN_SPEAKERS: &[&str] = &[
    "aiden", "dylan", "eric", "ono_anna", "ryan", "serena", "sohee", "uncle_fu", "vivian",
];
const QWEN_LANGUAGES: &[&str] = &[
    "Auto",
    "Chinese",
    "English",
    "Japanese",
    "Korean",
    "German",
    "French",
    "Russian",
    "Portuguese",
    "Spanish",
    "Italian",
];
const VOXTRAL_VOICES: &[&str] = &[
    "casual_female",
    "casual_male",
    "cheerful_female",
    "neutral_female",
    "neutral_male",
    "fr_female",
    "fr_male",
    "de_female",
    "de_male",
    "es_female",
    "es_male",
    "it_female",
    "it_male",
    "pt_female",
    "pt_male",
    "nl_female",
    "nl_male",
    "hi_female",
    "hi_male",
    "ar_male",
];

/// Qwen3-TTS code2wav as in the H20 sweep: `resident` requests, one chunk decoded per
/// step (no batched decode) in queue order, 72 frames of left context.
fn qwen_codec(step_base_s: f64, per_frame_s: f64, resident: usize) -> CodecParams {
    CodecParams {
        step_base_s,
        step_per_extra_chunk_s: 0.001,
        per_frame_s,
        batch_efficiency: BATCH_EFFICIENCY,
        max_num_seqs: resident,
        decode_batch: 1,
        left_context_frames: 72,
        chunk_fifo: true,
    }
}

/// Assumed GPU gain of batched decode (no published figure to fit it to): a batch of n
/// chunks costs `(1 + 0.5 (n − 1)) / n` of their serial frame work.
pub(crate) const BATCH_EFFICIENCY: f64 = 0.5;

fn talker(step_base_s: f64, step_per_seq_s: f64, prefill_per_seq_s: f64) -> TalkerParams {
    TalkerParams {
        step_base_s,
        step_per_seq_s,
        prefill_per_seq_s,
        max_num_seqs: 64,
        inline_decode_s: 0.0,
    }
}

fn qwen(name: &'static str, family: Family, basis: &'static str) -> Profile {
    Profile {
        name,
        family,
        basis,
        sample_rate: 24_000,
        talker: talker(0.003357, 0.000316, 0.000808),
        codec: Some(qwen_codec(0.030186, 0.000335, 4)),
        chunking: Chunking::default(),
        contention: 0.559908,
        prefill_plain_s: 0.024737,
        prefill_clone_s: 0.08,
        clone_context_frames: 72,
        secs_per_char: 0.065,
        secs_per_cjk_char: 0.22,
        voices: QWEN_SPEAKERS,
        default_voice: Some("vivian"),
        languages: QWEN_LANGUAGES,
    }
}

/// Qwen3-TTS 1.7B Base, fitted to the voice-clone row of the H20 table.
fn qwen_17_base() -> Profile {
    Profile {
        talker: talker(0.004982, 0.000050, 0.011800),
        codec: Some(qwen_codec(0.010982, 0.000698, 4)),
        contention: 1.006395,
        prefill_plain_s: 0.03,
        prefill_clone_s: 0.114829,
        // A Base checkpoint has no preset speakers (voices are uploaded clones).
        voices: &[],
        default_voice: None,
        ..qwen(
            "qwen3-tts-1.7b-base",
            Family::QwenBase,
            "fitted to the H20 voice_clone / 1.7B-Base table (docs/simulator.md)",
        )
    }
}

/// Qwen3-TTS 1.7B CustomVoice (and VoiceDesign), fitted to the voice-design row.
fn qwen_17_custom(family: Family, name: &'static str) -> Profile {
    qwen(
        name,
        family,
        "fitted to the H20 voice_design / 1.7B-CustomVoice table (docs/simulator.md)",
    )
}

/// 0.6B variants: the 1.7B fit with a talker 30 % faster (smaller transformer) and the
/// same code2wav (same tokenizer). No published table to fit.
fn smaller(mut p: Profile, name: &'static str, basis: &'static str) -> Profile {
    p.name = name;
    p.basis = basis;
    p.talker.step_base_s *= 0.7;
    p.talker.step_per_seq_s *= 0.7;
    p.talker.prefill_per_seq_s *= 0.8;
    p.prefill_plain_s *= 0.8;
    p.prefill_clone_s *= 0.8;
    p
}

/// VoxCPM2: one stage that decodes audio itself every 3 frames, 48 kHz, 8 sequences.
fn voxcpm2() -> Profile {
    Profile {
        name: "voxcpm2",
        family: Family::VoxCpm,
        basis: "generic single-stage guess (no published table); 48 kHz",
        sample_rate: 48_000,
        talker: TalkerParams {
            step_base_s: 0.012,
            step_per_seq_s: 0.001,
            prefill_per_seq_s: 0.003,
            max_num_seqs: 8,
            inline_decode_s: 0.008,
        },
        codec: None,
        contention: 0.0,
        chunking: Chunking {
            initial_frames: 3,
            chunk_frames: 3,
            ramp: Vec::new(),
            async_chunk: true,
        },
        prefill_plain_s: 0.04,
        prefill_clone_s: 0.09,
        clone_context_frames: 0,
        secs_per_char: 0.065,
        secs_per_cjk_char: 0.22,
        voices: &[],
        default_voice: None,
        languages: &[],
    }
}

fn two_stage_generic(
    name: &'static str,
    family: Family,
    voices: &'static [&'static str],
) -> Profile {
    Profile {
        name,
        family,
        basis: "generic two-stage guess (no published table)",
        sample_rate: 24_000,
        talker: talker(0.008, 0.0003, 0.002),
        codec: Some(qwen_codec(0.02, 0.0003, 4)),
        chunking: Chunking::default(),
        contention: 0.3,
        prefill_plain_s: 0.035,
        prefill_clone_s: 0.08,
        clone_context_frames: 0,
        secs_per_char: 0.065,
        secs_per_cjk_char: 0.22,
        voices,
        default_voice: voices.first().copied(),
        languages: &[],
    }
}

/// Every profile name `--sim-profile` accepts.
pub(crate) const NAMES: &[&str] = &[
    "qwen3-tts-1.7b-base",
    "qwen3-tts-1.7b-customvoice",
    "qwen3-tts-1.7b-voicedesign",
    "qwen3-tts-0.6b-base",
    "qwen3-tts-0.6b-customvoice",
    "voxcpm2",
    "voxtral",
    "generic",
];

/// The profile called `name` (one of [`NAMES`]).
pub(crate) fn by_name(name: &str) -> Option<Profile> {
    Some(match name {
        "qwen3-tts-1.7b-base" => qwen_17_base(),
        "qwen3-tts-1.7b-customvoice" => qwen_17_custom(Family::QwenCustomVoice, NAMES[1]),
        "qwen3-tts-1.7b-voicedesign" => qwen_17_custom(Family::QwenVoiceDesign, NAMES[2]),
        "qwen3-tts-0.6b-base" => smaller(
            qwen_17_base(),
            NAMES[3],
            "1.7B-Base fit with a 30 % faster talker (no published table)",
        ),
        "qwen3-tts-0.6b-customvoice" => smaller(
            qwen_17_custom(Family::QwenCustomVoice, NAMES[4]),
            NAMES[4],
            "1.7B-CustomVoice fit with a 30 % faster talker (no published table)",
        ),
        "voxcpm2" => voxcpm2(),
        "voxtral" => two_stage_generic("voxtral", Family::Voxtral, VOXTRAL_VOICES),
        "generic" => two_stage_generic("generic", Family::Generic, &[]),
        _ => return None,
    })
}

/// The profile for a model id or path, by its last path component (case-insensitive):
/// `Qwen3-TTS-*-0.6B-*` / `*-1.7B-*` with `Base`, `VoiceDesign` or otherwise CustomVoice;
/// `VoxCPM*`; `*Voxtral*`; anything else is `generic`.
pub(crate) fn for_model(model: &str) -> Profile {
    let name = model_key(model);
    let pick = if name.starts_with("qwen3-tts") {
        let small = name.contains("0.6b");
        match (small, name.contains("base"), name.contains("voicedesign")) {
            (true, true, _) => "qwen3-tts-0.6b-base",
            (true, false, _) => "qwen3-tts-0.6b-customvoice",
            (false, true, _) => "qwen3-tts-1.7b-base",
            (false, false, true) => "qwen3-tts-1.7b-voicedesign",
            (false, false, false) => "qwen3-tts-1.7b-customvoice",
        }
    } else if name.starts_with("voxcpm") {
        "voxcpm2"
    } else if name.contains("voxtral") {
        "voxtral"
    } else {
        "generic"
    };
    by_name(pick).expect("every picked name exists")
}

impl Profile {
    /// Audio samples per codec frame.
    pub(crate) fn samples_per_frame(&self) -> u32 {
        (f64::from(self.sample_rate) / FRAME_RATE_HZ).round() as u32
    }

    /// Whether the profile checks voice names against a preset list.
    pub(crate) fn checks_voices(&self) -> bool {
        !self.voices.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_map_to_profiles() {
        let p = |m: &str| for_model(m).name;
        assert_eq!(p("Qwen/Qwen3-TTS-12Hz-1.7B-Base"), "qwen3-tts-1.7b-base");
        assert_eq!(
            p("Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice"),
            "qwen3-tts-1.7b-customvoice"
        );
        assert_eq!(
            p("Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign"),
            "qwen3-tts-1.7b-voicedesign"
        );
        assert_eq!(
            p("/models/qwen3-tts-12hz-0.6b-base/"),
            "qwen3-tts-0.6b-base"
        );
        assert_eq!(
            p("Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice"),
            "qwen3-tts-0.6b-customvoice"
        );
        assert_eq!(p("openbmb/VoxCPM2"), "voxcpm2");
        assert_eq!(p("mistralai/Voxtral-4B-TTS-2603"), "voxtral");
        assert_eq!(p("someone/new-tts"), "generic");
        for n in NAMES {
            assert_eq!(by_name(n).map(|p| p.name), Some(*n));
        }
    }

    #[test]
    fn rates_and_frames() {
        assert_eq!(for_model("openbmb/VoxCPM2").sample_rate, 48_000);
        assert_eq!(for_model("openbmb/VoxCPM2").samples_per_frame(), 3840);
        assert_eq!(
            for_model("Qwen/Qwen3-TTS-12Hz-1.7B-Base").samples_per_frame(),
            1920
        );
    }

    #[test]
    fn small_models_have_faster_talkers() {
        let big = by_name("qwen3-tts-1.7b-base").unwrap();
        let small = by_name("qwen3-tts-0.6b-base").unwrap();
        assert!(small.talker.step_base_s < big.talker.step_base_s);
        assert_eq!(small.codec, big.codec);
    }
}
