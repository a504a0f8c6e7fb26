//! Upstream's native-duplex runner entries (`"benchmark_runner": "native-duplex"`), run
//! natively against the 5× simulator in the shape of the shipped reference config
//! (`tests/fixtures/suite_cli/sim_native_duplex.json`): both entries pass their SIM
//! buckets (thresholds from `regression_tolerance`), with upstream's keys and per-repeat
//! measurements; a 10× slowdown breaches `median_ttfp_ms` under `--assert-baseline`.

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{Run, check, fixture, perf_unset};

const C1: &str = "minicpmo_native_kv_append::c1::c1";
const C2: &str = "minicpmo_native_kv_append::c2::c2";

fn run(extra: &[&str]) -> Result<Run, Failed> {
    let mut args = vec![
        "--server",
        "sim",
        "--sim-speed",
        "5",
        "--bench",
        "native",
        "--assert-baseline",
    ];
    args.extend_from_slice(extra);
    perf_unset(
        &fixture("sim_native_duplex.json"),
        &args,
        &[],
        &["DFX_HARDWARE", "DFX_SERVER", "DFX_BENCH"],
    )
}

fn json(run: &Run, trial: &str, file: &str) -> Result<Value, Failed> {
    let dir = run
        .run_dir()?
        .join("trials")
        .join(dfx_core::fsutil::sanitize_component(trial));
    let text = std::fs::read_to_string(dir.join(file)).map_err(|e| e.to_string())?;
    Ok(serde_json::from_str(&text).map_err(|e| e.to_string())?)
}

fn turn_lines(run: &Run, trial: &str) -> Result<Vec<Value>, Failed> {
    let dir = run
        .run_dir()?
        .join("trials")
        .join(dfx_core::fsutil::sanitize_component(trial));
    let text = std::fs::read_to_string(dir.join("records.jsonl")).map_err(|e| e.to_string())?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "turn")
        .collect())
}

pub fn native_duplex_entries_pass_against_the_simulator() -> Result<(), Failed> {
    let ok = run(&[])?;
    check(ok.code() == Some(0), "exit status 0", &ok)?;
    let s = ok.summary()?;
    check(
        s["hardware"] == "SIM",
        "hardware label SIM (time-lapsed: the real-time scale)",
        &ok,
    )?;
    let trials = s["trials"].as_array().cloned().unwrap_or_default();
    check(
        trials.len() == 2
            && trials
                .iter()
                .all(|t| t["outcome"] == "passed" && t["bench"] == "native"),
        "both native-duplex trials ran natively and passed",
        &ok,
    )?;
    // c1: 1 session × 2 turns, 1 warmup + 2 repeats; c2: 2 × 2, 2 + 3.
    for (trial, repeats, lines) in [(C1, 2, 6), (C2, 3, 20)] {
        let doc = json(&ok, trial, "result.json")?;
        let threshold = |m: &str| {
            doc["thresholds"].as_array().and_then(|l| {
                l.iter()
                    .find(|t| t["metric"] == m)
                    .and_then(|t| t["value"].as_f64())
            })
        };
        check(
            threshold("median_ttfp_ms") == Some(240.0)
                && threshold("median_responses_per_s").is_some_and(|v| v > 0.0),
            &format!("{trial}: SIM thresholds with regression_tolerance applied"),
            &ok,
        )?;
        let b = &doc["baseline"];
        check(
            b["SIM"]["median_ttfp_ms"] == 200.0
                && b["SIM"]["regression_tolerance"] == 0.2
                && b["H200"]["source"] == "H200-v028-baseline-native-v2-20260906",
            &format!("{trial}: result baseline holds every bucket as written (upstream's shape)"),
            &ok,
        )?;
        check(
            doc["workload"] == "native-duplex-audio"
                && doc["measurements"].as_array().map(Vec::len) == Some(repeats)
                && doc["median_responses_per_s"]
                    .as_f64()
                    .is_some_and(|v| v > 0.0)
                && doc["median_ttfp_ms"].as_f64().is_some_and(|v| v > 0.0)
                && doc["median_audio_seconds_per_s"]
                    .as_f64()
                    .is_some_and(|v| v > 0.0),
            &format!("{trial}: upstream's keys, {repeats} measured repeats kept"),
            &ok,
        )?;
        let turns = turn_lines(&ok, trial)?;
        check(
            turns.len() == lines && turns.iter().all(|t| t["ok"] == true),
            &format!("{trial}: {lines} turn records (warmups included)"),
            &ok,
        )?;
        let all = json(&ok, trial, "measurements.json")?;
        check(
            all.as_array()
                .is_some_and(|a| a.iter().any(|m| m["warmup"] == true)),
            &format!("{trial}: measurements.json keeps the warmups"),
            &ok,
        )?;
    }
    Ok(())
}

pub fn native_duplex_slowdown_breaches_median_ttfp() -> Result<(), Failed> {
    let slow = run(&["--sim-faults", "slowdown=10", "--exact", C2])?;
    check(
        slow.code() == Some(101),
        "10× slower simulator: the trial fails",
        &slow,
    )?;
    let err = slow.stderr() + &slow.stdout();
    let line = err
        .lines()
        .find(|l| l.trim_start().starts_with("median_ttfp_ms") && l.contains(" > "));
    check(
        line.is_some_and(|l| l.contains("(+")),
        "a breach line `median_ttfp_ms <value> > 240 (+x %)`",
        &slow,
    )?;
    let doc = json(&slow, C2, "result.json")?;
    check(
        doc["completed"] == 4,
        "every turn still completed: a latency regression, not a failure",
        &slow,
    )
}

/// `--list --verbose` of the shipped reference config: the native bench runs the trials
/// (no ignore reason); with the external bench forced they are ignored with its reason.
pub fn native_duplex_listing_names_the_bench() -> Result<(), Failed> {
    let config = "tests/reference/upstream/2026/perf/tests/test_minicpmo_4_5_native_duplex.json";
    let list = |bench: &str| {
        perf_unset(
            config,
            &[
                "--list",
                "--verbose",
                "--server",
                "sim",
                "--bench",
                bench,
                "--hardware",
                "H200",
            ],
            &[],
            &["DFX_HARDWARE", "DFX_SERVER", "DFX_BENCH"],
        )
    };
    let native = list("native")?;
    let out = native.stdout();
    check(
        native.code() == Some(0)
            && out.matches("runner     native-duplex").count() == 3
            && out.matches("bench      native").count() == 3
            && !out.contains("ignored"),
        "--bench native: three native-duplex trials to run, none ignored",
        &native,
    )?;
    let ext = list("vllm")?;
    check(
        ext.stdout()
            .matches("run_native_duplex_benchmark.py")
            .count()
            == 3,
        "--bench vllm: each trial ignored with the external bench's reason",
        &ext,
    )
}
