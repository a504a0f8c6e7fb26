//! Every kind of config error, pinned by a snapshot of the exact message the user sees.

mod common;

use common::{Fx, tts_case};
use dfx_core::config::load_plan;
use serde_json::json;

/// Snapshot of the error report of loading one config text.
macro_rules! error_snapshot {
    ($name:ident, $text:expr) => {
        #[test]
        fn $name() {
            let fx = Fx::new();
            let text: String = $text;
            insta::assert_snapshot!(stringify!($name), fx.errors(&text));
        }
    };
}

fn one(entry: serde_json::Value) -> String {
    json!([tts_case("test_a", entry)]).to_string()
}

error_snapshot!(
    invalid_json_names_line_and_column,
    "[\n  {\"test_name\": \"a\",\n   \"server_params\": {,}\n  }\n]".into()
);
error_snapshot!(top_level_not_an_array, r#"{"test_name": "a"}"#.into());
error_snapshot!(case_not_an_object, r#"[3, "x"]"#.into());
error_snapshot!(missing_required_keys, "[{}]".into());
error_snapshot!(
    mistyped_required_keys,
    r#"[{"test_name": 7, "server_params": [], "benchmark_params": {}},
        {"test_name": "", "server_params": {"model": 5}, "benchmark_params": [1]},
        {"test_name": "b", "server_params": {}, "benchmark_params": []}]"#
        .into()
);
error_snapshot!(
    sweep_length_mismatch,
    one(json!({"num_prompts": [10, 20], "max_concurrency": [1, 2, 4]}))
);
error_snapshot!(
    zero_or_negative_load,
    one(json!({"num_prompts": [10, 10], "max_concurrency": [0, -2], "request_rate": [-1.0, 0]}))
);
error_snapshot!(
    wrong_sweep_types,
    one(json!({"num_prompts": "10", "max_concurrency": [1.5], "request_rate": "inf"}))
);
error_snapshot!(
    no_sweep,
    one(json!({"max_concurrency": null, "num_prompts": 10}))
);
error_snapshot!(sweep_without_num_prompts, one(json!({"num_prompts": null})));
error_snapshot!(
    baseline_list_too_short,
    one(
        json!({"num_prompts": 8, "max_concurrency": [1, 2, 4], "baseline": {"H100": {"mean_e2el_ms": [1, 2, 3]}, "A3": {"mean_e2el_ms": [1]}}})
    )
);
error_snapshot!(
    baseline_dict_without_step_key,
    one(
        json!({"num_prompts": 8, "max_concurrency": [8, 16], "request_rate": [2.0], "baseline": {"p99_e2el_ms": {"8": 100, "2": 50}}})
    )
);
error_snapshot!(
    unknown_baseline_shape,
    one(
        json!({"baseline": {"mean_e2el_ms": "fast", "median_audio_rtf": [0.1, true], "audio_throughput": {"1": "x"}}})
    )
);
error_snapshot!(
    unknown_metric,
    one(json!({"baseline": {"H100": {"median_audio_ttfp": [1], "throughput": 3}}}))
);
error_snapshot!(baseline_not_an_object, one(json!({"baseline": [1, 2]})));
error_snapshot!(
    mistyped_optional_keys,
    one(
        json!({"enabled": "yes", "dataset_name": 3, "extra_body": "voice=x", "num_warmups": -1, "burstiness": 0, "percentile-metrics": ["ttft"]})
    )
);
error_snapshot!(
    bad_metric_percentiles,
    json!([
        tts_case("test_a", json!({"metric-percentiles": "50,p99", "percentile-metrics": "e2el"})),
        tts_case("test_b", json!({"metric_percentiles": "101"})),
        {
            "test_name": "test_soak",
            "server_params": {"model": "m"},
            "benchmark_params": [{
                "backend": "openai-audio-speech", "max_concurrency": 2, "duration_sec": 60,
                "metric-percentiles": "50,nan"
            }]
        }
    ])
    .to_string()
);
error_snapshot!(
    duplicate_trial_names,
    json!([{
        "test_name": "test_a",
        "server_params": {"model": "m"},
        "benchmark_params": [
            {"dataset_name": "seed-tts", "num_prompts": 4, "max_concurrency": 1},
            {"dataset_name": "seed-tts", "num_prompts": 4, "max_concurrency": 1},
            {"name": "seed-tts_1", "num_prompts": 4, "max_concurrency": 1}
        ]
    }])
    .to_string()
);
error_snapshot!(
    bad_server_params,
    json!([{
        "test_name": "test_a",
        "server_type": "tgi",
        "server_params": {
            "model": "m",
            "serve_args": 5,
            "extra_cli_args": "--async-chunk",
            "use_omni": "yes",
            "env": {"A": [1]},
            "ready_timeout_s": -3,
            "update": {"x": 1}
        },
        "benchmark_params": []
    }])
    .to_string()
);
error_snapshot!(
    unknown_deploy_name,
    json!([{"test_name": "test_a", "server_params": {"model": "m", "stage_config_name": "nope"}, "benchmark_params": []}]).to_string()
);
error_snapshot!(
    bad_marks,
    json!([{"test_name": "test_a", "mark": ["", 1, {"hardware_marks": {"res": "H100"}}, {"other": 1}], "server_params": {"model": "m"}, "benchmark_params": []}]).to_string()
);

#[test]
fn unreadable_file() {
    let fx = Fx::new();
    let missing = fx.path().join("missing.json");
    let e = load_plan(&fx.opts(&[missing], "H100")).unwrap_err();
    insta::assert_snapshot!("unreadable_file", fx.scrub(&e.to_string()));
}

#[test]
fn unknown_mark_tag_lists_the_known_tags() {
    let fx = Fx::new();
    let f = fx.write(
        "cfg.json",
        &json!([tts_case("test_a", json!({}))]).to_string(),
    );
    let mut opts = fx.opts(&[f], "H100");
    opts.mark = Some("tts and not (slow or nightly)".into());
    let e = load_plan(&opts).unwrap_err();
    insta::assert_snapshot!("unknown_mark_tag", e.to_string());
    opts.mark = Some("tts and".into());
    let e = load_plan(&opts).unwrap_err();
    insta::assert_snapshot!("invalid_mark_expression", e.to_string());
}

#[test]
fn bad_baseline_store_names_the_file() {
    let fx = Fx::new();
    let f = fx.write(
        "cfg.json",
        &json!([tts_case("test_a", json!({}))]).to_string(),
    );
    fx.write(
        "baselines/H100.json",
        r#"{"test_a::voice_clone_latency_seed-tts::c1": {"mean_e2el_ms": "x", "latency": 3}, "other": []}"#,
    );
    let e = load_plan(&fx.opts(&[f], "H100")).unwrap_err();
    insta::assert_snapshot!("bad_baseline_store", fx.scrub(&e.to_string()));
}

#[test]
fn every_error_of_every_file_is_reported() {
    let fx = Fx::new();
    let a = fx.write("a.json", &one(json!({"max_concurrency": 0})));
    let b = fx.write("b.json", "nope");
    let c = fx.write(
        "c.json",
        &json!([
            tts_case("test_c", json!({"baseline": {"bogus": 1}})),
            tts_case(
                "test_d",
                json!({"num_prompts": [1, 2], "max_concurrency": [1, 2, 3]})
            )
        ])
        .to_string(),
    );
    let e = load_plan(&fx.opts(&[a, b, c], "H100")).unwrap_err();
    assert_eq!(e.0.len(), 4, "{e}");
    insta::assert_snapshot!("all_errors_collected", fx.scrub(&e.to_string()));
}

error_snapshot!(bad_inline_deploy_config, {
    let mut case = tts_case("test_a", json!({}));
    case["server_params"]["serve_args"] = json!({
        "deploy-config-inline": {"type": "toml", "content": {"a": 1}},
        "x-inline": {"type": "yaml"}
    });
    json!([case]).to_string()
});

#[test]
fn connection_key_refuses_other_values_naming_file_test_entry_and_key() {
    let fx = Fx::new();
    let report = fx.errors(&one(json!({"connection": "keepalive"})));
    assert_eq!(
        report,
        "1 config error(s):\n  - $TMP/cfg.json: test `test_a`, benchmark_params[0], key \
         `connection`: invalid value \"keepalive\" (accepted: \"fresh\" or \"pooled\")\n"
    );
    let report = fx.errors(&one(json!({"connection": true})));
    assert!(
        report.contains(
            "key `connection`: wrong type: got a boolean (accepted: \"fresh\" or \"pooled\")"
        ),
        "{report}"
    );
}

#[test]
fn connection_key_reaches_the_plan() {
    use dfx_core::plan::ConnectionMode;
    let fx = Fx::new();
    for (value, want) in [
        (json!("fresh"), Some(ConnectionMode::Fresh)),
        (json!("pooled"), Some(ConnectionMode::Pooled)),
        (json!(null), None),
    ] {
        let plan = fx.load(&one(json!({"connection": value}))).unwrap();
        assert_eq!(plan.trials[0].entry.connection, want, "{value}");
    }
}

#[test]
fn repeats_key_is_bounded_and_reaches_the_plan() {
    let fx = Fx::new();
    for bad in [json!(0), json!(101), json!(2.5), json!("3")] {
        let report = fx.errors(&one(json!({"repeats": bad})));
        assert!(
            report.contains("$TMP/cfg.json: test `test_a`, benchmark_params[0], key `repeats`")
                && report.contains("(accepted: an integer from 1 to 100)"),
            "{bad}: {report}"
        );
    }
    let plan = fx.load(&one(json!({"repeats": 3}))).unwrap();
    let entry = &plan.trials[0].entry;
    let nz = |n| std::num::NonZeroU32::new(n).unwrap();
    assert_eq!(entry.repeats, Some(nz(3)));
    assert_eq!(entry.repeats(None), nz(3));
    assert_eq!(entry.repeats(Some(nz(5))), nz(5), "the flag wins");
    let plan = fx.load(&one(json!({}))).unwrap();
    assert_eq!(plan.trials[0].entry.repeats(None), nz(1));
}

#[test]
fn capacity_key_is_checked_and_makes_one_trial() {
    let fx = Fx::new();
    let cap = json!({"max_p99_ttfp_ms": 800, "start_rate": 2, "max_rate": 64});
    let plan = fx
        .load(&one(
            json!({"capacity": cap, "request_rate": null, "max_concurrency": null,
                          "num_prompts": [32]}),
        ))
        .unwrap();
    assert_eq!(plan.trials.len(), 1);
    let t = &plan.trials[0];
    assert_eq!(
        (t.step.label.as_str(), t.step.num_prompts.get()),
        ("capacity", 32)
    );
    assert!(t.name.ends_with("::capacity"), "{}", t.name);
    let spec = t.entry.capacity.unwrap();
    assert_eq!(
        (
            spec.start_rate,
            spec.min_continuity,
            spec.boundary_repeats.get()
        ),
        (2.0, 0.95, 3)
    );
    for (bad, key) in [
        (
            json!({"capacity": {"start_rate": 2}, "num_prompts": 8}),
            "capacity.max_p99_ttfp_ms",
        ),
        (
            json!({"capacity": {"max_p99_ttfp_ms": 5, "speed": 1}, "num_prompts": 8}),
            "capacity.speed",
        ),
        (
            json!({"capacity": {"max_p99_ttfp_ms": 5, "min_continuity": 2}, "num_prompts": 8}),
            "capacity.min_continuity",
        ),
        (
            json!({"capacity": {"max_p99_ttfp_ms": 5, "start_rate": 99, "max_rate": 8}, "num_prompts": 8}),
            "capacity.start_rate",
        ),
        (
            json!({"capacity": {"max_p99_ttfp_ms": 5}, "num_prompts": [8, 16]}),
            "num_prompts",
        ),
        (
            json!({"capacity": {"max_p99_ttfp_ms": 5}, "num_prompts": 8, "request_rate": [1]}),
            "request_rate",
        ),
        (json!({"capacity": 5, "num_prompts": 8}), "capacity"),
    ] {
        let mut entry = bad.clone();
        entry["max_concurrency"] = serde_json::Value::Null;
        let report = fx.errors(&one(entry));
        assert!(
            report.contains(&format!("benchmark_params[0], key `{key}`")),
            "{bad}: {report}"
        );
    }
}

/// The problem part of the error on `key` (between the key and the accepted values).
fn problem_on(report: &str, key: &str) -> String {
    let at = format!("key `{key}`: ");
    let line = report
        .lines()
        .find(|l| l.contains(&at))
        .unwrap_or_else(|| panic!("no error on `{key}` in:\n{report}"));
    let rest = &line[line.find(&at).unwrap() + at.len()..];
    rest[..rest.find(" (accepted: ").unwrap_or(rest.len())].to_string()
}

/// One rule, one message: a refused `max_concurrency` or `request_rate` reads the same in
/// a sweep entry and in a stability entry (the stability dialect had its own check, which
/// said only "invalid value 0").
#[test]
fn a_stability_entry_refuses_a_sweep_value_with_the_sweeps_words() {
    let fx = Fx::new();
    for (key, bad) in [
        ("max_concurrency", json!(0)),
        ("max_concurrency", json!(-2)),
        ("max_concurrency", json!(1.5)),
        ("max_concurrency", json!(5000)),
        ("max_concurrency", json!("4")),
        ("request_rate", json!(0)),
        ("request_rate", json!(1e9)),
        ("request_rate", json!("fast")),
    ] {
        let sweep = fx.errors(&one(json!({
            "max_concurrency": null, "request_rate": null, key: bad.clone(), "num_prompts": 4
        })));
        let soak = fx.errors(&one(json!({
            "max_concurrency": null, "num_prompts": null,
            "duration_sec": 60, key: bad.clone()
        })));
        let want = problem_on(&sweep, key);
        assert_eq!(problem_on(&soak, key), want, "{key} = {bad}:\n{soak}");
        assert!(
            want.starts_with("invalid value") || want.starts_with("wrong type"),
            "{want}"
        );
    }
}

/// A soak's batch size is a count like every other: 0 is refused (it was run as 1).
#[test]
fn a_stability_batch_of_zero_is_refused() {
    let fx = Fx::new();
    let e = fx.errors(&one(json!({
        "num_prompts": null, "duration_sec": 60, "num_prompts_per_batch": 0
    })));
    assert!(
        e.contains(
            "key `num_prompts_per_batch`: invalid value 0 (accepted: an integer from 1 to 1000000)"
        ),
        "{e}"
    );
}

/// `goodput` is read once at load: a bad value is an error naming file, test, entry and
/// key with the closest SLO names; a good one reaches the plan in either spelling.
#[test]
fn goodput_key_is_checked_and_reaches_the_plan() {
    use dfx_core::goodput::Slo;
    let fx = Fx::new();
    let report = fx.errors(&one(json!({"goodput": "ttft:100 audio_ttft:300"})));
    assert!(
        report.contains(
            "$TMP/cfg.json: test `test_a`, benchmark_params[0], key `goodput`: unknown SLO \
             name `audio_ttft` (closest: audio_ttfp"
        ) && report.contains("(accepted: \"KEY:VALUE\" pairs"),
        "{report}"
    );
    for bad in [
        json!("e2el:0"),
        json!("e2el:-5"),
        json!(["e2el"]),
        json!(500),
    ] {
        let report = fx.errors(&one(json!({"goodput": bad})));
        assert!(
            report.contains("benchmark_params[0], key `goodput`"),
            "{bad}: {report}"
        );
    }
    for value in [
        json!("e2el:500 continuity:100"),
        json!(["e2el:500", "continuity:100"]),
    ] {
        let plan = fx.load(&one(json!({"goodput": value}))).unwrap();
        let g = plan.trials[0].entry.goodput.as_ref().expect("parsed");
        assert_eq!(g.bound(Slo::E2el), Some(500.0), "{value}");
        assert_eq!(g.bound(Slo::Continuity), Some(100.0), "{value}");
    }
    let plan = fx.load(&one(json!({"goodput": null}))).unwrap();
    assert_eq!(plan.trials[0].entry.goodput, None);
}

/// A baseline may gate on the goodput keys (registered, higher is better).
#[test]
fn a_baseline_may_gate_on_goodput() {
    use dfx_core::metrics::{Direction, direction_of};
    let fx = Fx::new();
    let entry = json!({"goodput": "e2el:2000", "num_prompts": 8, "max_concurrency": 1,
                       "baseline": {"request_goodput": 0.5, "slo_attainment": 0.9}});
    let plan = fx.load(&one(entry)).unwrap();
    assert_eq!(plan.trials.len(), 1);
    for key in ["request_goodput", "slo_attainment"] {
        assert_eq!(direction_of(key), Some(Direction::HigherIsBetter), "{key}");
    }
    assert!(
        format!("{:?}", plan.trials[0].thresholds).contains("slo_attainment"),
        "{:?}",
        plan.trials[0].thresholds
    );
}
