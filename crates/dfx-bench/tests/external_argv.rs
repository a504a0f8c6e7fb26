//! The exact `vllm bench serve --omni` command of every step of the upstream reference
//! configs (insta snapshots), and that each step's command is built from scratch.

mod external_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dfx_bench::external::{ExternalSettings, VllmBench};
use dfx_core::fsutil::sanitize_component;
use dfx_core::plan::Trial;
use external_support::*;
use serde_json::json;

const STAMP: &str = "20260101-000000";

/// A bench whose executable is not installed: `build_command` still shows the command.
fn snapshot_bench() -> VllmBench {
    VllmBench::new(ExternalSettings {
        vllm_bin: Some(PathBuf::from("/opt/vllm/bin/vllm")),
        ..ExternalSettings::default()
    })
}

fn out_dir(trial: &Trial) -> PathBuf {
    Path::new("/results/run").join(sanitize_component(&trial.name))
}

/// Every step's program, environment and argv (one argument per line).
fn render(config: &str, hardware: &str) -> String {
    let bench = snapshot_bench();
    let mut out = String::new();
    for trial in trials_from_config(&upstream_config(config)) {
        let dir = out_dir(&trial);
        let cmd = bench.build_command(&context(&trial, &dir, hardware), STAMP);
        out.push_str(&format!(
            "## {}\nprogram: {}\n",
            trial.name,
            cmd.program.display()
        ));
        for (k, v) in &cmd.env {
            out.push_str(&format!("env: {k}={v}\n"));
        }
        for arg in &cmd.args {
            out.push_str(&format!("  {arg}\n"));
        }
        assert_eq!(
            cmd.result_path,
            dir.join(value_after(&cmd.args, "--result-filename"))
        );
        out.push('\n');
    }
    out
}

fn value_after(args: &[String], flag: &str) -> String {
    let i = args
        .iter()
        .position(|a| a == flag)
        .unwrap_or_else(|| panic!("{flag} missing"));
    args[i + 1].clone()
}

#[test]
fn argv_of_tts_reference_config() {
    insta::assert_snapshot!(render("test_tts.json", "H100"));
}

#[test]
fn argv_of_sglang_reference_config() {
    insta::assert_snapshot!(render("test_qwen3_tts_sglang.json", "H100"));
}

#[test]
fn argv_of_qwen3_omni_reference_config() {
    insta::assert_snapshot!(render("test_qwen3_omni_async_chunk.json", "H100"));
}

#[test]
fn result_file_name_carries_hardware_except_h100() {
    let trial = tts_trial();
    let bench = snapshot_bench();
    let name = |hw: &str| {
        value_after(
            &bench
                .build_command(&context(&trial, Path::new("/r"), hw), STAMP)
                .args,
            "--result-filename",
        )
    };
    assert_eq!(
        name("H100"),
        "result_test_qwen3_tts_base_seed-tts_1_20_inna_outna_20260101-000000.json"
    );
    assert_eq!(
        name("A3"),
        "result_test_qwen3_tts_base_A3_seed-tts_1_20_inna_outna_20260101-000000.json"
    );
    assert_eq!(
        name("na"),
        "result_test_qwen3_tts_base_na_seed-tts_1_20_inna_outna_20260101-000000.json"
    );
}

/// Every `--flag` of `args` with how often it occurs.
fn flag_counts(args: &[String]) -> BTreeMap<&str, usize> {
    let mut counts = BTreeMap::new();
    for a in args.iter().filter(|a| a.starts_with("--")) {
        *counts.entry(a.as_str()).or_default() += 1;
    }
    counts
}

#[test]
fn second_step_carries_no_flag_of_the_first() {
    let bench = snapshot_bench();
    let all = trials_from_config(&upstream_config("test_tts.json"));
    let sweep: Vec<&Trial> = all
        .iter()
        .filter(|t| {
            t.name
                .starts_with("test_qwen3_tts_base::voice_clone_throughput")
        })
        .collect();
    assert_eq!(sweep.len(), 3, "c8, c16, c64");
    let first = bench
        .build_command(&context(sweep[0], Path::new("/r/0"), "H100"), STAMP)
        .args;
    let second = bench
        .build_command(&context(sweep[1], Path::new("/r/1"), "H100"), STAMP)
        .args;
    assert_eq!(
        flag_counts(&second).values().max(),
        Some(&1),
        "a flag repeats: {second:?}"
    );
    assert_eq!(first.len(), second.len());
    assert_eq!(value_after(&second, "--max-concurrency"), "16");
    assert_eq!(value_after(&second, "--num-prompts"), "128");
    assert_eq!(value_after(&second, "--num-warmups"), "16");
    assert!(
        !second.contains(&"8".to_string()),
        "step 1 value leaked: {second:?}"
    );
    assert!(
        !second.contains(&"80".to_string()),
        "step 1 value leaked: {second:?}"
    );
}

