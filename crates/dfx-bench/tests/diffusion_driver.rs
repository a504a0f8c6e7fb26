//! The diffusion driver with a fake `diffusion_benchmark_serving.py`
//! (`tests/fixtures/fake_diffusion_benchmark_serving.py`): the argv of every step of the
//! 2026 HunyuanImage-3 prefix-caching config (insta snapshot), the result it reads, and the
//! fallback when the script fails or writes nothing.

mod external_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dfx_bench::external::diffusion::{DiffusionBench, DiffusionSettings, command::OUTPUT_FILE};
use dfx_core::bench::{Bench, BenchKind};
use dfx_core::plan::{Dialect, Trial};
use external_support::*;
use serde_json::Value;

fn fake_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_diffusion_benchmark_serving.py")
}

fn hunyuan_trials() -> Vec<Trial> {
    let file =
        reference_dir().join("upstream/2026/perf/tests/test_hunyuan_image3_prefix_caching.json");
    trials_from_config(&file)
}

fn bench(mode: &str, record: &Path) -> DiffusionBench {
    let extra_env = BTreeMap::from([
        ("DFX_FAKE_DIFFUSION_MODE".to_string(), mode.to_string()),
        (
            "DFX_FAKE_DIFFUSION_RECORD".to_string(),
            record.display().to_string(),
        ),
    ]);
    DiffusionBench::new(DiffusionSettings {
        script: Some(fake_script()),
        extra_env,
        ..DiffusionSettings::default()
    })
}

#[test]
fn argv_of_every_hunyuan_image3_step() {
    let b = bench("ok", Path::new("/dev/null"));
    let resolved = b.resolved().unwrap().clone();
    let trials = hunyuan_trials();
    assert_eq!(trials.len(), 12);
    let mut out = String::new();
    for trial in &trials {
        assert_eq!(trial.entry.dialect, Dialect::Diffusion);
        b.supports(&trial.entry).unwrap();
        let dir = Path::new("/results/run").join(dfx_core::fsutil::sanitize_component(&trial.name));
        let cmd = b.build_command(&context(trial, &dir, "H100")).unwrap();
        assert_eq!(cmd.program, resolved.python);
        assert_eq!(cmd.result_path, dir.join(OUTPUT_FILE));
        out.push_str(&format!("## {}\n", trial.name));
        for arg in &cmd.args {
            let arg = arg.replace(&resolved.script.display().to_string(), "<script>");
            out.push_str(&format!("  {arg}\n"));
        }
        out.push('\n');
    }
    insta::assert_snapshot!(out);
}

#[test]
fn result_is_read_and_marked() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.jsonl");
    let trial = &hunyuan_trials()[0];
    let b = bench("ok", &record);
    assert_eq!(b.kind(), BenchKind::Diffusion);
    let out = dir.path().join("trial");
    let outcome = b.run(&context(trial, &out, "H100"));
    assert_eq!(outcome.exit, None, "{}", outcome.log_tail);
    let doc = outcome.result.unwrap();
    assert_eq!(doc["result_source"], "diffusion");
    assert_eq!(doc["completed"], 8);
    assert_eq!(doc["failed"], 0);
    assert_eq!(doc["completed_requests"], 8);
    assert_eq!(doc["throughput_qps"], 4.0);
    assert_eq!(doc["endpoint"], "/v1/images/edits");
    assert!(
        outcome
            .log_tail
            .contains("fake diffusion benchmark: 8 prompts"),
        "{}",
        outcome.log_tail
    );
    let log = std::fs::read_to_string(out.join("bench.log")).unwrap();
    assert!(log.starts_with("# dfx-perf: "), "{log}");
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&record).unwrap().trim()).unwrap();
    assert_eq!(line["argv"][0], "--host");
}

