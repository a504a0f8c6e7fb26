//! Every failure class, provoked against the real simulator (its `--sim-faults`), an
//! inline threshold no run meets, and a bench that exits (the fake `vllm`), checked in
//! every artefact that carries it: `verdict.json`, `result.json`'s verdict,
//! `summary.json` (the trial's class and the run's counts), `junit.xml` (the failure's
//! `type`) and the terminal (the trial's `class:` line and the run's "N failed: …" line).

use std::path::Path;

use libtest_mimic::Failed;
use serde_json::{Value, json};

use crate::support::{fake_vllm_bin, output_text, sim_native};

/// The one trial of [`config_with_baseline`].
pub const BREACH_TRIAL: &str = "test_breach::default_voice_seed-tts-text::c1";

/// The c1 step of `sim_tts.json` (6 prompts, 1 warmup).
const C1: &str = "test_sim_smoke::default_voice_seed-tts-text::c1";

fn read_json(path: &Path) -> Result<Value, Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?)
}

/// The only run folder of `results`.
fn run_dir(results: &Path, text: &str) -> Result<std::path::PathBuf, Failed> {
    match crate::support::run_dirs(results).as_slice() {
        [one] => Ok(one.clone()),
        other => Err(format!("expected one run folder, found {other:?}\n{text}").into()),
    }
}

/// Checks that the run failed trial `trial` with `class` everywhere; returns its
/// `failure_detail`.
pub fn expect_class(
    out: &std::process::Output,
    results: &Path,
    trial: &str,
    class: &str,
) -> Result<String, Failed> {
    let text = output_text(out);
    let fail = |what: &str| -> Failed { format!("{what} (expected class {class})\n{text}").into() };
    if out.status.success() {
        return Err(fail("the run passed"));
    }
    let dir = run_dir(results, &text)?;
    let tdir = dir
        .join("trials")
        .join(dfx_core::fsutil::sanitize_component(trial));
    let verdict = read_json(&tdir.join("verdict.json"))?;
    if verdict["failure_class"] != class {
        return Err(fail(&format!("verdict.json: {verdict}")));
    }
    let detail = verdict["failure_detail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if detail.is_empty() {
        return Err(fail("verdict.json has no failure_detail"));
    }
    let result = read_json(&tdir.join("result.json"))?;
    if result["verdict"]["failure_class"] != class {
        return Err(fail("result.json's verdict has another class"));
    }
    let summary = read_json(&dir.join("summary.json"))?;
    let entry = summary["trials"]
        .as_array()
        .and_then(|t| t.iter().find(|e| e["name"] == trial))
        .ok_or_else(|| fail("summary.json lacks the trial"))?;
    if entry["failure_class"] != class || summary["failure_classes"] != json!({ class: 1 }) {
        return Err(fail(&format!("summary.json: {summary}")));
    }
    let junit = std::fs::read_to_string(dir.join("junit.xml"))?;
    if !junit.contains(&format!("type=\"{class}\"")) {
        return Err(fail(&format!("junit.xml:\n{junit}")));
    }
    if !text.contains(&format!("dfx-perf: [1/1] {trial} (at most ")) {
        return Err(fail("the terminal does not say [1/1] with the time left"));
    }
    let short = trial.split_once("::").map_or(trial, |(_, rest)| rest);
    if !text.contains(&format!("class: {class}: "))
        || !text.contains(&format!("1 failed: 1 {class} ({short})"))
    {
        return Err(fail("the terminal does not name the class"));
    }
    Ok(detail)
}

/// The c1 step against the simulator with `faults` fails with `class`, and its detail
/// passes `detail_ok`.
fn sim_fault(
    faults: &str,
    env: &[(&str, &str)],
    class: &str,
    detail_ok: impl Fn(&str) -> bool,
) -> Result<(), Failed> {
    let (out, results) = sim_native(
        "sim_tts.json",
        &["--sim-faults", faults, "--exact", C1],
        env,
    )?;
    let detail = expect_class(&out, results.path(), C1, class)?;
    if !detail_ok(&detail) {
        return Err(format!("{faults}: the detail does not name the cause: {detail}").into());
    }
    Ok(())
}

