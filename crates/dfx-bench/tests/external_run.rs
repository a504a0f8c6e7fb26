//! Running the external bench against the fake `vllm`: result parsing, bench.log, exit
//! status, missing / malformed results, time limit and process-group cleanup, the
//! sample-rate variable, and fresh argv for every step of a sweep.

mod external_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dfx_bench::external::{ExternalSettings, VllmBench};
use dfx_core::bench::{Bench, BenchKind};
use dfx_core::plan::Dialect;
use external_support::*;

fn keys_of_reference(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(vllm_bench_dir().join(name)).unwrap();
    let doc: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
    doc.keys().cloned().collect()
}

#[test]
fn successful_run_returns_the_vllm_result_in_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("argv.jsonl");
    let bench = fake_bench("ok", Some("result-c2-with-failure-detailed.json"), &record);
    assert_eq!(bench.kind(), BenchKind::Vllm);
    let trial = tts_trial();
    bench
        .supports(&trial.entry)
        .expect("fake vllm is executable");
    let out = dir.path().join("trial");
    let outcome = bench.run(&context(&trial, &out, "H100"));

    assert_eq!(outcome.exit, None, "log:\n{}", outcome.log_tail);
    let doc = outcome.result.expect("result parsed");
    let mut want = keys_of_reference("result-c2-with-failure-detailed.json");
    want.push("result_source".into());
    assert_eq!(doc.keys().cloned().collect::<Vec<_>>(), want);
    assert_eq!(doc["result_source"], "vllm");
    assert_eq!(doc["completed"], 5);
    assert!(!doc.contains_key("baseline") && !doc.contains_key("Hardware"));
    assert_eq!(outcome.errors, ["Internal Fake Error"]);

    // vllm's own file stays where upstream names it.
    let calls = recorded(&record);
    assert_eq!(calls.len(), 1);
    let (argv, env) = &calls[0];
    let file = &argv[argv.iter().position(|a| a == "--result-filename").unwrap() + 1];
    assert!(
        file.starts_with("result_test_qwen3_tts_base_seed-tts_1_20_inna_outna_"),
        "{file}"
    );
    assert!(out.join(file).is_file());
    assert_eq!(
        env.get("VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE")
            .map(String::as_str),
        Some("24000")
    );

    let log = std::fs::read_to_string(out.join("bench.log")).unwrap();
    assert!(
        log.contains("# dfx-perf: "),
        "command header missing:\n{log}"
    );
    assert!(log.contains("fake vllm bench: "), "stdout missing:\n{log}");
    assert!(
        log.contains("this line goes to stderr"),
        "stderr missing:\n{log}"
    );
    assert!(outcome.log_tail.contains("Results saved to"));
}

#[test]
fn a_48khz_model_gets_its_sample_rate() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("argv.jsonl");
    let bench = fake_bench("ok", Some("result-rate20-burstiness0.5.json"), &record);
    let mut trial = tts_trial();
    let mut server = (*trial.server).clone();
    server.model = "openbmb/VoxCPM2".into();
    trial.server = std::sync::Arc::new(server);
    let outcome = bench.run(&context(&trial, &dir.path().join("t"), "H100"));
    assert!(outcome.result.is_some(), "{:?}", outcome.exit);
    assert!(
        outcome.errors.is_empty(),
        "no errors key in a non-detailed file"
    );
    let (_, env) = &recorded(&record)[0];
    assert_eq!(
        env.get("VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE")
            .map(String::as_str),
        Some("48000")
    );
}

#[test]
fn every_step_of_a_sweep_runs_with_a_fresh_argv() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("argv.jsonl");
    let bench = fake_bench("ok", Some("result-c2-with-failure-detailed.json"), &record);
    let trials = trials_from_config(&upstream_config("test_tts.json"));
    let sweep: Vec<_> = trials
        .iter()
        .filter(|t| t.name.contains("::voice_clone_throughput_seed-tts::"))
        .collect();
    for (i, trial) in sweep.iter().enumerate() {
        let outcome = bench.run(&context(trial, &dir.path().join(i.to_string()), "H100"));
        assert!(outcome.result.is_some(), "{:?}", outcome.exit);
    }
    let calls = recorded(&record);
    assert_eq!(calls.len(), 3);
    for ((argv, _), (c, n)) in calls
        .iter()
        .zip([("8", "80"), ("16", "128"), ("64", "128")])
    {
        let flags: Vec<&String> = argv.iter().filter(|a| a.starts_with("--")).collect();
        let mut unique = flags.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(flags.len(), unique.len(), "a flag repeats: {argv:?}");
        let after = |f: &str| argv[argv.iter().position(|a| a == f).unwrap() + 1].as_str();
        assert_eq!((after("--max-concurrency"), after("--num-prompts")), (c, n));
    }
}

