//! Early detection end to end (issue #37): the c1 voice-design step at `--sim-speed 10`,
//! five real runs of the suite with `--history`, the last two with `--sim-faults
//! slowdown=1.3`. After the three clean nights `history check` raises nothing; after the
//! fourth it reports the shift as `suspected` (no regression, exit 0 under
//! `--fail-on-regression`); after the fifth as a regression at the fourth run (exit 3).
//! The noise is named as the history's run-to-run spread: the runs had no repeats.

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{dfx_perf_tool, fixture, output_text, perf_in};

const TRIAL: &str = "test_sim_design::voice_design_seed-tts-design::c1";

pub fn suspected_on_the_fourth_night_confirmed_on_the_fifth() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let db = tmp.path().join("history.sqlite").display().to_string();
    let config = fixture("sim_design.json");
    for night in 1..=5 {
        let mut args = vec![
            "--server",
            "sim",
            "--sim-speed",
            "10",
            "--bench",
            "native",
            "--hardware",
            "SIMx10",
            "--history",
            &db,
        ];
        if night >= 4 {
            args.extend(["--sim-faults", "slowdown=1.3"]);
        }
        let out = perf_in(tmp.path(), &config, &args)?;
        if out.status.code() != Some(0) {
            return Err(format!("night {night}: {}", output_text(&out)).into());
        }
        if night >= 3 {
            judge_night(&db, night)?;
        }
    }
    Ok(())
}

/// `history check --format json --fail-on-regression` after `night` runs.
fn judge_night(db: &str, night: usize) -> Result<(), Failed> {
    let args = [
        "history",
        "--history",
        db,
        "check",
        "--format",
        "json",
        "--fail-on-regression",
    ];
    let out = dfx_perf_tool(&args)?;
    let text = output_text(&out);
    let doc: Vec<Value> = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("night {night}: not JSON ({e}): {text}"))?;
    let hw = doc
        .first()
        .ok_or_else(|| format!("night {night}: no hardware: {text}"))?;
    let findings = hw["findings"].as_array().cloned().unwrap_or_default();
    let ours: Vec<&Value> = findings.iter().filter(|f| f["trial"] == TRIAL).collect();
    let (status, verdict) = match night {
        3 => {
            if !findings.is_empty() {
                return Err(format!("three clean nights raised something: {text}").into());
            }
            return expect_status(&out, 0, night, &text);
        }
        4 => (0, "suspected"),
        _ => (3, "regression"),
    };
    let [f] = ours.as_slice() else {
        return Err(format!("night {night}: one finding for {TRIAL} expected: {text}").into());
    };
    if f["verdict"] != verdict || f["run_index"] != 3 {
        return Err(format!("night {night}: {verdict} at run 4 expected: {text}").into());
    }
    let metrics = f["metrics"].as_array().cloned().unwrap_or_default();
    let ttfp = metrics
        .iter()
        .find(|m| m["metric"] == "median_audio_ttfp_ms")
        .ok_or_else(|| format!("night {night}: TTFP not among the metrics: {text}"))?;
    let worse = ttfp["worse_by"].as_f64().unwrap_or(0.0);
    if !(0.15..0.6).contains(&worse) || metrics.iter().any(|m| m["noise_source"] == "repeats") {
        return Err(format!("night {night}: TTFP ~ +30 %, noise not from repeats: {text}").into());
    }
    let other = findings
        .iter()
        .any(|f| f["verdict"] == "regression" && f["run_index"] != 3);
    if other || hw["regressions"] != u64::from(night == 5) {
        return Err(format!("night {night}: findings elsewhere: {text}").into());
    }
    expect_status(&out, status, night, &text)
}

fn expect_status(
    out: &std::process::Output,
    status: i32,
    night: usize,
    text: &str,
) -> Result<(), Failed> {
    if out.status.code() == Some(status) {
        return Ok(());
    }
    Err(format!("night {night}: exit status {status} expected: {text}").into())
}