pub fn error500_is_server_errors() -> Result<(), Failed> {
    // The top error with its count.
    sim_fault("error500=1", &[], "server_errors", |d| {
        d.contains("http_500 ×6")
    })
}

pub fn exit_at_startup_is_server_start() -> Result<(), Failed> {
    sim_fault("exit-at-startup=3", &[], "server_start", |d| {
        d.starts_with("exited at start with exit status 3")
    })
}

pub fn crash_at_inflight_is_server_exit() -> Result<(), Failed> {
    sim_fault("crash-at-inflight=1", &[], "server_exit", |d| {
        d.starts_with("died during the trial with ")
    })
}

pub fn stall_after_chunks_is_stalled() -> Result<(), Failed> {
    let window = [("DFX_STALL_WINDOW", "3")];
    sim_fault("stall-after-chunks=3", &window, "stalled", |d| {
        d.starts_with("server stalled: ")
    })
}

/// A small config of one c1 step whose inline threshold no run meets (TTFP ≤ 0.001 ms).
fn breached_config(dir: &Path) -> Result<String, Failed> {
    let baseline = json!({"SIMx5": {"median_audio_ttfp_ms": 0.001}});
    config_with_baseline(dir, &baseline, "breach.json")
}

/// [`BREACH_TRIAL`]'s config (one c1 step of 4 prompts) with `baseline` inline, written
/// to `dir/name`; its path.
pub fn config_with_baseline(dir: &Path, baseline: &Value, name: &str) -> Result<String, Failed> {
    let cfg = json!([{
        "test_name": "test_breach",
        "server_params": {"model": "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice"},
        "benchmark_params": [{
            "task": "default_voice",
            "dataset_name": "seed-tts-text",
            "backend": "openai-audio-speech",
            "endpoint": "/v1/audio/speech",
            "dataset_path": "perf-configs/datasets/seed_tts_smoke",
            "seed_tts_locale": "en",
            "num_prompts": 4,
            "max_concurrency": 1,
            "num_warmups": 0,
            "extra_body": {"voice": "Vivian", "language": "English", "task_type": "CustomVoice"},
            "percentile-metrics": "ttft,e2el,audio_rtf,audio_ttfp,audio_duration",
            "baseline": baseline
        }]
    }]);
    let file = dir.join(name);
    std::fs::write(&file, cfg.to_string())?;
    Ok(file.display().to_string())
}

pub fn an_inline_threshold_breach_is_breach() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let config = breached_config(tmp.path())?;
    let trial = BREACH_TRIAL;
    let mut args = crate::support::SIM_NATIVE.to_vec();
    args.extend(["--assert-baseline", "--exact", trial]);
    let (child, results) = crate::support::perf_spawn(&config, &args, &[])?;
    let out = child.wait_with_output()?;
    let detail = expect_class(&out, results.path(), trial, "breach")?;
    if !detail.starts_with("median_audio_ttfp_ms ") || !detail.contains("> 0.001") {
        return Err(format!("the breached metric with value and threshold: {detail}").into());
    }
    Ok(())
}

pub fn a_bench_that_exits_is_client() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let config = breached_config(tmp.path())?;
    let trial = BREACH_TRIAL;
    let fake = fake_vllm_bin()?.display().to_string();
    let args = [
        "--server",
        "sim",
        "--sim-speed",
        "5",
        "--bench",
        "vllm",
        "--vllm-bin",
        &fake,
        "--hardware",
        "SIMx5",
        "--exact",
        trial,
    ];
    let env = [("DFX_FAKE_VLLM_MODE", "fail")];
    let (child, results) = crate::support::perf_spawn(&config, &args, &env)?;
    let out = child.wait_with_output()?;
    let detail = expect_class(&out, results.path(), trial, "client")?;
    if !detail.contains("status 2") {
        return Err(format!("the bench's exit status is named: {detail}").into());
    }
    Ok(())
}
