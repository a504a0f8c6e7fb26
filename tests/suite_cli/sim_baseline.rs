//! Baselines against the simulator, end to end (issue 4, item 6): the shipped
//! `baselines/SIM.json` (recalibrated from a measured real-time simulator run, see
//! BENCHMARKS.md) holds for the real-time simulator under `--assert-baseline`, and the
//! same run fails with breach lines once the simulator is slowed down 1.5× (its
//! `slowdown` fault: every service time × 1.5). Runs the real suite, the real simulator
//! and the native bench; no fakes.

use libtest_mimic::Failed;

use crate::support::{Run, check, perf_unset};

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
    holds_then_catches(
        TTS_CONFIG,
        TRIAL,
        &["median_audio_ttfp_ms", "median_audio_rtf"],
    )
}

/// The same for the omni half: the Qwen3-Omni chat step served by the simulator's omni
/// profile and measured by the native chat-omni client.
pub fn shipped_sim_baselines_hold_for_omni_chat_then_catch_a_slowdown() -> Result<(), Failed> {
    holds_then_catches(OMNI_CONFIG, OMNI_TRIAL, &["mean_e2el_ms"])
}

fn holds_then_catches(config: &str, trial: &str, metrics: &[&str]) -> Result<(), Failed> {
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
    Ok(())
}
