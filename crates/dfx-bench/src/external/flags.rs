//! Flags of one `vllm bench serve --omni` run: the entry's own keys, rendered as upstream's
//! DFX runner renders them, and the flags of one sweep step.

use dfx_core::plan::{StepKind, SweepStep, python_float_str};
use serde_json::{Map, Value};

use super::pyfmt;

/// Entry keys that are never bench flags (`docs/config.md` ("Exclude set")): upstream's
/// set plus dfx-perf's own keys, kept in dfx-core beside the other known key lists.
pub use dfx_core::config::known_keys::EXCLUDED_KEYS;

/// Entry keys upstream's stability runner never passes to a batch's `vllm bench`
/// (`tests/dfx/stability/conftest.py`, `_build_base_args`): its own loop keys and the sweep
/// keys the batch sets itself.
pub(super) const STABILITY_EXCLUDED_KEYS: &[&str] = &[
    "request_rate",
    "max_concurrency",
    "num_prompts",
    "baseline",
    "duration_sec",
    "num_prompts_per_batch",
];

/// Whether the key is upstream's `extra_body` / `extra-body` (skipped when it is `{}`).
fn is_extra_body(key: &str) -> bool {
    key == "extra_body" || key == "extra-body"
}

/// `--key-with-dashes` for an entry key: every `_` becomes `-` (a key written with dashes,
/// like `percentile-metrics`, stays as written).
pub(super) fn flag_name(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// Every non-excluded key of the entry as written, in file order: `true` → bare flag,
/// `false`/`null` → nothing, object or list → compact JSON, number → Python's `str`,
/// string → itself. An empty `extra_body` (`{}`) is not passed, as upstream does.
///
/// Upstream renders lists with Python's `str(list)` (`['a', 'b']`), which no `vllm bench`
/// flag can parse; dfx-perf renders them as compact JSON like objects (`docs/config.md`
/// ("Exclude set")). None of the upstream configs has a list-valued bench flag.
pub(super) fn entry_flags(raw: &Map<String, Value>) -> Vec<String> {
    entry_flags_except(raw, EXCLUDED_KEYS)
}

/// [`entry_flags`] with another exclude set (the stability runner's).
pub(super) fn entry_flags_except(raw: &Map<String, Value>, excluded: &[&str]) -> Vec<String> {
    let mut args = Vec::new();
    for (key, value) in raw {
        if excluded.contains(&key.as_str()) {
            continue;
        }
        let flag = flag_name(key);
        if flag == "--goodput" {
            goodput_flag(value, &mut args);
            continue;
        }
        match value {
            Value::Null | Value::Bool(false) => {}
            Value::Object(o) if o.is_empty() && is_extra_body(key) => {}
            Value::Bool(true) => args.push(flag),
            Value::Object(_) | Value::Array(_) => {
                args.push(flag);
                args.push(pyfmt::compact_json(value));
            }
            Value::Number(n) => {
                args.push(flag);
                args.push(pyfmt::number_str(n));
            }
            Value::String(s) => {
                args.push(flag);
                args.push(s.clone());
            }
        }
    }
    args
}

/// `--goodput` as vllm's `nargs="+"` reads it: one argument per `KEY:VALUE` pair, from a
/// string of pairs or a list of them (the plan checked them at load); one argument of
/// JSON or of several pairs would be a `vllm bench` format error. Nothing when unset.
fn goodput_flag(value: &Value, args: &mut Vec<String>) {
    let pairs: Vec<&str> = match value {
        Value::String(s) => s.split_whitespace().collect(),
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .flat_map(str::split_whitespace)
            .collect(),
        _ => Vec::new(),
    };
    if !pairs.is_empty() {
        args.push("--goodput".into());
        args.extend(pairs.into_iter().map(String::from));
    }
}

/// The step's flags: `--request-rate R --num-prompts N` for a rate step,
/// `--max-concurrency C --num-prompts N --request-rate inf` for a concurrency step.
pub(super) fn step_flags(raw: &Map<String, Value>, step: &SweepStep) -> Vec<String> {
    let n = step.num_prompts.to_string();
    match step.kind {
        StepKind::RequestRate { request_rate } => vec![
            "--request-rate".into(),
            rate_text(raw, step.index, request_rate),
            "--num-prompts".into(),
            n,
        ],
        StepKind::Concurrency { max_concurrency } => vec![
            "--max-concurrency".into(),
            max_concurrency.to_string(),
            "--num-prompts".into(),
            n,
            "--request-rate".into(),
            "inf".into(),
        ],
    }
}

/// The step's value part of the upstream result file name (`flow`): the rate or the
/// concurrency as Python's `str` prints it.
pub(super) fn flow_text(raw: &Map<String, Value>, step: &SweepStep) -> String {
    match step.kind {
        StepKind::RequestRate { request_rate } => rate_text(raw, step.index, request_rate),
        StepKind::Concurrency { max_concurrency } => max_concurrency.to_string(),
    }
}

/// Upstream passes `str(qps)` of the value as written, so `2` stays `2` and `2.0` stays
/// `2.0`. The written value is looked up in the entry (after upstream's repetition of a
/// one-element list); when it does not match the step (never, for a plan built from the
/// same entry) the validated rate is printed as a Python float.
fn rate_text(raw: &Map<String, Value>, index: usize, rate: f64) -> String {
    // `request-rate` is the diffusion dialect's spelling.
    let written = match raw.get("request_rate").or_else(|| raw.get("request-rate")) {
        Some(Value::Array(items)) if items.len() == 1 => items.first(),
        Some(Value::Array(items)) => items.get(index),
        Some(other) => Some(other),
        None => None,
    };
    match written {
        Some(Value::Number(n)) if n.as_f64() == Some(rate) => pyfmt::number_str(n),
        Some(Value::String(s)) if s.trim().parse::<f64>().ok() == Some(rate) => s.clone(),
        _ => python_float_str(rate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn entry_flags_follow_upstream_rendering() {
        let raw = map(json!({
            "task": "voice_clone", "eval_phase": "latency", "enabled": true, "name": "x",
            "dataset_name": "random-mm", "num_prompts": [10], "request_rate": [0.1],
            "max_concurrency": [1], "num_warmups": 3, "trust_remote_code": true,
            "baseline": {"H100": {}}, "expected_duplex_audio_turns_per_session": 2,
            "random_range_ratio": 0.0, "random_input_len": 100, "ignore_eos": true,
            "disable_tqdm": false, "label": null,
            "random_mm_bucket_config": {"(0, 60, 3)": 1.0},
            "percentile-metrics": "ttft,e2el", "goodput": ["e2el:500", "ttft:100"],
            "extra_body": {}, "omniinteract_min_ia_qtf1": 0.5, "warmup_requests": 2
        }));
        assert_eq!(
            entry_flags(&raw),
            [
                "--dataset-name",
                "random-mm",
                "--random-range-ratio",
                "0.0",
                "--random-input-len",
                "100",
                "--ignore-eos",
                "--random-mm-bucket-config",
                r#"{"(0, 60, 3)":1.0}"#,
                "--percentile-metrics",
                "ttft,e2el",
                "--goodput",
                "e2el:500",
                "ttft:100",
            ]
        );
    }

    #[test]
    fn rate_text_keeps_the_written_form() {
        let step = |index, rate| SweepStep {
            kind: StepKind::RequestRate { request_rate: rate },
            index,
            num_prompts: std::num::NonZeroU64::new(10).unwrap(),
            label: String::new(),
        };
        let raw = map(json!({"request_rate": [2.0, 4, 0.5]}));
        assert_eq!(flow_text(&raw, &step(0, 2.0)), "2.0");
        assert_eq!(flow_text(&raw, &step(1, 4.0)), "4");
        assert_eq!(flow_text(&raw, &step(2, 0.5)), "0.5");
        let raw = map(json!({"request_rate": [1.0], "num_prompts": [5, 6]}));
        assert_eq!(flow_text(&raw, &step(1, 1.0)), "1.0");
        let raw = map(json!({"request_rate": 3}));
        assert_eq!(
            step_flags(&raw, &step(0, 3.0)),
            ["--request-rate", "3", "--num-prompts", "10"]
        );
        // Not found as written: printed as a Python float.
        assert_eq!(flow_text(&Map::new(), &step(0, 3.0)), "3.0");
    }

    /// vllm's `--goodput` takes one argument per pair (`nargs="+"`), whichever form the
    /// entry wrote.
    #[test]
    fn goodput_pairs_are_separate_arguments() {
        for value in [json!("ttft:100  tpot:50"), json!(["ttft:100", "tpot:50"])] {
            let raw = map(json!({"goodput": value}));
            assert_eq!(entry_flags(&raw), ["--goodput", "ttft:100", "tpot:50"]);
        }
        assert!(entry_flags(&map(json!({"goodput": null}))).is_empty());
    }

    #[test]
    fn truthiness_is_pythons() {
        use dfx_core::lenient::python_truthy;
        assert!(python_truthy(Some(&json!(true))));
        assert!(python_truthy(Some(&json!(1))));
        assert!(python_truthy(Some(&json!("yes"))));
        assert!(!python_truthy(Some(&json!(0))));
        assert!(!python_truthy(Some(&json!(""))));
        assert!(!python_truthy(Some(&json!(null))));
        assert!(!python_truthy(None));
    }
}
