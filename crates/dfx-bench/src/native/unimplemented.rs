//! `vllm bench serve` flags that change what a run measures or reports and that the native
//! bench has no counterpart for. Run natively, such an entry would report a result it did
//! not ask for (`ramp-up-strategy` → a steady rate), so preflight refuses it and names
//! `--bench vllm`. Flags the native bench implements (sampling, dataset, load and
//! percentile keys) or that change nothing measured are not listed. A `goodput` SLO the
//! entry's protocol has no figure for is refused too ([`goodput_refusal`]).

use dfx_core::bench::PreflightError;
use dfx_core::goodput::Slo;
use dfx_core::plan::BenchEntry;
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

/// Why the native bench cannot measure the entry's `goodput`: an SLO its protocol has no
/// figure for (chat-omni: `continuity`, its streams are not measured for continuity;
/// realtime: `tpot`, no inter-token times), with the SLOs it accepts. Speech sweeps and
/// soaks measure every SLO.
pub(crate) fn goodput_refusal(entry: &BenchEntry) -> Option<PreflightError> {
    let g = entry.goodput.as_ref()?;
    let (protocol, unmeasured, why) = if super::realtime::is_realtime(entry) {
        ("realtime", Slo::Tpot, "has no inter-token times")
    } else if super::omni::is_chat(entry) {
        (
            "chat-omni",
            Slo::Continuity,
            "does not measure stream continuity",
        )
    } else {
        return None;
    };
    g.bound(unmeasured)?;
    let accepted: Vec<&str> = (Slo::ALL.iter())
        .filter(|s| **s != unmeasured)
        .map(|s| s.name())
        .collect();
    Some(PreflightError::Goodput(format!(
        "`goodput` SLO `{}`: the {protocol} bench {why} (accepted for {protocol}: {})",
        unmeasured.name(),
        accepted.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dfx_core::plan::Dialect;
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
    fn goodput_slos_a_protocol_cannot_measure_are_named() {
        use dfx_core::plan::GoodputSpec;
        let with = |backend: &str, dialect, slos: &str| {
            let mut e = dfx_testkit::trials::entry("g");
            e.backend = Some(backend.into());
            e.dialect = dialect;
            e.goodput = Some(GoodputSpec::parse(&json!(slos)).unwrap());
            goodput_refusal(&e)
        };
        let all = "ttft:100 tpot:5 e2el:900 audio_ttfp:100 audio_rtf:1 continuity:100";
        assert_eq!(with("openai-audio-speech", Dialect::Omni, all), None);
        assert_eq!(with("openai-audio-speech", Dialect::Stability, all), None);
        assert_eq!(
            with(
                "openai-chat-omni",
                Dialect::Omni,
                "ttft:1 tpot:1 audio_rtf:1"
            ),
            None
        );
        let realtime = "ttft:1 e2el:1 audio_ttfp:1 audio_rtf:1 continuity:1";
        for backend in ["openai-realtime-tts", "openai-realtime-duplex"] {
            assert_eq!(with(backend, Dialect::Omni, realtime), None);
        }
        let chat = with("openai-chat-omni", Dialect::Omni, "continuity:100").unwrap();
        assert_eq!(chat.key(), "goodput");
        assert_eq!(
            chat.to_string(),
            "`goodput` SLO `continuity`: the chat-omni bench does not measure stream \
             continuity (accepted for chat-omni: ttft, tpot, e2el, audio_ttfp, audio_rtf)"
        );
        let rt = with("openai-realtime-tts", Dialect::Omni, "e2el:1 tpot:5").unwrap();
        assert_eq!(rt.key(), "goodput");
        assert_eq!(
            rt.to_string(),
            "`goodput` SLO `tpot`: the realtime bench has no inter-token times (accepted \
             for realtime: ttft, e2el, audio_ttfp, audio_rtf, continuity)"
        );
        let mut none = dfx_testkit::trials::entry("g");
        none.backend = Some("openai-realtime-tts".into());
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