#[test]
fn failed_or_silent_script_leaves_no_result_and_says_why() {
    let trial = &hunyuan_trials()[0];
    for (mode, want) in [
        ("fail", "diffusion benchmark exited with status 3"),
        (
            "nofile",
            "diffusion benchmark exited with status 0 but wrote no result file",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let b = bench(mode, Path::new("/dev/null"));
        let outcome = b.run(&context(trial, dir.path(), "H100"));
        assert!(outcome.result.is_none(), "{mode}");
        let exit = outcome.exit.unwrap().to_string();
        assert!(exit.starts_with(want), "{mode}: {exit}");
        if mode == "fail" {
            assert!(
                outcome.log_tail.contains("RuntimeError: fake failure"),
                "{}",
                outcome.log_tail
            );
        }
    }
}

#[test]
fn checkout_is_the_working_folder_and_missing_script_is_unsupported() {
    let repo = tempfile::tempdir().unwrap();
    let script = repo
        .path()
        .join("benchmarks/diffusion/diffusion_benchmark_serving.py");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::copy(fake_script(), &script).unwrap();
    std::fs::create_dir_all(repo.path().join("tests")).unwrap();
    let b = DiffusionBench::new(DiffusionSettings {
        vllm_omni_dir: Some(repo.path().to_path_buf()),
        ..DiffusionSettings::default()
    });
    let r = b.resolved().unwrap();
    assert_eq!(
        r.cwd.as_deref(),
        Some(
            std::path::absolute(repo.path().join("tests"))
                .unwrap()
                .as_path()
        )
    );
    let trial = &hunyuan_trials()[0];
    let record = repo.path().join("record.jsonl");
    let b = DiffusionBench::new(DiffusionSettings {
        vllm_omni_dir: Some(repo.path().to_path_buf()),
        extra_env: BTreeMap::from([(
            "DFX_FAKE_DIFFUSION_RECORD".to_string(),
            record.display().to_string(),
        )]),
        ..DiffusionSettings::default()
    });
    let outcome = b.run(&context(trial, &repo.path().join("t"), "H100"));
    assert!(outcome.result.is_some(), "{:?}", outcome.exit);
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&record).unwrap().trim()).unwrap();
    assert_eq!(
        Path::new(line["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        repo.path().join("tests").canonicalize().unwrap()
    );

    let none = DiffusionBench::new(DiffusionSettings::default());
    let why = none.supports(&trial.entry).unwrap_err().to_string();
    assert!(why.contains("--diffusion-script"), "{why}");
    let missing = DiffusionBench::new(DiffusionSettings {
        script: Some("/nonexistent/x.py".into()),
        ..DiffusionSettings::default()
    });
    assert!(
        missing
            .supports(&trial.entry)
            .unwrap_err()
            .to_string()
            .contains("/nonexistent/x.py")
    );
    let omni = &trials_from_config(&upstream_config("test_tts.json"))[0];
    assert!(
        bench("ok", Path::new("/dev/null"))
            .supports(&omni.entry)
            .is_err()
    );
}

#[test]
fn value_rendering_rate_steps_profiler_and_no_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("test_diffusion.json");
    let case = serde_json::json!([{
        "test_name": "test_diffusion_rules",
        "mark": ["diffusion"],
        "server_type": "vllm-omni",
        "server_params": {"model": "M", "serve_args": {"enable-diffusion-pipeline-profiler": true}},
        "benchmark_params": [
            {"name": "rate", "task": "t2i", "dataset": "random", "num-prompts": [4, 6],
             "request-rate": [0.5, 1], "baseline": {"throughput_qps": 1}, "disable-tqdm": true,
             "slo": false, "save-dir": null, "random-request-config": [{"w": 1, "t": "é"}],
             "extra-body": {}, "slo-scale": 2.0},
            {"name": "plain", "task": "t2v", "num-prompts": 3}
        ]
    }]);
    std::fs::write(&config, case.to_string()).unwrap();
    let b = bench("ok", Path::new("/dev/null"));
    let render = |t: &Trial| {
        let cmd = b
            .build_command(&context(t, Path::new("/o"), "H100"))
            .unwrap();
        cmd.args[2..].join(" ")
    };
    let trials = trials_from_config(&config);
    let lines: Vec<String> = trials.iter().map(render).collect();
    assert_eq!(
        lines,
        [
            "--host 127.0.0.1 --port 8091 --model M --endpoint /v1/chat/completions --dataset random \
             --task t2i --output-file /o/diffusion_bench_result.json --return-stage-metrics \
             --disable-tqdm --random-request-config [{\"w\":1,\"t\":\"\\u00e9\"}] --extra-body {} \
             --slo-scale 2.0 --num-prompts 4 --request-rate 0.5",
            "--host 127.0.0.1 --port 8091 --model M --endpoint /v1/chat/completions --dataset random \
             --task t2i --output-file /o/diffusion_bench_result.json --return-stage-metrics \
             --disable-tqdm --random-request-config [{\"w\":1,\"t\":\"\\u00e9\"}] --extra-body {} \
             --slo-scale 2.0 --num-prompts 6 --request-rate 1",
            "--host 127.0.0.1 --port 8091 --model M --endpoint /v1/videos --dataset random \
             --task t2v --output-file /o/diffusion_bench_result.json --num-prompts 3",
        ]
    );
    // The baseline is evaluated: thresholds resolved from the diffusion metric names.
    assert_eq!(trials[0].thresholds.items[0].metric, "throughput_qps");
}
