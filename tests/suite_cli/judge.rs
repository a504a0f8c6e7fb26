//! A case with a judge server (upstream's `judge_server_params`, OmniInteract) against two
//! real simulator processes: the main server and the judge are started (the judge in its
//! own `servers/<NN>-<test>-judge` folder, without `--omni`, with `CUDA_VISIBLE_DEVICES`
//! mapped from the parent's), both steps reuse the pair, the bench (dfx-fake-vllm, which
//! calls the judge's `/v1/models` as the real scorer would) gets the judge's URL, and both
//! processes are gone afterwards.

use std::path::Path;

use libtest_mimic::Failed;
use serde_json::{Value, json};

use crate::support::{check, fake_vllm_bin, perf_unset, run_dirs};

fn config(dir: &Path) -> Result<String, Failed> {
    let cfg = json!([{
        "test_name": "test_judge_smoke",
        "mark": ["omni"],
        "server_params": {"model": "Qwen/Qwen3-Omni-30B-A3B-Instruct"},
        "judge_server_params": {
            "model": "Qwen/Qwen2.5-Omni-3B",
            "use_omni": false,
            "cuda_visible_devices": "1",
            "extra_cli_args": ["--max-model-len", "4096"]
        },
        "benchmark_params": [{
            "name": "omniinteract",
            "dataset_name": "omniinteract",
            "backend": "openai-chat-omni",
            "endpoint": "/v1/chat/completions",
            "num_prompts": [4, 4],
            "max_concurrency": [1, 2]
        }]
    }]);
    let path = dir.join("judge.json");
    std::fs::write(&path, cfg.to_string()).map_err(|e| e.to_string())?;
    Ok(path.display().to_string())
}

/// Processes whose command line holds `dfx-perf-sim` and `--port <port>`.
fn sims_on(port: &str) -> Vec<String> {
    let needle = format!("--port {port}");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let raw = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            (cmd.contains("dfx-perf-sim") && cmd.contains(&needle)).then_some(cmd)
        })
        .collect()
}

fn port_of(command: &str) -> Option<String> {
    let words: Vec<&str> = command.lines().next()?.split_whitespace().collect();
    let i = words.iter().position(|w| *w == "--port")?;
    words.get(i + 1).map(|p| p.to_string())
}

pub fn judge_server_is_started_used_and_stopped() -> Result<(), Failed> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let cfg = config(tmp.path())?;
    let record = tmp.path().join("vllm-record.jsonl");
    let result = dfx_core::reference::reference_dir()
        .map_err(Failed::from)?
        .join("vllm-bench/result-rate20-burstiness0.5.json");
    let fake = fake_vllm_bin()?.display().to_string();
    let run = perf_unset(
        &cfg,
        &[
            "--server",
            "sim",
            "--sim-speed",
            "50",
            "--bench",
            "vllm",
            "--vllm-bin",
            &fake,
        ],
        &[
            ("DFX_FAKE_VLLM_RESULT", &result.display().to_string()),
            ("DFX_FAKE_VLLM_RECORD", &record.display().to_string()),
            ("CUDA_VISIBLE_DEVICES", "7,9"),
        ],
        &["DFX_SERVER", "DFX_BENCH"],
    )?;
    check(run.code() == Some(0), "exit status 0", &run)?;
    let s = run.summary()?;
    check(
        s["server_starts"] == 2,
        "one main server and one judge, shared by both steps",
        &run,
    )?;
    let servers = run.run_dir()?.join("servers");
    let main = std::fs::read_to_string(servers.join("01-test_judge_smoke/command.txt"))
        .map_err(|e| format!("main command.txt: {e}"))?;
    let judge = std::fs::read_to_string(servers.join("02-test_judge_smoke-judge/command.txt"))
        .map_err(|e| format!("judge command.txt: {e}\n{}", run.both()))?;
    let judge_line = judge.lines().next().unwrap_or_default();
    check(
        judge_line.contains("serve Qwen/Qwen2.5-Omni-3B")
            && !judge_line.contains("--omni")
            && judge_line.contains("--max-model-len 4096")
            && judge.contains("CUDA_VISIBLE_DEVICES=9"),
        &format!("judge command: its model, no --omni, its args, device 9 of 7,9:\n{judge}"),
        &run,
    )?;
    let (main_port, judge_port) = (port_of(&main), port_of(&judge));
    let lines: Vec<Value> = std::fs::read_to_string(&record)
        .map_err(|e| format!("{}: {e}", record.display()))?
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let url = format!(
        "http://127.0.0.1:{}",
        judge_port.clone().unwrap_or_default()
    );
    let used = lines.len() == 2
        && lines.iter().all(|l| {
            let argv: Vec<&str> = l["argv"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            argv.windows(2)
                .any(|w| w == ["--omniinteract-judge-base-url", url.as_str()])
                && l["judge_models_status"]
                    .as_str()
                    .is_some_and(|s| s.contains(" 200"))
        });
    check(
        used,
        &format!("both bench runs got {url} and the judge answered /v1/models: {lines:?}"),
        &run,
    )?;
    let left: Vec<String> = [main_port, judge_port]
        .iter()
        .flatten()
        .flat_map(|p| sims_on(p))
        .collect();
    check(
        left.is_empty() && run_dirs(run.results.path()).len() == 1,
        &format!("no simulator process left: {left:?}"),
        &run,
    )
}
