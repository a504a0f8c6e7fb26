//! End to end without fakes: the suite starts the simulator (`--server sim`, sped up) and
//! drives it with the native bench, on a two-step TTS config with the shipped smoke
//! dataset, with `--format json`. Checks what a user gets: exit status, a stdout that is
//! libtest's JSON event stream and nothing else (the native bench's summary block goes to
//! stderr), every request completed, the results folder, and no simulator process left
//! behind.

use std::path::Path;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{Run, check, fixture, perf_unset};

/// Steps of `sim_tts.json`: (trial name, prompts).
const STEPS: [(&str, u64); 2] = [
    ("test_sim_smoke::default_voice_seed-tts-text::c1", 6),
    ("test_sim_smoke::default_voice_seed-tts-text::c4", 8),
];

/// Keys of vllm bench's result document a result.json must carry, plus the runner's.
const RESULT_KEYS: &[&str] = &[
    "date",
    "backend",
    "model_id",
    "num_prompts",
    "request_rate",
    "max_concurrency",
    "duration",
    "completed",
    "failed",
    "request_throughput",
    "audio_throughput",
    "mean_e2el_ms",
    "median_e2el_ms",
    "p99_e2el_ms",
    "mean_audio_ttfp_ms",
    "median_audio_ttfp_ms",
    "p99_audio_ttfp_ms",
    "mean_audio_rtf",
    "median_audio_rtf",
    "p99_audio_rtf",
    "baseline",
    "Hardware",
    "result_source",
    "bench",
    "trial",
    "verdict",
];

fn read_json(path: &Path, run: &Run) -> Result<Value, Failed> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}\n{}", path.display(), run.both()))?;
    Ok(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?)
}

/// Live processes whose command line holds every one of `parts` (zombies have an empty
/// command line and do not count).
fn processes_with(parts: &[&str]) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| {
            let raw = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            parts
                .iter()
                .all(|p| cmd.contains(p))
                .then(|| format!("{}: {cmd}", e.file_name().to_string_lossy()))
        })
        .collect()
}

pub fn native_bench_against_the_simulator() -> Result<(), Failed> {
    let run = perf_unset(
        &fixture("sim_tts.json"),
        &[
            "--server",
            "sim",
            "--sim-speed",
            "20",
            "--bench",
            "native",
            "--assert-baseline",
            "--format",
            "json",
        ],
        &[],
        &["DFX_HARDWARE"],
    )?;
    check(run.code() == Some(0), "exit status 0", &run)?;
    let stdout = run.stdout();
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    check(
        events.len() == stdout.lines().count() && !events.is_empty(),
        "every stdout line is a JSON event",
        &run,
    )?;
    check(
        events
            .iter()
            .filter(|e| e["type"] == "test" && e["event"] == "ok")
            .count()
            == STEPS.len()
            && run.stderr().contains("Serving Benchmark Result"),
        "an ok event per step; the bench's summary block on stderr",
        &run,
    )?;
    let s = run.summary()?;
    check(
        s["hardware"] == "SIM",
        "the simulator's hardware label: SIM (time-lapsed, on the real-time scale)",
        &run,
    )?;
    check(s["server_starts"] == 1, "both steps share one server", &run)?;
    let run_dir = run.run_dir()?;
    let info = read_json(&run_dir.join("run.json"), &run)?;
    check(
        info["sim_speed"] == 20.0,
        "run.json carries the speed",
        &run,
    )?;

    let trials = s["trials"].as_array().cloned().unwrap_or_default();
    check(
        trials.len() == STEPS.len(),
        "one summary entry per step",
        &run,
    )?;
    for ((name, prompts), t) in STEPS.iter().zip(&trials) {
        check(
            t["name"] == *name && t["outcome"] == "passed" && t["bench"] == "native",
            &format!("{name}: passed with the native bench"),
            &run,
        )?;
        check(
            t["metrics"]["completed"] == *prompts && t["metrics"]["failed"] == 0,
            &format!("{name}: every one of the {prompts} requests completed"),
            &run,
        )?;
        let dir = run_dir.join("trials").join(name.replace("::", "__"));
        let doc = read_json(&dir.join("result.json"), &run)?;
        let missing: Vec<&str> = RESULT_KEYS
            .iter()
            .copied()
            .filter(|k| doc.get(k).is_none())
            .collect();
        check(
            missing.is_empty(),
            &format!("{name}: result.json lacks {missing:?}"),
            &run,
        )?;
        check(
            doc["result_source"] == "native"
                && doc["Hardware"] == "SIM"
                && doc["completed"] == *prompts
                && doc["baseline"]["SIM"]["median_audio_ttfp_ms"] == 60000.0,
            &format!("{name}: result.json values"),
            &run,
        )?;
        check(
            doc["median_audio_ttfp_ms"]
                .as_f64()
                .is_some_and(|v| v > 0.0)
                && doc["audio_throughput"].as_f64().is_some_and(|v| v > 0.0),
            &format!("{name}: measured, non-zero latency and throughput"),
            &run,
        )?;
        let text = std::fs::read_to_string(dir.join("records.jsonl"))
            .map_err(|e| format!("{name}: records.jsonl: {e}"))?;
        let records: Vec<Value> = text
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{name}: records.jsonl: {e}"))?;
        let measured: Vec<&Value> = records.iter().filter(|r| r["warmup"] == false).collect();
        check(
            measured.len() as u64 == *prompts && measured.iter().all(|r| r["ok"] == true),
            &format!("{name}: one ok record per measured request (warmups are flagged)"),
            &run,
        )?;
    }

    let server = run_dir.join("servers/01-test_sim_smoke");
    let command = std::fs::read_to_string(server.join("command.txt")).unwrap_or_default();
    check(
        server.join("server.log").is_file() && command.contains("--port"),
        "servers/01-test_sim_smoke holds server.log and command.txt",
        &run,
    )?;
    let first = command.lines().next().unwrap_or_default();
    let words: Vec<&str> = first.split_whitespace().collect();
    let port = words
        .iter()
        .position(|w| *w == "--port")
        .and_then(|i| words.get(i + 1))
        .map(|p| format!("--port {p}"))
        .unwrap_or_default();
    let sim = words.first().copied().unwrap_or("dfx-perf-sim");
    let left = processes_with(&[sim, &port]);
    check(
        left.is_empty(),
        &format!("no simulator process may be left: {left:?}"),
        &run,
    )
}
