//! A stability (soak) entry in upstream's form, run natively against the sped-up
//! simulator with `--duration-scale` shortening its day to seconds: batches until the time
//! is over, every request completed, per-batch figures in `batches.jsonl` and the result,
//! the first-vs-last-quarter drift (with the simulator's resident memory read from
//! `/proc`), batch-tagged request ids; `goodput` for the whole soak and per batch.

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
            "percentile-metrics": "ttft,e2el,audio_rtf,audio_ttfp,audio_duration",
            "goodput": "e2el:600000 audio_ttfp:600000 continuity:600000"
        }]
    }]);
    let file = tmp.path().join("soak.json");
    std::fs::write(&file, cfg.to_string()).map_err(|e| e.to_string())?;
    // 86400 s × 0.0015 ≈ 130 s of soak on the real-time scale: time-lapsed by the
    // simulator's speed 50, about 2.6 s of wall time
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
            "0.0015",
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
    // SLOs far above anything a simulated request takes: every request of every batch
    // is good, so each batch's goodput is its requests over its duration.
    let batch_goodput = |b: &Value| {
        let d =
            b["requests"].as_f64().unwrap_or(0.0) / b["request_goodput"].as_f64().unwrap_or(0.0);
        b["slo_attainment"] == 1.0 && d.is_finite() && d > 0.0
    };
    check(
        doc["slo_attainment"] == 1.0
            && doc["request_goodput"] == doc["request_throughput"]
            && st["batches"]
                .as_array()
                .is_some_and(|b| b.iter().all(batch_goodput))
            && st["drift"]["slo_attainment_change"] == 0.0,
        &format!("goodput of the soak and of every batch: {st}"),
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

/// An omni stability entry (not speech) goes to `vllm bench serve --omni` batch by batch,
/// as upstream's stability runner does it: the fake vllm records each batch's argv; the
/// result adds the batches up.
pub fn stability_soak_through_the_external_bench() -> Result<(), Failed> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let cfg = json!([{
        "test_name": "test_soak_omni",
        "server_params": {"model": "Qwen/Qwen3-Omni-30B-A3B-Instruct"},
        "benchmark_params": [{
            "dataset_name": "random",
            "backend": "openai-chat-omni",
            "endpoint": "/v1/chat/completions",
            "duration_sec": 3600,
            "max_concurrency": 2,
            "num_prompts_per_batch": 3,
            "random_input_len": 100,
            "random_output_len": 20,
            "ignore_eos": true,
            "goodput": "e2el:200"
        }]
    }]);
    let file = tmp.path().join("soak.json");
    std::fs::write(&file, cfg.to_string()).map_err(|e| e.to_string())?;
    let result = tmp.path().join("batch.json");
    std::fs::write(
        &result,
        // Two of the three requests met the SLO: vllm's goodput 2 / 0.2 s.
        json!({"completed": 3, "failed": 0, "duration": 0.2, "median_e2el_ms": 150.0,
               "median_ttft_ms": 40.0, "request_throughput": 15.0, "request_goodput": 10.0,
               "errors": ["", "", ""]})
        .to_string(),
    )
    .map_err(|e| e.to_string())?;
    let record = tmp.path().join("record.jsonl");
    let fake = crate::support::fake_vllm_bin()?.display().to_string();
    // 3600 s × 0.0002 = 0.72 s of soak
    let run = perf_unset(
        &file.display().to_string(),
        &[
            "--server",
            "sim",
            "--sim-speed",
            "50",
            // `vllm`, not `auto`: a time-lapsed run (the native bench at --sim-speed K)
            // refuses the external bench, which measures the sped-up simulator as it is.
            "--bench",
            "vllm",
            "--vllm-bin",
            &fake,
            "--duration-scale",
            "0.0002",
        ],
        &[
            ("DFX_FAKE_VLLM_RESULT", &result.display().to_string()),
            ("DFX_FAKE_VLLM_RECORD", &record.display().to_string()),
        ],
        &["DFX_SERVER", "DFX_BENCH"],
    )?;
    check(run.code() == Some(0), "exit status 0", &run)?;
    let s = run.summary()?;
    let t = &s["trials"][0];
    check(
        t["outcome"] == "passed" && t["bench"] == "vllm",
        "the soak trial passed with the external bench",
        &run,
    )?;
    let calls: Vec<Vec<String>> = std::fs::read_to_string(&record)
        .map_err(|e| e.to_string())?
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            v["argv"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    let has = |argv: &[String], pair: [&str; 2]| argv.windows(2).any(|w| w == pair);
    let shaped = calls.iter().enumerate().all(|(i, a)| {
        has(a, ["--num-prompts", "3"])
            && has(a, ["--max-concurrency", "2"])
            && has(a, ["--num-warmups", if i == 0 { "2" } else { "0" }])
            && !a
                .iter()
                .any(|x| x == "--duration-sec" || x == "--num-prompts-per-batch")
    });
    check(
        calls.len() >= 2 && shaped,
        &format!("batches of 3 at c=2, warmups before the first only: {calls:?}"),
        &run,
    )?;
    let dir = run.run_dir()?.join("trials/test_soak_omni__random__c2");
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("result.json")).map_err(|e| e.to_string())?,
    )?;
    let n = calls.len() as u64;
    check(
        doc["completed"] == 3 * n
            && doc["num_prompts"] == 3 * n
            && doc["stability"]["batches_run"] == n
            && doc["stability"]["drift"]["median_e2el_ms"]["ratio"] == 1.0,
        &format!("{n} batches added up: {doc:#}"),
        &run,
    )?;
    let goodput_arg = calls.iter().all(|a| has(a, ["--goodput", "e2el:200"]));
    let seconds = doc["duration"].as_f64().unwrap_or(0.0);
    let rate = doc["request_goodput"].as_f64().unwrap_or(-1.0);
    check(
        goodput_arg
            && doc["slo_attainment"].as_f64() == Some(2.0 / 3.0)
            && (rate * seconds - 2.0 * n as f64).abs() < 1e-6
            && doc["stability"]["batches"][0]["slo_attainment"].as_f64() == Some(2.0 / 3.0)
            && doc["stability"]["drift"]["slo_attainment_change"] == 0.0,
        &format!("every batch's 2 good of 3 counted over the soak's {seconds} s: {doc:#}"),
        &run,
    )?;
    Ok(())
}

