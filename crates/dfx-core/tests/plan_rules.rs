//! Plan-building rules: test concatenation, enabled entries, naming, marks, servers,
//! baseline store precedence, the diffusion dialect.

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use common::{Fx, tts_case};
use dfx_core::baseline::ThresholdSource;
use dfx_core::config::{DIFFUSION_UNSUPPORTED, load_plan};
use dfx_core::describe::describe_plan;
use dfx_core::plan::{Dialect, Plan};
use dfx_core::server::{ServeArgs, ServerType};
use serde_json::json;

fn names(p: &Plan) -> Vec<&str> {
    p.trials.iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn cases_sharing_a_test_name_concatenate_across_files() {
    let fx = Fx::new();
    let a = fx.write(
        "a.json",
        &json!([
            tts_case("test_x", json!({"eval_phase": "latency"})),
            tts_case("test_y", json!({})),
            tts_case(
                "test_x",
                json!({"eval_phase": "latency", "max_concurrency": [2, 4], "num_prompts": 8})
            )
        ])
        .to_string(),
    );
    let b = fx.write(
        "b.json",
        &json!([tts_case("test_x", json!({"eval_phase": "latency"}))]).to_string(),
    );
    let plan = load_plan(&fx.opts(&[a.clone(), b.clone()], "H100")).unwrap();
    assert_eq!(
        names(&plan),
        [
            "test_x::voice_clone_latency_seed-tts::c1",
            "test_x::voice_clone_latency_seed-tts_1::c2",
            "test_x::voice_clone_latency_seed-tts_1::c4",
            "test_x::voice_clone_latency_seed-tts_2::c1",
            "test_y::voice_clone_latency_seed-tts::c1",
        ]
    );
    let idx: Vec<usize> = plan.trials.iter().map(|t| t.entry.index).collect();
    assert_eq!(idx, [0, 1, 1, 2, 0]);
    assert_eq!(plan.trials[1].source.file, a);
    assert_eq!(plan.trials[1].source.case_index, 2);
    assert_eq!(plan.trials[3].source.file, b);
    assert_eq!(plan.trials[3].source.case_index, 0);
}

#[test]
fn disabled_entries_are_dropped_before_indices_are_assigned() {
    let fx = Fx::new();
    let cfg = json!([{
        "test_name": "t",
        "server_params": {"model": "m"},
        "benchmark_params": [
            {"enabled": false, "num_prompts": 1},
            {"num_prompts": 2, "max_concurrency": 1},
            {"enabled": true, "num_prompts": 3, "request_rate": 0.5},
            {"enabled": false, "this entry": "is never validated", "max_concurrency": -1}
        ]
    }]);
    let plan = fx.load(&cfg.to_string()).unwrap();
    assert_eq!(names(&plan), ["t::case0::c1", "t::case1::qps0.5"]);
    assert_eq!(plan.trials[0].source.raw_entry_index, 1);
    assert_eq!(plan.trials[1].source.raw_entry_index, 2);
    assert_eq!(
        plan.trials[1].step.num_prompts,
        std::num::NonZeroU64::new(3).unwrap()
    );
}

#[test]
fn names_prefer_name_then_task_phase_dataset_and_are_sanitised() {
    let fx = Fx::new();
    let cfg = json!([{
        "test_name": "test_n",
        "server_params": {"model": "m"},
        "benchmark_params": [
            {"name": "my run/1", "task": "ignored", "num_prompts": 1, "max_concurrency": 1},
            {"name": "", "task": "t2", "dataset_name": "seed tts", "num_prompts": 1, "max_concurrency": 1},
            {"eval_phase": "stress", "num_prompts": [5, 6], "max_concurrency": [3, 3]},
            {"num_prompts": 1, "request_rate": [0.25, 2, 10]}
        ]
    }]);
    let plan = fx.load(&cfg.to_string()).unwrap();
    assert_eq!(
        names(&plan),
        [
            "test_n::my_run_1::c1",
            "test_n::t2_seed_tts::c1",
            "test_n::stress::c3_0",
            "test_n::stress::c3_1",
            "test_n::case3::qps0.25",
            "test_n::case3::qps2.0",
            "test_n::case3::qps10.0",
        ]
    );
    assert_eq!(plan.trials[0].entry.suffix, "my_run_1");
}

#[test]
fn mark_expressions_select_cases() {
    let fx = Fx::new();
    let mut slow = tts_case("test_slow", json!({}));
    slow["mark"] = json!(["tts", "slow"]);
    let mut omni = tts_case("test_omni", json!({}));
    omni["mark"] = json!([{"hardware_marks": {"res": {"cuda": "H100"}}}, "omni"]);
    let f = fx.write(
        "cfg.json",
        &json!([tts_case("test_fast", json!({})), slow, omni]).to_string(),
    );
    let select = |expr: &str| {
        let mut opts = fx.opts(std::slice::from_ref(&f), "H100");
        opts.mark = Some(expr.into());
        let plan = load_plan(&opts).unwrap();
        plan.trials
            .iter()
            .map(|t| t.test_name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(select("tts"), ["test_fast", "test_slow"]);
    assert_eq!(select("not slow"), ["test_fast", "test_omni"]);
    assert_eq!(select("tts and not slow"), ["test_fast"]);
    assert_eq!(select("omni or slow"), ["test_slow", "test_omni"]);
    assert_eq!(
        select("(omni or tts) and not (slow)"),
        ["test_fast", "test_omni"]
    );
    let plan = fx.load(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(plan.trials[1].marks, ["tts", "slow"]);
    assert_eq!(plan.trials[0].hardware_marks, ["H100"]);
}

#[test]
fn server_spec_is_built_from_server_params_and_shared() {
    let fx = Fx::new();
    let cfg = json!([{
        "test_name": "t",
        "server_type": "sglang-omni",
        "server_params": {
            "model": "Qwen/Qwen3-TTS-12Hz-1.7B-Base",
            "serve_args": {"config": "deploy/x.yaml", "tp": 2, "flag": true},
            "extra_cli_args": ["--async-chunk"],
            "stage_overrides": {},
            "use_omni": false,
            "trust_remote_code": true,
            "env": {"A": "1", "B": 2, "C": true},
            "ready_timeout_s": 90.5
        },
        "benchmark_params": [
            {"num_prompts": [1, 2], "max_concurrency": [1, 2], "random_input_len": 100, "ignore_eos": true},
            {"num_prompts": 1, "request_rate": 1}
        ]
    }, {
        "test_name": "u",
        "server_params": {"model": "m", "serve_args": ["--port-offset", 3], "stage_overrides": {"1": {"devices": "1"}}},
        "benchmark_params": [{"num_prompts": 1, "max_concurrency": 1}]
    }]);
    let plan = fx.load(&cfg.to_string()).unwrap();
    let s = &plan.trials[0].server;
    assert_eq!(s.server_type, ServerType::SglangOmni);
    assert_eq!(s.model, "Qwen/Qwen3-TTS-12Hz-1.7B-Base");
    let ServeArgs::Map(m) = &s.serve_args else {
        panic!("map expected")
    };
    assert_eq!(m.keys().collect::<Vec<_>>(), ["config", "tp", "flag"]);
    assert_eq!(s.extra_cli_args, ["--async-chunk"]);
    assert_eq!(
        s.stage_overrides, None,
        "empty stage_overrides is dropped like upstream"
    );
    assert!(!s.use_omni);
    assert_eq!(s.env.get("B").map(String::as_str), Some("2"));
    assert_eq!(s.env.get("C").map(String::as_str), Some("true"));
    assert_eq!(s.ready_timeout, Some(Duration::from_secs_f64(90.5)));
    assert!(plan.trials[0].entry.trust_remote_code);
    // one Arc per case and per entry
    assert!(Arc::ptr_eq(&plan.trials[0].server, &plan.trials[2].server));
    assert!(Arc::ptr_eq(&plan.trials[0].entry, &plan.trials[1].entry));
    assert!(!Arc::ptr_eq(&plan.trials[1].entry, &plan.trials[2].entry));
    // the raw entry keeps every key in file order (unknown keys become bench flags)
    let keys: Vec<&String> = plan.trials[0].entry.raw.keys().collect();
    assert_eq!(
        keys,
        [
            "num_prompts",
            "max_concurrency",
            "random_input_len",
            "ignore_eos"
        ]
    );
    let u = &plan.trials[3].server;
    assert_eq!(u.server_type, ServerType::VllmOmni);
    assert!(u.use_omni);
    assert_eq!(
        u.serve_args,
        ServeArgs::List(vec!["--port-offset".into(), "3".into()])
    );
    assert_eq!(u.stage_overrides, Some(json!({"1": {"devices": "1"}})));
    assert!(!plan.trials[3].entry.trust_remote_code);
}

#[test]
fn unknown_case_and_server_keys_are_errors_with_the_closest_keys() {
    let fx = Fx::new();
    let mut c = tts_case("t", json!({}));
    c["owner"] = json!("me");
    c["server_params"]["gpu"] = json!(1);
    c["server_params"]["modle"] = json!("x");
    let e = fx.load(&json!([c]).to_string()).unwrap_err();
    let e: Vec<String> = e.0.iter().map(|e| fx.scrub(&e.to_string())).collect();
    assert_eq!(e.len(), 3, "{e:#?}");
    assert!(
        e[0].starts_with(
            "$TMP/cfg.json: test `t`, key `owner`: unknown case key (accepted: test_name, "
        ),
        "{e:#?}"
    );
    assert!(
        e[1].starts_with(
            "$TMP/cfg.json: test `t`, key `server_params.gpu`: unknown server_params key"
        ),
        "{e:#?}"
    );
    assert!(
        e[2].ends_with(
            "key `server_params.modle`: unknown server_params key (accepted: closest: model)"
        ),
        "{e:#?}"
    );
}

#[test]
fn omni_entry_fields_are_read() {
    let fx = Fx::new();
    let e = json!({
        "dataset_path": "perf-configs/datasets/seed_tts_smoke",
        "seed_tts_locale": "zh",
        "percentile-metrics": "ttft,e2el",
        "metric_percentiles": "50,99",
        "extra_body": {"voice": "Vivian"},
        "num_warmups": 3,
        "burstiness": 0.5,
        "seed": 7
    });
    let plan = fx.load(&json!([tts_case("t", e)]).to_string()).unwrap();
    let en = &plan.trials[0].entry;
    assert_eq!(en.dialect, Dialect::Omni);
    assert_eq!(en.dataset_name.as_deref(), Some("seed-tts"));
    assert_eq!(en.backend.as_deref(), Some("openai-audio-speech"));
    assert_eq!(en.endpoint.as_deref(), Some("/v1/audio/speech"));
    assert_eq!(
        en.dataset_path.as_deref(),
        Some("perf-configs/datasets/seed_tts_smoke")
    );
    assert_eq!(en.seed_tts_locale.as_deref(), Some("zh"));
    assert_eq!(
        en.percentiles.metrics_as_written(),
        Some(&["ttft".to_string(), "e2el".to_string()][..])
    );
    assert_eq!(en.percentiles.percentiles(), [50.0, 99.0]);
    assert_eq!(en.extra_body.as_ref().unwrap()["voice"], "Vivian");
    assert_eq!(
        (en.num_warmups, en.burstiness, en.seed),
        (Some(3), Some(0.5), Some(7))
    );
    assert_eq!(
        (en.task.as_deref(), en.eval_phase.as_deref()),
        (Some("voice_clone"), Some("latency"))
    );
}

#[test]
fn store_takes_precedence_per_metric() {
    let fx = Fx::new();
    let e = json!({"max_concurrency": [8, 16], "num_prompts": 8, "baseline": {"H100": {"median_audio_rtf": [0.3, 0.4], "mean_e2el_ms": null, "audio_throughput": 20}}});
    let f = fx.write(
        "cfg.json",
        &json!([tts_case("test_s", e), tts_case("test_other", json!({}))]).to_string(),
    );
    fx.write(
        "baselines/H100.json",
        &json!({
            "test_s::voice_clone_latency_seed-tts::c16": {"median_audio_rtf": 0.5, "mean_e2el_ms": 900},
            "test_s::voice_clone_latency_seed-tts::c64": {"median_audio_rtf": 1.0},
            "test_not_loaded::x::c1": {"median_audio_rtf": 1.0}
        })
        .to_string(),
    );
    let plan = load_plan(&fx.opts(&[f], "H100")).unwrap();
    let store_file = fx.path().join("baselines/H100.json");
    let c8 = &plan.trials[0].thresholds;
    assert!(c8.items.iter().all(|t| t.source == ThresholdSource::Inline));
    assert_eq!(c8.skipped, ["mean_e2el_ms"]);
    let c16 = &plan.trials[1].thresholds;
    let got: Vec<(&str, f64, bool)> = c16
        .items
        .iter()
        .map(|t| {
            (
                t.metric.as_str(),
                t.value,
                t.source
                    == ThresholdSource::Store {
                        file: store_file.clone(),
                    },
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("median_audio_rtf", 0.5, true),
            ("audio_throughput", 20.0, false),
            ("mean_e2el_ms", 900.0, true)
        ]
    );
    assert!(c16.skipped.is_empty());
    // a store entry of a loaded test that matches no trial is warned about; others are not
    let w: Vec<String> = plan.warnings.iter().map(|w| fx.scrub(w)).collect();
    assert_eq!(
        w,
        [
            "$TMP/baselines/H100.json: entry `test_s::voice_clone_latency_seed-tts::c64` matches no trial of the loaded configs (renamed or removed?); ignored"
        ]
    );
    insta::assert_snapshot!("store_listing", fx.scrub(&describe_plan(&plan)));
}

#[test]
fn store_fills_thresholds_where_no_hardware_bucket_exists() {
    let fx = Fx::new();
    let e = json!({"baseline": {"H100": {"median_audio_rtf": [0.3]}}});
    let f = fx.write(
        "cfg.json",
        &json!([tts_case("t", e.clone()), tts_case("u", e)]).to_string(),
    );
    fx.write(
        "baselines/H20.json",
        r#"{"t::voice_clone_latency_seed-tts::c1": {"median_audio_rtf": 0.25}}"#,
    );
    let plan = load_plan(&fx.opts(&[f], "H20")).unwrap();
    assert_eq!(plan.trials[0].thresholds.items[0].value, 0.25);
    assert_eq!(plan.trials[0].thresholds.note, None);
    assert!(plan.trials[1].thresholds.note.is_some());
    assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
    assert!(
        plan.warnings[0].contains("test `u`") && plan.warnings[0].contains("no bucket for `H20`")
    );
}

#[test]
fn diffusion_dialect_is_loaded_with_endpoints_and_evaluated_baselines() {
    let dir = PathBuf::from("tests/fixtures");
    let fx = Fx::new();
    let plan = load_plan(&fx.opts(&[dir.join("diffusion_dialect.json")], "H100")).unwrap();
    let diffusion: Vec<_> = plan
        .trials
        .iter()
        .filter(|t| t.entry.dialect == Dialect::Diffusion)
        .collect();
    assert_eq!(diffusion.len(), 4);
    // Upstream's diffusion runner starts its servers without the omni init timeouts; an
    // omni case keeps them.
    assert!(diffusion.iter().all(|t| !t.server.default_timeouts));
    assert!(
        plan.trials
            .iter()
            .filter(|t| t.entry.dialect == Dialect::Omni)
            .all(|t| t.server.default_timeouts)
    );
    // The harness decides whether they run (diffusion bench configured or not).
    assert!(diffusion.iter().all(|t| t.unsupported.is_none()));
    assert!(DIFFUSION_UNSUPPORTED.contains("--diffusion-script"));
    let endpoints: Vec<_> = diffusion
        .iter()
        .map(|t| t.entry.endpoint.as_deref().unwrap())
        .collect();
    assert_eq!(
        endpoints,
        [
            "/v1/chat/completions",
            "/v1/videos",
            "/v1/chat/completions",
            "/v1/chat/completions"
        ]
    );
    let first: Vec<_> = diffusion[0]
        .thresholds
        .items
        .iter()
        .map(|t| (t.metric.as_str(), t.value, t.direction.symbol()))
        .collect();
    assert_eq!(
        first,
        [
            ("throughput_qps", 0.3, ">="),
            ("latency_mean", 3.5, "<="),
            ("peak_memory_mb_mean", 67000.0, "<=")
        ]
    );
    let i2v: Vec<_> = diffusion[1]
        .thresholds
        .items
        .iter()
        .map(|t| t.metric.as_str())
        .collect();
    assert_eq!(i2v, ["throughput_qps"]);
    let tts = plan
        .trials
        .iter()
        .find(|t| t.test_name == "test_tts_next_to_diffusion")
        .unwrap();
    assert_eq!(tts.unsupported, None);
    assert_eq!(tts.entry.dialect, Dialect::Omni);
    insta::assert_snapshot!("diffusion_listing", fx.scrub(&describe_plan(&plan)));
}

#[test]
fn stage_config_name_goes_through_deploy_resolution() {
    let fx = Fx::new();
    fx.write(
        "deploy/qwen3_tts.yaml",
        "stage_args:\n  - stage_id: 0\n    engine_args:\n      max_num_seqs: 4\n",
    );
    let update = json!({"stage_args": {"0": {"engine_args.max_num_seqs": 8}}});
    let cfg = json!([{
        "test_name": "t",
        "server_params": {"model": "m", "stage_config_name": "qwen3_tts", "update": update},
        "benchmark_params": [{"num_prompts": 1, "max_concurrency": 1}]
    }]);
    let expected = dfx_core::deploy::resolve_with_edits(
        &fx.path().join("deploy"),
        "qwen3_tts",
        Some(&update),
        None,
    );
    match (fx.load(&cfg.to_string()), expected) {
        (Ok(plan), Ok(d)) => assert_eq!(plan.trials[0].server.deploy.as_ref(), Some(&d)),
        (Err(e), Err(d)) => {
            assert_eq!(e.0.len(), 1);
            assert_eq!(
                e.0[0].key.as_deref(),
                Some("server_params.stage_config_name")
            );
            assert_eq!(e.0[0].problem, d.to_string());
        }
        (got, want) => panic!("load {got:?} disagrees with deploy resolution {want:?}"),
    }
}

#[test]
fn load_options_for_a_repository() {
    let root = common::repo_root();
    let opts = dfx_core::config::LoadOptions::for_repo(&root, "H100");
    assert_eq!(opts.files, dfx_core::config::default_config_files(&root));
    assert_eq!(opts.deploy_dir, root.join("deploy"));
    assert_eq!(opts.baselines_dir, root.join("baselines"));
    assert!(load_plan(&opts).is_ok());
}

#[test]
fn pooled_ia_qtf1_subsets_are_collected_and_checked_at_load() {
    let fx = Fx::new();
    let entry = |subset: serde_json::Value| {
        json!({"dataset_name": "omniinteract", "backend": "openai-chat-omni",
               "omniinteract_evaluate": true, "omniinteract_subsets": subset,
               "num_prompts": [4], "max_concurrency": [1]})
    };
    let case = |entries: Vec<serde_json::Value>| {
        json!([{"test_name": "test_oi", "omniinteract_aggregate_min_ia_qtf1": 0.2,
                "server_params": {"model": "Gander-Unit8-vllm"}, "benchmark_params": entries}])
        .to_string()
    };
    let plan = fx
        .load(&case(vec![entry(json!("1q1a")), entry(json!("1qna"))]))
        .unwrap();
    let keys = &plan.trials[0].entry.case;
    assert_eq!(keys.omniinteract_aggregate_subsets, ["1q1a", "1qna"]);
    let dup = fx.errors(&case(vec![entry(json!("1q1a")), entry(json!("1q1a"))]));
    assert!(
        dup.contains(
            "benchmark_params[1], key `omniinteract_subsets`: subset \"1q1a\" appears twice"
        ),
        "{dup}"
    );
    let missing = fx.errors(&case(vec![entry(json!(""))]));
    assert!(missing.contains("key `omniinteract_subsets`"), "{missing}");
    assert!(
        missing.contains("no entry with omniinteract_evaluate to pool"),
        "{missing}"
    );
}

#[test]
fn runner_entries_percentile_soak_and_contract_keys() {
    let fx = Fx::new();
    let case = |runner: Option<&str>, entry: serde_json::Value| {
        let mut c = json!({"test_name": "t", "server_params": {"model": "m"},
                           "benchmark_params": [entry]});
        if let Some(r) = runner {
            c["benchmark_runner"] = json!(r);
        }
        json!([c]).to_string()
    };
    // A stability entry's string keys are parsed (the dashed spelling first).
    let soak = json!({"backend": "openai-audio-speech", "max_concurrency": 2,
                      "duration_sec": 60, "percentile-metrics": "e2el,audio_rtf",
                      "metric-percentiles": "50,90", "metric_percentiles": "10"});
    let plan = fx.load(&case(None, soak)).unwrap();
    let keys = &plan.trials[0].entry.percentiles;
    assert_eq!(keys.percentiles(), [50.0, 90.0]);
    assert_eq!(keys.metric_names(""), ["e2el", "audio_rtf"]);
    // A value that is not a string is an error, as in a sweep entry (it used to be
    // skipped, and the soak measured the default percentiles instead).
    let soak = json!({"backend": "openai-audio-speech", "max_concurrency": 2,
                      "duration_sec": 60, "metric-percentiles": 95});
    let bad = fx.errors(&case(None, soak));
    assert!(
        bad.contains("key `metric-percentiles`: wrong type: got a number (accepted: a string)"),
        "{bad}"
    );
    // The omni keys a soak reads are typed; those of sweep steps are refused; those
    // upstream's stability runner drops load with a warning.
    let soak = json!({"backend": "openai-audio-speech", "max_concurrency": 2,
                      "duration_sec": 60, "num_warmups": 3, "burstiness": 0.5, "seed": 7});
    let plan = fx.load(&case(None, soak)).unwrap();
    let e = &plan.trials[0].entry;
    assert_eq!(
        (e.num_warmups, e.burstiness, e.seed),
        (Some(3), Some(0.5), Some(7))
    );
    for (key, v) in [
        ("num_warmups", json!("3")),
        ("burstiness", json!(-1)),
        ("seed", json!(1.5)),
    ] {
        let mut soak = json!({"backend": "openai-audio-speech", "max_concurrency": 2,
                              "duration_sec": 60});
        soak[key] = v;
        let bad = fx.errors(&case(None, soak));
        assert!(bad.contains(&format!("key `{key}`")), "{key}: {bad}");
    }
    for key in ["burst", "repeats", "capacity", "ramp_start_rate"] {
        let mut soak = json!({"backend": "openai-audio-speech", "max_concurrency": 2,
                              "duration_sec": 60});
        soak[key] = json!(true);
        let bad = fx.errors(&case(None, soak));
        assert!(
            bad.contains(&format!("key `{key}`: a stability entry does not read it")),
            "{key}: {bad}"
        );
    }
    // `null` is absent, as in a sweep entry.
    let soak = json!({"backend": "openai-audio-speech", "max_concurrency": 2,
                      "duration_sec": 60, "extra_body": null, "num_warmups": null,
                      "burst": null, "seed_tts_locale": null});
    let plan = fx.load(&case(None, soak)).unwrap();
    assert_eq!(plan.trials[0].entry.num_warmups, None);
    let soak = json!({"backend": "openai-audio-speech", "max_concurrency": 2,
                      "duration_sec": 60, "num_prompts": [4], "baseline": {}});
    let plan = fx.load(&case(None, soak)).unwrap();
    let warned = plan.warnings.join("\n");
    for key in ["num_prompts", "baseline"] {
        assert!(
            warned.contains(&format!("key `{key}`: not read by a stability entry")),
            "{key}: {warned}"
        );
    }
    // The soak keys: `duration_sec` and `random_input_len` parsed (defaults 300 s, 20 words).
    let soak = json!({"backend": "openai-audio-speech", "max_concurrency": 2,
                      "duration_sec": 60, "random_input_len": "30-10"});
    let plan = fx.load(&case(None, soak)).unwrap();
    let keys = plan.trials[0].entry.runner.soak().unwrap();
    assert_eq!((keys.duration_s, keys.words), (60.0, (10, 30)));
    let soak = json!({"backend": "openai-audio-speech", "request_rate": 1.0,
                      "num_prompts_per_batch": 4});
    let plan = fx.load(&case(None, soak)).unwrap();
    let keys = plan.trials[0].entry.runner.soak().unwrap();
    assert_eq!((keys.duration_s, keys.words), (300.0, (20, 20)));
    let bad = fx.errors(&case(
        None,
        json!({"backend": "openai-audio-speech", "max_concurrency": 2,
               "duration_sec": 60, "random_input_len": "ten"}),
    ));
    assert!(
        bad.contains("key `random_input_len`: invalid value \"ten\" (accepted: a number,"),
        "{bad}"
    );
    // The contract keys: the scenarios it runs and the timeout (default 30 s).
    let contract = json!({"name": "c", "scenarios": ["wrong_type", "malformed_json"]});
    let plan = fx.load(&case(Some("contract"), contract)).unwrap();
    let keys = plan.trials[0].entry.runner.contract().unwrap();
    assert_eq!(keys.scenarios, ["malformed_json", "wrong_type"]);
    assert_eq!(keys.timeout_s, 30.0);
    let contract = json!({"name": "c", "voice_lifecycle": false, "timeout_s": 5});
    let plan = fx.load(&case(Some("contract"), contract)).unwrap();
    let keys = plan.trials[0].entry.runner.contract().unwrap();
    assert!(!keys.scenarios.contains(&"voice_lifecycle"));
    assert_eq!(keys.timeout_s, 5.0);
    // The native-duplex runner reports no percentiles: its entries have no such key, and
    // one written there is refused rather than ignored.
    let duplex = json!({"name": "c1", "workload": "native-duplex-audio", "sessions": 1,
                        "turns": 1, "warmups": 1, "repeats": 2});
    let plan = fx
        .load(&case(Some("native-duplex"), duplex.clone()))
        .unwrap();
    assert_eq!(
        plan.trials[0].entry.percentiles,
        dfx_core::plan::PercentileKeys::default()
    );
    let keys = plan.trials[0].entry.runner.duplex().unwrap();
    assert_eq!((keys.timeout_s, keys.profile_stages), (180.0, false));
    // Upstream's runner reads `timeout_s` and `profile_stages`: both load, checked once
    // here (the native bench refuses an entry that profiles, with the reason).
    let mut upstream = duplex.clone();
    upstream["timeout_s"] = json!(60);
    upstream["profile_stages"] = json!(["thinker", "talker"]);
    let plan = fx.load(&case(Some("native-duplex"), upstream)).unwrap();
    let keys = plan.trials[0].entry.runner.duplex().unwrap();
    assert_eq!((keys.timeout_s, keys.profile_stages), (60.0, true));
    for (key, value, says) in [
        (
            "timeout_s",
            json!(0),
            "key `timeout_s`: invalid value 0 (accepted: seconds > 0",
        ),
        (
            "timeout_s",
            json!("1m"),
            "key `timeout_s`: invalid value \"1m\"",
        ),
        ("profile_stages", json!("thinker"), "key `profile_stages`: "),
        ("profile_stages", json!([1]), "key `profile_stages[0]`: "),
        (
            "realtime_input",
            json!("no"),
            "key `realtime_input`: wrong type: got a string",
        ),
    ] {
        let mut bad_entry = duplex.clone();
        bad_entry[key] = value;
        let bad = fx.errors(&case(Some("native-duplex"), bad_entry));
        assert!(bad.contains(says), "{key}: {bad}");
    }
    // A runner name the suite does not know is one error with the closest runner, not a
    // list of the default runner's unknown keys.
    let mut mistyped = case(Some("native-duplex"), duplex.clone());
    mistyped = mistyped.replace("\"native-duplex\"", "\"native-duplx\"");
    let bad = fx.errors(&mistyped);
    assert!(
        bad.contains("key `benchmark_runner`: unknown runner \"native-duplx\" (accepted: closest: native-duplex)")
            && bad.matches(" - ").count() == 1,
        "{bad}"
    );
    let mut with_percentiles = duplex;
    with_percentiles["metric-percentiles"] = json!("x");
    let bad = fx.errors(&case(Some("native-duplex"), with_percentiles));
    assert!(
        bad.contains("key `metric-percentiles`: unknown entry key"),
        "{bad}"
    );
    // `goodput`: a stability entry's reaches the plan (its batches count good requests);
    // the native-duplex and contract runners count none, so the key is refused there.
    let soak = json!({"backend": "openai-audio-speech", "max_concurrency": 2,
                      "duration_sec": 60, "goodput": "e2el:500 continuity:100"});
    let plan = fx.load(&case(None, soak)).unwrap();
    assert!(plan.trials[0].entry.goodput.is_some());
    let mut with_goodput = json!({"name": "c1", "workload": "native-duplex-audio",
                                  "sessions": 1, "turns": 1, "warmups": 1, "repeats": 2});
    with_goodput["goodput"] = json!("e2el:500");
    let bad = fx.errors(&case(Some("native-duplex"), with_goodput));
    assert!(
        bad.contains("benchmark_params[0], key `goodput`: unknown entry key"),
        "{bad}"
    );
    let contract = json!({"name": "c", "goodput": "e2el:500"});
    let bad = fx.errors(&case(Some("contract"), contract));
    assert!(
        bad.contains("benchmark_params[0], key `goodput`: unknown contract entry key"),
        "{bad}"
    );
}

#[test]
fn one_warmup_rule_for_both_benches() {
    let fx = Fx::new();
    let warmups = |entry: serde_json::Value| -> Vec<(String, u32)> {
        let plan = fx.load(&json!([tts_case("t", entry)]).to_string()).unwrap();
        plan.trials
            .iter()
            .map(|t| (t.step.label.clone(), t.entry.warmups(&t.step)))
            .collect()
    };
    let sweep = json!({"num_prompts": [8], "max_concurrency": [1, 16], "request_rate": [4.0]});
    let w = |l: &str, n| (l.to_string(), n);
    assert_eq!(
        warmups(sweep.clone()),
        [w("qps4.0", 2), w("c1", 2), w("c16", 16)]
    );
    let mut fixed = sweep;
    fixed["num_warmups"] = json!(3);
    assert_eq!(warmups(fixed), [w("qps4.0", 3), w("c1", 3), w("c16", 3)]);
}

/// `num_warmups`: `null` is the default (`max(2, c)` / 2), `0` is kept, and anything but
/// a non-negative integer is a config error naming file, test, entry, key and what is
/// accepted.
#[test]
fn num_warmups_null_zero_and_bad_values() {
    let fx = Fx::new();
    let warmups = |n: serde_json::Value| -> Vec<u32> {
        let entry = json!({"num_prompts": [8], "max_concurrency": [1, 16], "request_rate": [4.0], "num_warmups": n});
        let plan = fx.load(&json!([tts_case("t", entry)]).to_string()).unwrap();
        plan.trials
            .iter()
            .map(|t| t.entry.warmups(&t.step))
            .collect()
    };
    assert_eq!(warmups(json!(null)), [2, 2, 16]);
    assert_eq!(warmups(json!(0)), [0, 0, 0]);
    for bad in [json!(-1), json!(1.5), json!(true), json!("2"), json!([2])] {
        let entry = json!({"num_prompts": [8], "max_concurrency": [1], "num_warmups": bad});
        let e = fx.errors(&json!([tts_case("test_w", entry)]).to_string());
        assert!(
            e.contains("test_w")
                && e.contains("benchmark_params[0]")
                && e.contains("key `num_warmups`")
                && e.contains("an integer from 0 to"),
            "{bad}: {e}"
        );
    }
}
