//! `vllm bench serve` flags that change what a run measures or reports and that the native
//! bench has no counterpart for. Run natively, such an entry would report a result it did
//! not ask for (`goodput` → `request_goodput: null`), so preflight refuses it and names
//! `--bench vllm`. Flags the native bench implements (sampling, dataset, load and
//! percentile keys) or that change nothing measured are not listed.

use serde_json::{Map, Value};

/// The flags (as `vllm bench serve` spells them, without `--`).
const UNIMPLEMENTED: &[&str] = &[
    "goodput",
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(raw: Value) -> Map<String, Value> {
        raw.as_object().unwrap().clone()
    }

    #[test]
    fn measurement_flags_without_a_native_counterpart_are_named() {
        let e = entry(json!({"dataset_name": "seed-tts", "goodput": ["e2el:500"]}));
        assert_eq!(unimplemented_flag(&e).as_deref(), Some("goodput"));
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
    fn every_listed_flag_is_a_vllm_bench_flag() {
        let known = dfx_core::config::known_keys::vllm_bench_flags();
        for f in UNIMPLEMENTED {
            assert!(known.contains(f), "{f}");
        }
    }
}
