//! The contract scenarios dfx-perf's `contract` runner knows (`"benchmark_runner":
//! "contract"`, `docs/bench.md` ("Contract scenarios")): their names, which need a
//! voice-clone (Base) model, and the entry keys that select them. The requests and the
//! replies they expect live in `dfx_bench::native::contract`.

/// One scenario of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// The name an entry's `scenarios` uses.
    pub name: &'static str,
    /// Needs a voice-clone (Base) model; skipped, with a reason, on others.
    pub needs_clone: bool,
}

const fn s(name: &'static str, needs_clone: bool) -> Scenario {
    Scenario { name, needs_clone }
}

/// Every scenario, in the order a trial runs them.
pub const SCENARIOS: &[Scenario] = &[
    s("malformed_json", false),
    s("wrong_type", false),
    s("empty_input", false),
    s("min_input", false),
    s("long_input", false),
    s("unknown_voice", false),
    s("unknown_task_type", false),
    s("unknown_response_format", false),
    s("ref_audio_bad_base64", true),
    s("ref_audio_file_url", true),
    s("ref_audio_unreachable_url", true),
    s("disconnect_mid_stream", false),
    s("voice_lifecycle", false),
];

/// The scenario `voice_lifecycle: false` removes.
pub(crate) const VOICE_LIFECYCLE: &str = "voice_lifecycle";

/// The scenario named `name`.
pub fn scenario(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Every name, comma separated, for error messages.
pub(crate) fn accepted_names() -> String {
    SCENARIOS
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The scenarios an entry runs, in catalogue order: its `scenarios` (validated at load;
/// absent = all) minus `voice_lifecycle` when `voice_lifecycle: false`.
pub fn selected(raw: &serde_json::Map<String, serde_json::Value>) -> Vec<&'static Scenario> {
    let listed: Option<Vec<&str>> = raw
        .get("scenarios")
        .and_then(serde_json::Value::as_array)
        .map(|a| a.iter().filter_map(serde_json::Value::as_str).collect());
    let lifecycle = raw.get("voice_lifecycle") != Some(&serde_json::Value::Bool(false));
    SCENARIOS
        .iter()
        .filter(|s| listed.as_ref().is_none_or(|l| l.contains(&s.name)))
        .filter(|s| lifecycle || s.name != VOICE_LIFECYCLE)
        .collect()
}

/// Whether `model` (an id or a path) is a voice-clone checkpoint: its last path component
/// ends with `-Base` (`Qwen/Qwen3-TTS-12Hz-1.7B-Base`), case-insensitively.
pub fn is_clone_model(model: &str) -> bool {
    crate::models::model_key(model).ends_with("-base")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selection_follows_the_keys_in_catalogue_order() {
        let all = selected(&Default::default());
        assert_eq!(all.len(), SCENARIOS.len());
        let raw = json!({"scenarios": ["voice_lifecycle", "empty_input"]});
        let names: Vec<_> = selected(raw.as_object().unwrap())
            .iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["empty_input", "voice_lifecycle"]);
        let raw = json!({"voice_lifecycle": false});
        assert!(
            selected(raw.as_object().unwrap())
                .iter()
                .all(|s| s.name != VOICE_LIFECYCLE)
        );
    }

    #[test]
    fn clone_models_by_name() {
        assert!(is_clone_model("Qwen/Qwen3-TTS-12Hz-1.7B-Base"));
        assert!(is_clone_model("/models/qwen3-tts-12hz-0.6b-base/"));
        assert!(!is_clone_model("Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice"));
        assert!(!is_clone_model("Qwen/Qwen3-TTS-12Hz-1.7B-Base-x"));
    }
}
