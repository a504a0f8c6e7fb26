//! `vllm bench serve` flags that change what a run measures or reports and that the native
//! bench has no counterpart for. Run natively, such an entry would report a result it did
//! not ask for (`ramp-up-strategy` → a steady rate), so preflight refuses it and names
//! `--bench vllm`. Flags the native bench implements (sampling, dataset, load and
//! percentile keys) or that change nothing measured are not listed. `goodput` is measured
//! by the speech and chat-omni steps only ([`goodput_refusal`]).

use dfx_core::bench::PreflightError;
use dfx_core::goodput::Slo;
use dfx_core::plan::{BenchEntry, Dialect};
use serde_json::{Map, Value};

/// The flags (as `vllm bench serve` spells them, without `--`).
const UNIMPLEMENTED: &[&str] = &[
    "ramp-up-strategy",
    "ramp-up-start-rps",
    "ramp-up-end-rps",
    "probe-request-rate",
    "use-beam-search",
    "logprobs",
    "lora-modules",
    "lora-assignment",
];

/// The first key of an entry as written (`raw`) that is one of those flags and set (not
/// `null` or `false`).
pub(crate) fn unimplemented_flag(raw: &Map<String, Value>) -> Option<String> {
    raw.iter()
        .filter(|(_, v)| !v.is_null() && v.as_bool() != Some(false))
        .map(|(k, _)| k)
        .find(|k| UNIMPLEMENTED.contains(&k.replace('_', "-").as_str()))
        .cloned()
}

/// Why the native bench cannot measure the entry's `goodput`: a soak or a realtime entry
/// (only the speech and chat-omni steps count good requests) is refused like an
/// unimplemented flag; a chat-omni entry asking `continuity` (its streams are not
/// measured for continuity) names the SLOs it can measure.
pub(crate) fn goodput_refusal(entry: &BenchEntry) -> Option<PreflightError> {
    let g = entry.goodput.as_ref()?;
    if entry.dialect == Dialect::Stability || super::realtime::is_realtime(entry) {
        return Some(PreflightError::UnimplementedKey {
            key: "goodput".into(),
            bench: "native",
        });
    }
    (super::omni::is_chat(entry) && g.bound(Slo::Continuity).is_some()).then(|| {
        PreflightError::Goodput(
            "`goodput` SLO `continuity`: the chat-omni bench does not measure stream \
             continuity (accepted for chat-omni: ttft, tpot, e2el, audio_ttfp, audio_rtf)"
                .into(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(raw: Value) -> Map<String, Value> {
        raw.as_object().unwrap().clone()
    }

    #[test]
    fn measurement_flags_without_a_native_counterpart_are_named() {
        let e = entry(json!({"ramp-up-strategy": "linear"}));
        assert_eq!(unimplemented_flag(&e).as_deref(), Some("ramp-up-strategy"));
    }

    #[test]
    fn implemented_or_unset_flags_pass() {
        let e = entry(json!({"temperature": 0.5, "top_p": 0.9, "num_warmups": 2,
                             "goodput": null, "use_beam_search": false}));
        assert_eq!(unimplemented_flag(&e), None);
    }

    #[test]
    fn goodput_is_measured_by_speech_and_chat_steps_only() {
        use dfx_core::plan::GoodputSpec;
        let with = |backend: &str, dialect, slos: &str| {
            let mut e = dfx_testkit::trials::entry("g");
            e.backend = Some(backend.into());
            e.dialect = dialect;
            e.goodput = Some(GoodputSpec::parse(&json!(slos)).unwrap());
            goodput_refusal(&e)
        };
        let all = "ttft:100 e2el:900 audio_rtf:1 continuity:100";
        assert_eq!(with("openai-audio-speech", Dialect::Omni, all), None);
        assert_eq!(
            with("openai-chat-omni", Dialect::Omni, "ttft:1 audio_rtf:1"),
            None
        );
        let chat = with("openai-chat-omni", Dialect::Omni, "continuity:100").unwrap();
        assert_eq!(chat.key(), "goodput");
        assert!(
            chat.to_string()
                .contains("does not measure stream continuity"),
            "{chat}"
        );
        for refused in [
            with("openai-audio-speech", Dialect::Stability, "e2el:1"),
            with("openai-realtime-tts", Dialect::Omni, "e2el:1"),
        ] {
            let e = refused.unwrap();
            assert!(e.to_string().contains("--bench vllm"), "{e}");
        }
        let mut none = dfx_testkit::trials::entry("g");
        none.dialect = Dialect::Stability;
        assert_eq!(goodput_refusal(&none), None);
    }

    #[test]
    fn every_listed_flag_is_a_vllm_bench_flag() {
        let known = dfx_core::config::known_keys::vllm_bench_flags();
        for f in UNIMPLEMENTED {
            assert!(known.contains(f), "{f}");
        }
    }
}
