//! GPU samples beside a local server, with a fake `nvidia-smi` on `PATH`: the suite starts
//! the simulator, samples the GPU its `CUDA_VISIBLE_DEVICES` names every 0.5 s while each
//! trial's bench runs, writes the samples beside the records and the summary into the
//! result. Without `nvidia-smi` the results carry no such key and the run says so once.

use std::path::{Path, PathBuf};
use std::process::Output;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{output_text, sim_native, write_executable};

/// Answers the sampler's query with a memory figure that grows by 10 MiB per call
/// (GPU 0: 1000 + 10 n, GPU 1: 5000 + 10 n), only for the GPUs `-i` names; logs its
/// arguments.
const FAKE_SMI: &str = r#"#!/bin/sh
dir="$(dirname "$0")"
echo "$*" >> "$dir/calls.log"
case "$*" in
  *memory.used*) ;;
  *) echo 'NVIDIA H20, 560.35.03, 97871'; exit 0 ;;
esac
n=$(cat "$dir/n" 2>/dev/null || echo 0)
echo $((n + 1)) > "$dir/n"
ids=all
while [ $# -gt 0 ]; do
  if [ "$1" = "-i" ]; then ids="$2"; fi
  shift
done
case "$ids" in all|*0*) echo "0, $((1000 + 10 * n)), 40" ;; esac
case "$ids" in all|*1*) echo "1, $((5000 + 10 * n)), 80" ;; esac
"#;

fn run_sim(env: &[(&str, &str)]) -> Result<(Output, tempfile::TempDir), Failed> {
    let (out, results) = sim_native("sim_tts.json", &[], env)?;
    if out.status.code() != Some(0) {
        return Err(format!("suite failed: {}", output_text(&out)).into());
    }
    Ok((out, results))
}

fn trial_dirs(results: &Path) -> Result<Vec<PathBuf>, Failed> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results.join("latest/trials"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    dirs.sort();
    Ok(dirs)
}

fn read(path: &Path) -> Result<Value, Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(serde_json::from_str(&text)?)
}

pub fn gpu_samples_with_a_fake_nvidia_smi() -> Result<(), Failed> {
    let bin = tempfile::tempdir()?;
    let smi = bin.path().join("nvidia-smi");
    write_executable(&smi, FAKE_SMI)?;
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH")?);
    let (_out, results) = run_sim(&[("PATH", &path), ("CUDA_VISIBLE_DEVICES", "1")])?;
    let calls = std::fs::read_to_string(bin.path().join("calls.log"))?;
    if !calls
        .lines()
        .any(|l| l.contains("memory.used") && l.ends_with("-i 1"))
    {
        return Err(format!("the sampler did not ask for GPU 1 only:\n{calls}").into());
    }
    let dirs = trial_dirs(results.path())?;
    if dirs.len() != 2 {
        return Err(format!("two trial folders expected: {dirs:?}").into());
    }
    for dir in dirs {
        check_trial(&dir)?;
    }
    Ok(())
}

/// One trial's result against its samples file.
fn check_trial(dir: &Path) -> Result<(), Failed> {
    let doc = read(&dir.join("result.json"))?;
    let gpus = doc["gpus"].as_array().ok_or("no gpus list")?;
    let samples = std::fs::read_to_string(dir.join("gpu_samples.jsonl"))?;
    let rows: Vec<Value> = samples
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let mems: Vec<f64> = rows
        .iter()
        .filter_map(|r| r["memory_used_mb"].as_f64())
        .collect();
    let peak = mems.iter().copied().fold(f64::MIN, f64::max);
    let mean = mems.iter().sum::<f64>() / mems.len().max(1) as f64;
    let duration = doc["duration"].as_f64().ok_or("no duration")?;
    let last_t = rows.last().and_then(|r| r["t_s"].as_f64()).unwrap_or(-1.0);
    let ok = gpus.len() == 1
        && gpus[0]["gpu"] == "1"
        && gpus[0]["samples"].as_u64() == Some(rows.len() as u64)
        && rows.iter().all(|r| r["gpu"] == "1")
        && !rows.is_empty()
        && doc["peak_memory_mb"].as_f64() == Some(peak)
        && peak >= 5000.0
        && (doc["gpu_mean_memory_mb"].as_f64().unwrap_or(0.0) - mean).abs() < 1e-6
        && doc["gpu_mean_utilization_pct"].as_f64() == Some(80.0)
        && (0.0..duration + 30.0).contains(&last_t);
    if !ok {
        return Err(format!("{}: result {doc:#}\nsamples:\n{samples}", dir.display()).into());
    }
    Ok(())
}

pub fn no_nvidia_smi_no_gpu_keys_said_once() -> Result<(), Failed> {
    if dfx_core::hardware::has_nvidia_smi() {
        return Err("nvidia-smi is on this machine's PATH: the check needs it absent".into());
    }
    let (out, results) = run_sim(&[])?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = stderr.matches("nvidia-smi is not on PATH").count();
    if said != 1 {
        return Err(format!("said {said} times:\n{stderr}").into());
    }
    for dir in trial_dirs(results.path())? {
        let doc = read(&dir.join("result.json"))?;
        let gpu_keys: Vec<&String> = doc
            .as_object()
            .map(|o| {
                o.keys()
                    .filter(|k| k.starts_with("gpu") || *k == "peak_memory_mb")
                    .collect()
            })
            .unwrap_or_default();
        if !gpu_keys.is_empty() || dir.join("gpu_samples.jsonl").exists() {
            return Err(format!(
                "{}: GPU keys without nvidia-smi: {gpu_keys:?}",
                dir.display()
            )
            .into());
        }
    }
    Ok(())
}