/// Upstream's diffusion stability form (kebab-case keys, fixture
/// `tests/fixtures/stability/test_diffusion_kebab_soak.json`): the file loads and lists,
/// each soak ignored with the reason (no bench of dfx-perf runs diffusion soaks), and a
/// run ignores them the same way without starting a server.
pub fn kebab_case_diffusion_soak_lists_and_is_ignored_with_its_reason() -> Result<(), Failed> {
    let config = "tests/fixtures/stability/test_diffusion_kebab_soak.json";
    let reason = "diffusion stability entries: upstream soaks them with \
                  diffusion_benchmark_serving.py batches";
    let unset = ["DFX_SERVER", "DFX_BENCH", "DFX_HARDWARE"];
    let list = perf_unset(
        config,
        &["--list", "--verbose", "--server", "sim"],
        &[],
        &unset,
    )?;
    let out = list.stdout();
    check(
        list.code() == Some(0)
            && out.contains("test_wan22_t2v_stability::t2v::c2: test")
            && out.contains("test_wan22_t2v_stability::t2v_1::qps0.5: test")
            && out
                .matches("ignored    no bench can run this entry")
                .count()
                == 2
            && out.matches(reason).count() >= 2,
        "both kebab-case soaks listed, each ignored with the diffusion-soak reason",
        &list,
    )?;
    let run = perf_unset(config, &["--server", "sim"], &[], &unset)?;
    let out = run.stdout();
    check(
        run.code() == Some(0)
            && out.contains("test_wan22_t2v_stability::t2v::c2 ")
            && out.contains("2 ignored")
            && run.both().contains(reason),
        "a run ignores both soaks with the reason and exits 0",
        &run,
    )
}
