//! Baselines against the simulator, end to end (issue 4, item 6): the shipped
//! `baselines/SIM.json` (recalibrated from a measured real-time simulator run, see
//! BENCHMARKS.md) holds for the real-time simulator under `--assert-baseline`, and the
//! same run fails with breach lines once the simulator is slowed down 1.5× (its
//! `slowdown` fault: every service time × 1.5). `dfx-perf compare` of the two names the
//! fault above its verdicts, and the failed run's report links its files. Runs the real
//! suite, the real simulator and the native bench; no fakes.

use libtest_mimic::Failed;

use crate::support::{Run, check, dfx_perf_tool, output_text, perf_unset};

/// One latency step of the shipped TTS config (20 prompts at c=1, about 10 s).
const TRIAL: &str = "test_qwen3_tts_customvoice::default_voice_latency_seed-tts-text::c1";
const TTS_CONFIG: &str = "perf-configs/test_tts.json";
/// The Qwen3-Omni chat step of the shipped omni config (4 text-only prompts at c=1).
const OMNI_TRIAL: &str = "test_qwen3_omni_chunk_cuda::random::c1";
const OMNI_CONFIG: &str = "perf-configs/test_qwen3_omni_async_chunk.json";

fn run_sim(config: &str, trial: &str, faults: Option<&str>) -> Result<Run, Failed> {
    let mut args = vec![
        "--server",
        "sim",
        "--bench",
        "native",
        "--assert-baseline",
        "--exact",
        trial,
    ];
    if let Some(f) = faults {
        args.extend(["--sim-faults", f]);
    }
    // The shipped config and the shipped baselines/SIM.json; the label comes from the
    // simulator (`SIM`), not from a flag.
    perf_unset(
        config,
        &args,
        &[],
        &["DFX_HARDWARE", "DFX_SERVER", "DFX_BENCH"],
    )
}

/// Thresholds of the trial as the run resolved them (`result.json`'s `baseline` bucket of
/// the run's label, which `baselines/<LABEL>.json` fills).
fn thresholds(run: &Run, trial: &str) -> Result<serde_json::Value, Failed> {
    let dir = run
        .run_dir()?
        .join("trials")
        .join(dfx_core::fsutil::sanitize_component(trial));
    let text = std::fs::read_to_string(dir.join("result.json")).map_err(|e| e.to_string())?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let label = doc["Hardware"].as_str().unwrap_or_default();
    Ok(doc["baseline"][label].clone())
}

pub fn shipped_sim_baselines_hold_then_catch_a_slowdown() -> Result<(), Failed> {
    let (ok, slow) = holds_then_catches(
        TTS_CONFIG,
        TRIAL,
        &["median_audio_ttfp_ms", "median_audio_rtf"],
    )?;
    compare_names_the_faults(&ok, &slow)?;
    failed_report_links_its_files(&slow)
}

/// `dfx-perf compare` of the two runs says, above its verdicts, that side B ran with
/// `--sim-faults` (issue #37).
fn compare_names_the_faults(ok: &Run, slow: &Run) -> Result<(), Failed> {
    let (a, b) = (ok.run_dir()?, slow.run_dir()?);
    let tmp = tempfile::tempdir()?;
    let out = tmp.path().join("cmp");
    let (a, b, o) = (
        a.display().to_string(),
        b.display().to_string(),
        out.display().to_string(),
    );
    let cmp = dfx_perf_tool(&["compare", &a, &b, "--out", &o])?;
    let text = String::from_utf8_lossy(&cmp.stdout).into_owned();
    let listed = text.find("flag --sim-faults: A (not set) | B slowdown=1.5");
    let table = text.find("\ntrial ");
    if cmp.status.code() != Some(0) || listed.is_none() || listed > table {
        return Err(format!(
            "compare does not name the faults first:\n{}",
            output_text(&cmp)
        )
        .into());
    }
    let md = std::fs::read_to_string(out.join("compare.md"))?;
    if !md.contains("flag --sim-faults") {
        return Err(format!("compare.md:\n{md}").into());
    }
    Ok(())
}

/// The failed run's report.html links files that exist (relative to the run folder),
/// among them the bench log and the server log, and quotes the bench log inline.
fn failed_report_links_its_files(slow: &Run) -> Result<(), Failed> {
    let dir = slow.run_dir()?;
    let html = std::fs::read_to_string(dir.join("report.html"))?;
    let hrefs: Vec<&str> = html
        .split("href=\"")
        .skip(1)
        .filter_map(|p| p.split('"').next())
        .collect();
    for h in &hrefs {
        if !dir.join(h).is_file() {
            return Err(format!(
                "report.html links {h}, which does not exist in {}",
                dir.display()
            )
            .into());
        }
    }
    for want in [
        "/bench.log",
        "/server.log",
        "/records.jsonl",
        "/verdict.json",
    ] {
        if !hrefs.iter().any(|h| h.ends_with(want)) {
            return Err(format!("report.html has no link to a {want}: {hrefs:?}").into());
        }
    }
    if !html.contains("<pre class=\"tail\">") || !html.contains("<th>p99</th>") {
        return Err("report.html quotes no log tail or has no p99 column".into());
    }
    Ok(())
}

/// The same for the omni half: the Qwen3-Omni chat step served by the simulator's omni
/// profile and measured by the native chat-omni client.
pub fn shipped_sim_baselines_hold_for_omni_chat_then_catch_a_slowdown() -> Result<(), Failed> {
    holds_then_catches(OMNI_CONFIG, OMNI_TRIAL, &["mean_e2el_ms"]).map(|_| ())
}

/// The passing run and the failing (slowed down) one.
fn holds_then_catches(config: &str, trial: &str, metrics: &[&str]) -> Result<(Run, Run), Failed> {
    let ok = run_sim(config, trial, None)?;
    check(
        ok.code() == Some(0),
        "real-time simulator within baselines/SIM.json: exit 0",
        &ok,
    )?;
    check(
        ok.summary()?["hardware"] == "SIM",
        "hardware label SIM",
        &ok,
    )?;
    let baseline = thresholds(&ok, trial)?;
    for metric in metrics {
        check(
            baseline[metric].as_f64().is_some_and(|v| v > 0.0),
            &format!("baselines/SIM.json has a {metric} threshold for {trial}"),
            &ok,
        )?;
    }

    let slow = run_sim(config, trial, Some("slowdown=1.5"))?;
    check(
        slow.code() == Some(101),
        "1.5× slower simulator: the trial fails",
        &slow,
    )?;
    let err = slow.stderr() + &slow.stdout();
    for metric in metrics {
        let line = err
            .lines()
            .find(|l| l.trim_start().starts_with(metric) && l.contains(" > "));
        check(
            line.is_some_and(|l| l.contains("(+")),
            &format!("a breach line `{metric} <value> > <threshold> (+x %)`"),
            &slow,
        )?;
    }
    Ok((ok, slow))
}
