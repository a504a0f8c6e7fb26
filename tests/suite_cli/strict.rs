//! Issue #35 end to end: a typo in a hardware label or a key, `goodput` SLOs a bench
//! cannot measure and `--require-thresholds`, through the real suite binary (fake server
//! and bench unless said otherwise). Each error is exit 2 before anything starts:
//! no run folder.

use libtest_mimic::Failed;
use serde_json::{Value, json};

use crate::command_line::BASE_TRIALS;
use crate::support::{Run, check, fixture, perf, run_dirs};

/// An exit-2 run that names every `wants` and started nothing.
pub fn refused(run: &Run, wants: &[&str]) -> Result<(), Failed> {
    check(run.code() == Some(2), "exit status 2", run)?;
    let err = run.stderr();
    for want in wants {
        check(err.contains(want), &format!("stderr names {want:?}"), run)?;
    }
    check(
        err.contains("nothing was started"),
        "says nothing started",
        run,
    )?;
    check(
        run_dirs(run.results.path()).is_empty(),
        "no run folder",
        run,
    )
}

/// `perf` on `cases` written to a temporary config file (`strict.json`).
pub fn perf_on(cases: Value, args: &[&str]) -> Result<Run, Failed> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("strict.json");
    std::fs::write(&file, cases.to_string()).map_err(|e| e.to_string())?;
    perf(&file.display().to_string(), args, &[])
}

fn tts_case(name: &str, entry: Value) -> Value {
    let mut e = json!({
        "task": "voice_clone", "dataset_name": "seed-tts", "backend": "openai-audio-speech",
        "endpoint": "/v1/audio/speech", "num_prompts": [2], "max_concurrency": [1],
        "dataset_path": "perf-configs/datasets/seed_tts_smoke"
    });
    for (k, v) in entry.as_object().into_iter().flatten() {
        e[k] = v.clone();
    }
    json!({"test_name": name, "server_params": {"model": "Qwen/Qwen3-TTS-12Hz-1.7B-Base"},
           "benchmark_params": [e]})
}

pub fn a_mistyped_hardware_label_is_a_flag_error() -> Result<(), Failed> {
    let config = fixture("tts_small.json");
    let run = perf(&config, &["--assert-baseline", "--hardware", "H2O"], &[])?;
    refused(
        &run,
        &["`H2O`", "--hardware (DFX_HARDWARE)", "closest: H20"],
    )?;
    let run = perf(&config, &["--assert-baseline"], &[("DFX_HARDWARE", "H2O")])?;
    refused(&run, &["`H2O`", "DFX_HARDWARE", "closest: H20"])?;
    // A label only the loaded config names (its A3 bucket) is known.
    let run = perf(&config, &["--list", "--hardware", "A3"], &[])?;
    check(
        run.code() == Some(0),
        "A3 (named by the config) lists",
        &run,
    )
}

pub fn mistyped_keys_are_config_errors_with_the_closest_keys() -> Result<(), Failed> {
    let mut bad_case = tts_case("test_b", json!({}));
    let sp = bad_case["server_params"].take();
    bad_case["sever_params"] = sp;
    let mut bad_server = tts_case("test_c", json!({}));
    bad_server["server_params"]["serve_arg"] = json!({"max-model-len": 4096});
    let cases = json!([
        tts_case("test_a", json!({"num_warmup": 0})),
        bad_case,
        bad_server
    ]);
    let run = perf_on(cases, &[])?;
    refused(
        &run,
        &[
            "strict.json: test `test_a`, benchmark_params[0], key `num_warmup`: `num_warmup` \
             would be read by vllm bench serve as `--num-warmups`",
            "test `test_b`, key `sever_params`: unknown case key (accepted: closest: server_params)",
            "test `test_c`, key `server_params.serve_arg`: unknown server_params key \
             (accepted: closest: serve_args",
        ],
    )
}

/// `goodput` (issue #38 item 5): an SLO name nobody knows is a config error at load; the
/// native bench measures dfx-perf's speech SLOs against the simulator (`request_goodput`
/// and `slo_attainment` in result.json); `vllm bench`, which would reject them, is refused
/// before anything starts.
pub fn goodput_slos_are_checked_and_measured_by_the_native_bench() -> Result<(), Failed> {
    let typo = json!([tts_case(
        "test_g",
        json!({"goodput": "e2el:500 audio_ttft:300"})
    )]);
    refused(
        &perf_on(typo, &["--list"])?,
        &[
            "test `test_g`, benchmark_params[0], key `goodput`: unknown SLO name `audio_ttft`",
            "closest: audio_ttfp",
        ],
    )?;
    let entry = json!({"goodput": ["e2el:600000", "continuity:600000"],
        "task": "default_voice", "dataset_name": "seed-tts-text",
        "extra_body": {"voice": "Vivian", "language": "English", "task_type": "CustomVoice"}});
    let mut speech = json!([tts_case("test_g", entry)]);
    speech[0]["server_params"]["model"] = json!("Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice");
    let fake = crate::support::fake_vllm_bin()?.display().to_string();
    refused(
        &perf_on(speech.clone(), &["--bench", "vllm", "--vllm-bin", &fake])?,
        &[
            "test `test_g`, benchmark_params[0], key `goodput`",
            "`continuity` is dfx-perf's, measured by the native bench only",
        ],
    )?;
    let run = perf_on(speech, &crate::support::SIM_NATIVE)?;
    check(run.code() == Some(0), "the native bench runs it", &run)?;
    let trials = run.run_dir()?.join("trials");
    let dir = std::fs::read_dir(&trials)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .next()
        .ok_or("no trial folder")?;
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("result.json"))?)?;
    check(
        doc["request_goodput"].as_f64() == doc["request_throughput"].as_f64()
            && doc["request_goodput"].as_f64() > Some(0.0)
            && doc["slo_attainment"].as_f64() == Some(1.0),
        "every request meets SLOs that loose",
        &run,
    )
}

pub fn require_thresholds_fails_unbaselined_trials_only() -> Result<(), Failed> {
    let config = fixture("tts_small.json");
    // Under A3 only the c1 entry has a threshold: by default the others pass ("needs data").
    let args = ["test_qwen3_tts_base", "--hardware", "A3"];
    let run = perf(&config, &args, &[])?;
    check(
        run.code() == Some(0),
        "default: unbaselined trials pass",
        &run,
    )?;
    let mut strict = args.to_vec();
    strict.push("--require-thresholds");
    let run = perf(&config, &strict, &[])?;
    check(run.code() == Some(101), "exit 101", &run)?;
    let outcomes = run.outcomes()?;
    let want: Vec<(String, String)> = BASE_TRIALS
        .iter()
        .zip(["passed", "failed", "failed"])
        .map(|(n, o)| (n.to_string(), o.to_string()))
        .collect();
    check(outcomes == want, &format!("outcomes {outcomes:?}"), &run)?;
    check(
        run.stdout().contains("no threshold for hardware `A3`")
            && run
                .stdout()
                .contains("--require-thresholds fails such a trial"),
        "the verdict says why",
        &run,
    )?;
    // The variable turns it on too.
    let run = perf(&config, &args, &[("DFX_REQUIRE_THRESHOLDS", "1")])?;
    check(
        run.code() == Some(101),
        "DFX_REQUIRE_THRESHOLDS=1 fails them",
        &run,
    )
}
