//! A stability (soak) entry in upstream's form, run natively against the sped-up
//! simulator with `--duration-scale` shortening its day to seconds: batches until the time
//! is over, every request completed, per-batch figures in `batches.jsonl` and the result,
//! the first-vs-last-quarter drift (with the simulator's resident memory read from
//! `/proc`), batch-tagged request ids.

use libtest_mimic::Failed;
use serde_json::{Value, json};

use crate::support::{check, perf_unset};

pub fn stability_soak_against_the_simulator() -> Result<(), Failed> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let cfg = json!([{
        "test_name": "test_soak_smoke",
        "server_params": {"model": "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice"},
        "benchmark_params": [{
            "dataset_name": "random",
            "backend": "openai-audio-speech",
            "endpoint": "/v1/audio/speech",
            "duration_sec": 86400,
            "max_concurrency": 2,
            "num_prompts_per_batch": 6,
            "random_input_len": {"min": 1, "max": 30},
            "random_output_len": {"min": 0, "max": 1000},
            "random_range_ratio": 0.0,
            "extra_body": {"voice": "Vivian", "language": "English"},
            "ignore_eos": true,
            "percentile-metrics": "ttft,e2el,audio_rtf,audio_ttfp,audio_duration"
        }]
    }]);
    let file = tmp.path().join("soak.json");
    std::fs::write(&file, cfg.to_string()).map_err(|e| e.to_string())?;
    // 86400 s × 0.00003 ≈ 2.6 s of soak
    let run = perf_unset(
        &file.display().to_string(),
        &[
            "--server",
            "sim",
            "--sim-speed",
            "50",
            "--bench",
            "auto",
            "--duration-scale",
            "0.00003",
        ],
        &[],
        &["DFX_SERVER", "DFX_BENCH"],
    )?;
    check(run.code() == Some(0), "exit status 0", &run)?;
    let s = run.summary()?;
    let t = &s["trials"][0];
    check(
        t["name"] == "test_soak_smoke::random::c2"
            && t["outcome"] == "passed"
            && t["bench"] == "native",
        "the soak trial passed with the native bench",
        &run,
    )?;
    let dir = run.run_dir()?.join("trials/test_soak_smoke__random__c2");
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("result.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let st = &doc["stability"];
    let batches = st["batches_run"].as_u64().unwrap_or(0);
    check(
        batches >= 2
            && doc["num_prompts"] == batches * 6
            && doc["completed"] == batches * 6
            && st["batches"]
                .as_array()
                .is_some_and(|b| b.len() as u64 == batches),
        &format!("several batches of 6, every request completed: {st}"),
        &run,
    )?;
    let drift = &st["drift"];
    check(
        drift["first_quarter"]["median_audio_ttfp_ms"]
            .as_f64()
            .is_some_and(|v| v > 0.0)
            && drift["last_quarter"]["median_audio_rtf"]
                .as_f64()
                .is_some_and(|v| v > 0.0)
            && drift["ttfp_ratio"].is_number()
            && drift["last_quarter"]["server_rss_mb"]
                .as_f64()
                .is_some_and(|v| v > 0.0)
            && drift["error_rate_change"] == 0.0,
        &format!("drift between the first and the last quarter: {drift}"),
        &run,
    )?;
    let lines = std::fs::read_to_string(dir.join("batches.jsonl")).map_err(|e| e.to_string())?;
    check(
        lines.lines().count() as u64 == batches,
        "one batches.jsonl line per batch",
        &run,
    )?;
    let records = std::fs::read_to_string(dir.join("records.jsonl")).map_err(|e| e.to_string())?;
    let tagged = records
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["warmup"] == false)
        .filter(|r| {
            r["request_id"]
                .as_str()
                .is_some_and(|id| id.contains("b1-"))
        })
        .count();
    check(
        tagged == 6,
        "the second batch's 6 requests carry its tag",
        &run,
    )
}
