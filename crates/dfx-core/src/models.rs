//! Facts about the models the suite knows: output sample rate (the response never says
//! it, and a 48 kHz model measured at 24 kHz doubles its audio duration).

/// The name a model id or path is matched by: its last path component (trailing slashes
/// ignored), lower case. `Qwen/Qwen3-TTS-12Hz-1.7B-Base` and `/models/qwen3-tts-12hz-1.7b-base/`
/// both give `qwen3-tts-12hz-1.7b-base`.
pub fn model_key(model: &str) -> String {
    model
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase()
}

/// Output sample rate (Hz) of a known TTS model id or path, matched case-insensitively on
/// the last path component; `None` for models the table does not know.
pub fn sample_rate(model: &str) -> Option<u32> {
    let name = model_key(model);
    if name.starts_with("voxcpm") {
        Some(48_000)
    } else if name.starts_with("qwen3-tts") || name.starts_with("voxtral") {
        Some(24_000)
    } else {
        None
    }
}

/// The sample rate assumed when neither a flag nor [`sample_rate`] knows the model.
pub const DEFAULT_SAMPLE_RATE: u32 = 24_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_key_is_the_last_component_in_lower_case() {
        assert_eq!(
            model_key("Qwen/Qwen3-TTS-12Hz-1.7B-Base"),
            "qwen3-tts-12hz-1.7b-base"
        );
        assert_eq!(model_key("/models/VoxCPM2//"), "voxcpm2");
        assert_eq!(model_key("Voxtral"), "voxtral");
        assert_eq!(model_key("/"), "");
        assert_eq!(model_key(""), "");
    }

    #[test]
    fn known_rates() {
        assert_eq!(sample_rate("Qwen/Qwen3-TTS-12Hz-1.7B-Base"), Some(24_000));
        assert_eq!(
            sample_rate("/models/qwen3-tts-12hz-0.6b-base/"),
            Some(24_000)
        );
        assert_eq!(sample_rate("openbmb/VoxCPM2"), Some(48_000));
        assert_eq!(sample_rate("mistralai/Voxtral-4B-TTS-2603"), Some(24_000));
        assert_eq!(sample_rate("Qwen/Qwen3-Omni-30B-A3B-Instruct"), None);
    }
}
