//! Issue #35: a typo is an error naming file, test, entry and key with the closest known
//! names, and a threshold must be able to check something. Each case here once passed
//! silently (the key ignored, the bound accepted).

mod common;

use common::{Fx, tts_case};
use dfx_core::config::load_plan;
use serde_json::json;

#[test]
fn a_misspelt_entry_key_is_refused_with_the_flag_argparse_would_read() {
    let fx = Fx::new();
    let e = fx.errors(&json!([tts_case("t", json!({"num_warmup": 0}))]).to_string());
    assert!(
        e.contains(
            "$TMP/cfg.json: test `t`, benchmark_params[0], key `num_warmup`: `num_warmup` \
                    would be read by vllm bench serve as `--num-warmups` (argparse abbreviation); \
                    write the full key (accepted: num_warmups)"
        ),
        "{e}"
    );
    let e = fx.errors(&json!([tts_case("t", json!({"datset_path": "x"}))]).to_string());
    assert!(
        e.contains("key `datset_path`: unknown entry key (accepted: closest: dataset_path"),
        "{e}"
    );
}

#[test]
fn a_misspelt_case_key_names_the_key_it_meant() {
    let fx = Fx::new();
    let mut c = tts_case("t", json!({}));
    let sp = c.as_object_mut().unwrap().remove("server_params").unwrap();
    c["sever_params"] = sp;
    let e = fx.errors(&json!([c]).to_string());
    assert!(
        e.contains(
            "test `t`, key `sever_params`: unknown case key (accepted: closest: server_params)"
        ),
        "{e}"
    );
    assert!(e.contains("missing required key `server_params`"), "{e}");
}

#[test]
fn a_misspelt_server_params_key_is_an_error() {
    let fx = Fx::new();
    let mut c = tts_case("t", json!({}));
    c["server_params"]["serve_arg"] = json!({"max-model-len": 4096});
    let e = fx.errors(&json!([c]).to_string());
    assert!(
        e.contains("key `server_params.serve_arg`: unknown server_params key (accepted: closest: serve_args"),
        "{e}"
    );
}

#[test]
fn a_misspelt_metric_in_a_lone_hardware_bucket_names_the_metric() {
    let fx = Fx::new();
    let baseline = json!({"SIMx20": {"median_audio_ttfp_msx": 500}});
    let e = fx.errors(&json!([tts_case("t", json!({"baseline": baseline}))]).to_string());
    assert!(
        e.contains(
            "key `baseline.SIMx20.median_audio_ttfp_msx`: unknown metric \
                    `median_audio_ttfp_msx` (accepted: closest: median_audio_ttfp_ms"
        ),
        "{e}"
    );
    assert!(!e.contains("unknown metric `SIMx20`"), "{e}");
    // A label no table knows, with a misspelt metric: still the bucket.
    let baseline = json!({"RTX4090": {"p99_e2el": 500}});
    let e = fx.errors(&json!([tts_case("t", json!({"baseline": baseline}))]).to_string());
    assert!(
        e.contains("key `baseline.RTX4090.p99_e2el`: unknown metric `p99_e2el`"),
        "{e}"
    );
}

#[test]
fn inline_bounds_that_check_nothing_are_errors() {
    let fx = Fx::new();
    let baseline = json!({"median_audio_ttfp_ms": -5, "audio_throughput": [0],
                          "p99_e2el_ms": {"1": 0}, "failed": 0});
    let e = fx.errors(&json!([tts_case("t", json!({"baseline": baseline}))]).to_string());
    for want in [
        "key `baseline.median_audio_ttfp_ms`: a ceiling of -5 can never hold: \
         `median_audio_ttfp_ms` is never negative (accepted: a finite number > 0)",
        "key `baseline.audio_throughput[0]`: a floor of 0 checks nothing",
        "key `baseline.p99_e2el_ms.1`: a ceiling of 0 can never hold",
    ] {
        assert!(e.contains(want), "missing {want:?} in:\n{e}");
    }
    // `failed: 0` (no failures allowed) is a ceiling that holds.
    assert!(!e.contains("`failed`"), "{e}");
    // Nested buckets too, and NaN cannot even be written.
    let baseline = json!({"H100": {"audio_throughput": -5}});
    let e = fx.errors(&json!([tts_case("t", json!({"baseline": baseline}))]).to_string());
    assert!(
        e.contains("key `baseline.H100.audio_throughput`: a floor of -5"),
        "{e}"
    );
    let text = json!([tts_case("t", json!({}))]).to_string().replace(
        "\"max_concurrency\":[1]",
        "\"max_concurrency\":[1],\"baseline\":{\"rtfx\":NaN}",
    );
    assert!(
        fx.errors(&text).contains("invalid JSON"),
        "NaN must not load"
    );
}

#[test]
fn store_bounds_that_check_nothing_are_errors_naming_the_file() {
    let fx = Fx::new();
    let cfg = fx.write("cfg.json", &json!([tts_case("t", json!({}))]).to_string());
    fx.write(
        "baselines/H100.json",
        r#"{"t::voice_clone_latency_seed-tts::c1": {"mean_ttft_ms": -1, "rtfx": 2}}"#,
    );
    let e = load_plan(&fx.opts(&[cfg], "H100")).unwrap_err();
    let e = fx.scrub(&e.to_string());
    assert!(
        e.contains(
            "$TMP/baselines/H100.json, key `t::voice_clone_latency_seed-tts::c1.mean_ttft_ms`: \
                    a ceiling of -1 can never hold"
        ),
        "{e}"
    );
    assert!(!e.contains("rtfx"), "{e}");
}

#[test]
fn the_plan_names_the_hardware_labels_of_configs_and_stores() {
    let fx = Fx::new();
    let baseline = json!({"RTX4090": {"rtfx": 1}, "A3": {"rtfx": 1}});
    let cfg = fx.write(
        "cfg.json",
        &json!([tts_case("t", json!({"baseline": baseline}))]).to_string(),
    );
    fx.write("baselines/B60.json", "{}");
    let plan = load_plan(&fx.opts(&[cfg], "H100")).unwrap();
    // H100 from the case's hardware_marks, B60 from the store's file name.
    assert_eq!(plan.hardware_labels, ["A3", "B60", "H100", "RTX4090"]);
    assert!(dfx_core::hardware::check_label("RTX4090", &plan.hardware_labels).is_ok());
    assert!(dfx_core::hardware::check_label("RTX409O", &plan.hardware_labels).is_err());
}
