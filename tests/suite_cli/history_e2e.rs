//! The run history end to end against the simulator: seven short runs of the suite with
//! `--history`, the last four with `--sim-faults slowdown=1.3`; `dfx-perf history check`
//! must report the change at the fourth run for the latency metrics of every trial (one
//! finding per trial, `--format json`), at no other run, and exit 3 with
//! `--fail-on-regression`.
//!
//! The runs are real time on a shared machine. With 6 and 8 prompts at `--sim-speed 5` a
//! loaded CI runner moved one c=4 TTFP median by +42 % before the slowdown began. Here the
//! steps have 16 and 24 prompts at speed 2 (`sim_history.json`): 10 of 10 runs passed with
//! three busy loops on two cores, steady or switching on and off.

use std::process::Output;

use libtest_mimic::Failed;

use crate::support::{dfx_perf_tool, fixture, output_text, perf_in, perf_spawn, write_executable};

const RUNS: usize = 7;
const SLOW_FROM: usize = 4;
const TRIALS: [&str; 2] = [
    "test_sim_smoke::default_voice_seed-tts-text::c1",
    "test_sim_smoke::default_voice_seed-tts-text::c4",
];
const LATENCY: [&str; 3] = ["median_audio_ttfp_ms", "median_e2el_ms", "median_audio_rtf"];

pub fn a_slowdown_from_the_fourth_run_is_found_there() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let db = tmp.path().join("history.sqlite");
    let db_arg = db.display().to_string();
    let config = fixture("sim_history.json");
    for i in 1..=RUNS {
        let mut args = vec![
            "--server",
            "sim",
            "--sim-speed",
            "2",
            "--bench",
            "native",
            "--hardware",
            "SIMx2",
            "--history",
            &db_arg,
        ];
        if i >= SLOW_FROM {
            args.extend(["--sim-faults", "slowdown=1.3"]);
        }
        let out = if i == 1 {
            first_run_with_a_gpu(tmp.path(), &config, &args)?
        } else {
            perf_in(tmp.path(), &config, &args)?
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(0) || !stderr.contains("history: ") {
            return Err(format!("run {i}: {}", output_text(&out)).into());
        }
    }
    fingerprint_was_recorded(tmp.path())?;
    let list = dfx_perf_tool(&["history", "--history", &db_arg, "list"])?;
    let listed = String::from_utf8_lossy(&list.stdout);
    if !listed.contains(&format!("{RUNS} run(s)")) {
        return Err(format!("history list: {}", output_text(&list)).into());
    }
    let latest = tmp.path().join("latest").display().to_string();
    let again = dfx_perf_tool(&["history", "--history", &db_arg, "add", &latest])?;
    if !String::from_utf8_lossy(&again.stdout).contains("already stored") {
        return Err(format!("adding twice: {}", output_text(&again)).into());
    }
    // These do not depend on what the detector finds: checked before its findings.
    trend_report_is_written(&db_arg, tmp.path())?;
    rolling_baselines_fill_the_needs_data_trials(&db_arg, tmp.path())?;
    let check = dfx_perf_tool(&[
        "history",
        "--history",
        &db_arg,
        "check",
        "--fail-on-regression",
        "--format",
        "json",
    ])?;
    let out = output_text(&check);
    if check.status.code() != Some(3) {
        return Err(format!("exit status 3 expected: {out}").into());
    }
    let doc: Vec<serde_json::Value> = serde_json::from_slice(&check.stdout)?;
    let findings = doc[0]["findings"].as_array().cloned().unwrap_or_default();
    // One finding per (run, trial): the slowdown at run 4 for each trial, nothing else.
    if let Some(bad) = findings
        .iter()
        .find(|f| f["run_index"] != SLOW_FROM - 1 || f["verdict"] != "regression")
    {
        return Err(
            format!("a finding other than the slowdown at run {SLOW_FROM}: {bad}\n{out}").into(),
        );
    }
    for trial in TRIALS {
        let f = findings.iter().find(|f| f["trial"] == trial);
        let metrics: Vec<&str> = f
            .and_then(|f| f["metrics"].as_array())
            .map(|m| m.iter().filter_map(|m| m["metric"].as_str()).collect())
            .unwrap_or_default();
        if let Some(m) = LATENCY.iter().find(|m| !metrics.contains(m)) {
            return Err(format!("no change found for {trial} {m}:\n{out}").into());
        }
        let known =
            |m: &&str| LATENCY.contains(m) || ["mean_e2el_ms", "audio_throughput"].contains(m);
        if let Some(m) = metrics.iter().find(|m| !known(m)) {
            return Err(format!("unexpected metric {m} for {trial}:\n{out}").into());
        }
    }
    Ok(())
}