#[test]
fn rate_step_then_concurrency_step_of_one_entry_stay_apart() {
    let raw = json!({
        "dataset_name": "seed-tts-text", "backend": "openai-audio-speech",
        "num_prompts": [10, 12], "request_rate": [0.5], "max_concurrency": [3]
    });
    let raw = raw.as_object().unwrap().clone();
    let mut trials = trials_from_config(&upstream_config("test_tts.json"));
    let template = trials.remove(0);
    let entry = std::sync::Arc::new(entry_from_raw(0, raw.clone(), false));
    let steps = steps(&raw);
    let labels: Vec<&str> = steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["qps0.5", "qps0.5", "c3", "c3"]);
    let bench = snapshot_bench();
    let argvs: Vec<Vec<String>> = steps
        .into_iter()
        .map(|step| {
            let trial = Trial {
                entry: entry.clone(),
                step,
                ..template.clone()
            };
            bench
                .build_command(&context(&trial, Path::new("/r"), "H100"), STAMP)
                .args
        })
        .collect();
    for args in &argvs {
        assert_eq!(
            flag_counts(args).values().max(),
            Some(&1),
            "a flag repeats: {args:?}"
        );
    }
    assert_eq!(value_after(&argvs[0], "--request-rate"), "0.5");
    assert!(!argvs[0].contains(&"--max-concurrency".to_string()));
    assert_eq!(value_after(&argvs[1], "--num-prompts"), "12");
    assert_eq!(value_after(&argvs[2], "--request-rate"), "inf");
    assert_eq!(value_after(&argvs[2], "--max-concurrency"), "3");
    assert_eq!(value_after(&argvs[2], "--num-warmups"), "3");
    assert_eq!(value_after(&argvs[0], "--num-warmups"), "2");
}

#[test]
fn settings_and_entry_overrides_shape_the_command() {
    let raw = json!({
        "dataset_name": "random", "backend": "openai-chat-omni", "num_prompts": 4,
        "max_concurrency": 1, "num_warmups": 0, "seed": 7, "trust_remote_code": true
    });
    let raw = raw.as_object().unwrap().clone();
    let template = tts_trial();
    let mut entry = entry_from_raw(0, raw.clone(), false);
    entry.num_warmups = Some(0);
    let trial = Trial {
        entry: std::sync::Arc::new(entry),
        step: steps(&raw).remove(0),
        ..template
    };
    let bench = VllmBench::new(ExternalSettings {
        vllm_bin: Some(PathBuf::from("/opt/vllm/bin/vllm")),
        tokenizer: Some("/models/tok".into()),
        sample_rate: Some(44_100),
        seed: 42,
        ..ExternalSettings::default()
    });
    let cmd = bench.build_command(&context(&trial, Path::new("/r"), "H100"), STAMP);
    let a = &cmd.args;
    assert_eq!(value_after(a, "--num-warmups"), "0");
    assert_eq!(value_after(a, "--seed"), "7", "the entry's seed wins");
    assert_eq!(flag_counts(a)["--seed"], 1);
    assert_eq!(value_after(a, "--tokenizer"), "/models/tok");
    assert!(a.contains(&"--trust-remote-code".to_string()));
    assert_eq!(
        cmd.env
            .get("VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE")
            .map(String::as_str),
        Some("44100")
    );
    assert!(!cmd.env.contains_key("OPENAI_API_KEY"));
}

/// `goodput` reaches `vllm bench` one pair per argument; dfx-perf's speech SLOs, which
/// vllm's `check_goodput_args` would reject, are refused at preflight naming the key.
#[test]
fn goodput_reaches_vllm_as_pairs_and_speech_slos_are_refused() {
    use dfx_core::bench::Bench;
    use dfx_core::plan::GoodputSpec;
    let bench = snapshot_bench();
    let mut trial = tts_trial();
    let mut entry = (*trial.entry).clone();
    entry
        .raw
        .insert("goodput".into(), json!("ttft:100 e2el:900"));
    entry.goodput = Some(GoodputSpec::parse(&json!("ttft:100 e2el:900")).unwrap());
    trial.entry = entry.clone().into();
    assert_eq!(bench.preflight(&trial), Ok(None));
    let cmd = bench.build_command(&context(&trial, &out_dir(&trial), "H100"), STAMP);
    let at = cmd.args.iter().position(|a| a == "--goodput").unwrap();
    assert_eq!(cmd.args[at + 1..at + 3], ["ttft:100", "e2el:900"]);

    entry.goodput = Some(GoodputSpec::parse(&json!("e2el:900 audio_rtf:0.5")).unwrap());
    trial.entry = entry.into();
    let e = bench.preflight(&trial).unwrap_err();
    assert_eq!(e.key(), "goodput");
    assert!(
        e.to_string().contains("`audio_rtf` is dfx-perf's")
            && e.to_string().contains("accepts ttft, tpot, e2el"),
        "{e}"
    );
}