#[test]
fn failing_bench_reports_status_and_log_tail_without_result() {
    let dir = tempfile::tempdir().unwrap();
    let bench = fake_bench("fail", None, &dir.path().join("argv.jsonl"));
    let trial = tts_trial();
    let outcome = bench.run(&context(&trial, &dir.path().join("t"), "H100"));
    assert!(outcome.result.is_none());
    assert_eq!(
        outcome.exit.map(|e| e.to_string()).as_deref(),
        Some("vllm bench exited with status 2")
    );
    let tail: Vec<&str> = outcome.log_tail.lines().collect();
    assert_eq!(tail.len(), 40);
    assert_eq!(tail.last(), Some(&"RuntimeError: fake vllm bench failed"));
    assert_eq!(tail.first(), Some(&"fake failure line 22"));
}

#[test]
fn bench_that_writes_nothing_gives_no_result_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let bench = fake_bench("nothing", None, &dir.path().join("argv.jsonl"));
    let trial = tts_trial();
    let outcome = bench.run(&context(&trial, &dir.path().join("t"), "H100"));
    assert!(outcome.result.is_none());
    let exit = outcome.exit.unwrap().to_string();
    assert!(
        exit.starts_with("vllm bench exited with status 0 but wrote no result file "),
        "{exit}"
    );
    assert!(
        exit.contains("result_test_qwen3_tts_base_seed-tts_1_20_inna_outna_"),
        "{exit}"
    );
}

#[test]
fn malformed_result_gives_no_result_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let bench = fake_bench("malformed", None, &dir.path().join("argv.jsonl"));
    let trial = tts_trial();
    let outcome = bench.run(&context(&trial, &dir.path().join("t"), "H100"));
    assert!(outcome.result.is_none());
    let exit = outcome.exit.unwrap().to_string();
    assert!(exit.contains("is not valid JSON"), "{exit}");
}

fn gone(pid: u32) -> bool {
    // Gone, or a zombie waiting for init to reap it.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn time_limit_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pids_file = dir.path().join("pids");
    let mut settings = fake_settings("sleep", None, &dir.path().join("argv.jsonl"));
    settings
        .extra_env
        .insert("DFX_FAKE_VLLM_PIDS".into(), pids_file.display().to_string());
    settings.timeout = Some(Duration::from_secs(2));
    let bench = VllmBench::new(settings);
    let trial = tts_trial();
    let outcome = bench.run(&context(&trial, &dir.path().join("t"), "H100"));
    assert!(outcome.result.is_none());
    let exit = outcome.exit.unwrap().to_string();
    assert!(exit.contains("did not finish within 2 s"), "{exit}");
    let pids: Vec<u32> = std::fs::read_to_string(&pids_file)
        .expect("the fake wrote its pids before sleeping")
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "leader and its child");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids.iter().all(|p| gone(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for p in pids {
        assert!(gone(p), "process {p} of the bench's group is still running");
    }
}

#[test]
fn missing_executable_is_unsupported_with_a_clear_reason() {
    let bench = VllmBench::new(ExternalSettings {
        vllm_bin: Some(PathBuf::from("/nonexistent/bin/vllm")),
        ..ExternalSettings::default()
    });
    let trial = tts_trial();
    let why = bench.supports(&trial.entry).unwrap_err().to_string();
    assert!(
        why.contains("/nonexistent/bin/vllm") && why.contains("--vllm-bin"),
        "{why}"
    );
    let dir = tempfile::tempdir().unwrap();
    let outcome = bench.run(&context(&trial, dir.path(), "H100"));
    assert!(outcome.result.is_none());
    assert_eq!(
        outcome.exit.map(|e| e.to_string()).as_deref(),
        Some(why.as_str())
    );
    assert!(
        !dir.path().join("bench.log").exists(),
        "nothing was started"
    );
}

#[test]
fn diffusion_entries_are_unsupported() {
    let bench = fake_bench("ok", None, Path::new("/dev/null"));
    let mut entry = (*tts_trial().entry).clone();
    entry.dialect = Dialect::Diffusion;
    let why = bench.supports(&entry).unwrap_err().to_string();
    assert!(why.contains("run_diffusion_benchmark.py"), "{why}");
}

#[test]
fn every_omni_backend_is_supported_when_vllm_exists() {
    let bench = fake_bench("ok", None, Path::new("/dev/null"));
    for trial in trials_from_config(&upstream_config("test_qwen3_omni_async_chunk.json")) {
        assert_eq!(trial.entry.backend.as_deref(), Some("openai-chat-omni"));
        bench.supports(&trial.entry).unwrap();
    }
}

#[test]
fn entries_with_load_keys_are_refused_naming_the_native_bench() {
    let dir = tempfile::tempdir().unwrap();
    let bench = fake_bench("ok", None, &dir.path().join("argv.jsonl"));
    let mut trial = tts_trial();
    bench.supports(&trial.entry).expect("no load keys");
    let mut entry = (*trial.entry).clone();
    entry.load.shape = dfx_core::plan::LoadShape::Burst;
    trial.entry = std::sync::Arc::new(entry);
    let why = bench.supports(&trial.entry).unwrap_err().to_string();
    assert!(
        why.contains("ramp_start_rate, burst") && why.contains("--bench native"),
        "{why}"
    );
}