/// `history report` writes the page (a chart per trial × metric) and the summary.
fn trend_report_is_written(db: &str, dir: &std::path::Path) -> Result<(), Failed> {
    let out_dir = dir.join("trend");
    let o = out_dir.display().to_string();
    let rep = dfx_perf_tool(&["history", "--history", db, "report", "--out", &o])?;
    let page = std::fs::read_to_string(out_dir.join("history.html"))
        .map_err(|e| format!("no history.html: {e}\n{}", output_text(&rep)))?;
    let md = std::fs::read_to_string(out_dir.join("history.md"))?;
    let charts = page.matches("<svg class=\"chart\"").count();
    if charts < TRIALS.len() * LATENCY.len() || !md.contains("regression(s)") {
        return Err(format!("{charts} charts; history.md:\n{md}").into());
    }
    Ok(())
}

/// `recalibrate --from-history` on the same history: the trials had no threshold for
/// SIMx2 (needs data); the last three runs (all slow, all good) give them thresholds, and
/// asking for more good runs than exist writes nothing (7 runs, of which the three fast
/// ones may also be rejected as outliers of a window that straddles the 2x change).
fn rolling_baselines_fill_the_needs_data_trials(
    db: &str,
    dir: &std::path::Path,
) -> Result<(), Failed> {
    let baselines = dir.join("baselines");
    let b = baselines.display().to_string();
    let args = |window: &'static str, min: &'static str| {
        vec![
            "recalibrate",
            "--from-history",
            "--history",
            db,
            "--hardware",
            "SIMx2",
            "--window",
            window,
            "--min-runs",
            min,
            "--baselines-dir",
            b.as_str(),
        ]
    };
    let none = dfx_perf_tool(&args("9", "9"))?;
    let none_out = output_text(&none);
    if none.status.code() != Some(0)
        || !none_out.contains("good run(s), at least 9 wanted (--min-runs)")
        || baselines.join("SIMx2.json").exists()
    {
        return Err(format!("min-runs 9 of 7 runs must write nothing: {none_out}").into());
    }
    let out = dfx_perf_tool(&args("3", "3"))?;
    let shown = output_text(&out);
    let stored = std::fs::read_to_string(baselines.join("SIMx2.json"))
        .map_err(|e| format!("no SIMx2.json written: {e}\n{shown}"))?;
    let doc: serde_json::Value = serde_json::from_str(&stored)?;
    for trial in TRIALS {
        let e2el = doc[trial]["median_e2el_ms"].as_f64();
        if e2el.is_none_or(|v| v <= 0.0) {
            return Err(format!("{trial}: no median_e2el_ms threshold: {stored}\n{shown}").into());
        }
    }
    let used = shown.lines().filter(|l| l.ends_with("  used")).count();
    if used != 2 * 3 || !shown.contains("needs data") {
        return Err(
            format!("3 runs used per trial and the needs-data line expected:\n{shown}").into(),
        );
    }
    Ok(())
}

/// The first run sees a fake `nvidia-smi` on PATH (the simulated run keeps its SIMx2
/// label; the GPU is only a fingerprint fact).
fn first_run_with_a_gpu(
    results: &std::path::Path,
    config: &str,
    args: &[&str],
) -> Result<Output, Failed> {
    let bin = results.join("fake-bin");
    std::fs::create_dir_all(&bin)?;
    let smi = bin.join("nvidia-smi");
    write_executable(
        &smi,
        "#!/bin/sh\necho 'NVIDIA H20, 560.35.03, 97871'\necho 'NVIDIA H20, 560.35.03, 97871'\n",
    )?;
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let results_arg = results.display().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--results-dir", &results_arg]);
    let (child, _unused) = perf_spawn(config, &all, &[("PATH", &path)])?;
    Ok(child.wait_with_output()?)
}

/// run.json of the first run holds the fake GPU, and every run the simulator's version.
fn fingerprint_was_recorded(results: &std::path::Path) -> Result<(), Failed> {
    let mut runs: Vec<std::path::PathBuf> = std::fs::read_dir(results)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("run.json").is_file() && !p.ends_with("latest"))
        .collect();
    runs.sort();
    let info = |p: &std::path::Path| -> Result<serde_json::Value, Failed> {
        Ok(serde_json::from_str(&std::fs::read_to_string(
            p.join("run.json"),
        )?)?)
    };
    let first = info(runs.first().ok_or("no run folders")?)?;
    let gpu = &first["gpu"];
    if gpu["name"] != "NVIDIA H20" || gpu["driver"] != "560.35.03" || gpu["count"] != 2 {
        return Err(format!("gpu facts of the first run: {gpu}").into());
    }
    for r in &runs {
        let v = info(r)?;
        if v["server_versions"]["dfx-perf-sim"].as_str().is_none() {
            return Err(
                format!("{}: server_versions {}", r.display(), v["server_versions"]).into(),
            );
        }
    }
    Ok(())
}
