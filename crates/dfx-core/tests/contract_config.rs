//! Contract entries (`"benchmark_runner": "contract"`): one trial per entry whose
//! `num_prompts` is its scenario count; every bad key is a load-time error naming file,
//! test, entry and key with what is accepted.

mod common;

use common::Fx;
use dfx_core::contract::SCENARIOS;
use dfx_core::plan::Dialect;
use serde_json::{Value, json};

fn config(entries: Value) -> String {
    json!([{
        "test_name": "test_contract",
        "benchmark_runner": "contract",
        "server_params": {"model": "Qwen/Qwen3-TTS-12Hz-1.7B-Base"},
        "benchmark_params": entries
    }])
    .to_string()
}

#[test]
fn each_entry_is_one_trial_of_its_scenarios() {
    let fx = Fx::new();
    let plan = fx
        .load(&config(json!([
            {"name": "all"},
            {"name": "two", "scenarios": ["empty_input", "malformed_json"]},
            {"name": "no_voices", "voice_lifecycle": false, "timeout_s": 5}
        ])))
        .unwrap();
    let got: Vec<(&str, u64)> = plan
        .trials
        .iter()
        .map(|t| (t.name.as_str(), t.step.num_prompts.get()))
        .collect();
    let n = SCENARIOS.len() as u64;
    assert_eq!(
        got,
        [
            ("test_contract::all::contract", n),
            ("test_contract::two::contract", 2),
            ("test_contract::no_voices::contract", n - 1)
        ]
    );
    assert!(
        plan.trials
            .iter()
            .all(|t| t.entry.dialect == Dialect::Contract)
    );
}

#[test]
fn bad_keys_are_refused_with_where_and_what_is_accepted() {
    let fx = Fx::new();
    let e = fx.errors(&config(json!([
        {"name": "a", "scenarios": ["empty_input", "no_such_scenario"]},
        {"name": "b", "scenarios": ["empty_input", "empty_input"], "timeout_s": 0},
        {"name": "c", "scenarios": "empty_input", "voice_lifecycle": "no", "max_concurrency": [1]},
        {"name": "d", "scenarios": ["voice_lifecycle"], "voice_lifecycle": false}
    ])));
    for want in [
        "cfg.json",
        "test_contract",
        "benchmark_params[0]",
        "scenarios[1]",
        "unknown scenario \"no_such_scenario\"",
        "malformed_json, wrong_type",
        "listed twice",
        "timeout_s",
        "voice_lifecycle",
        "max_concurrency",
        "unknown contract entry key",
        "while `voice_lifecycle` is false",
    ] {
        assert!(e.contains(want), "missing {want:?} in:\n{e}");
    }
}
