//! The contract runner (`"benchmark_runner": "contract"`) against the real simulator, with
//! the shipped config `perf-configs/test_qwen3_tts_contract.json`: every scenario passes
//! (the CustomVoice server skips the reference-audio ones with a reason); under the
//! simulator fault `broken-error-envelope` the trial fails naming the scenarios; the
//! external bench refuses the trials with its reason.

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{Run, check, perf_unset};

const CONFIG: &str = "perf-configs/test_qwen3_tts_contract.json";
const BASE: &str = "test_qwen3_tts_base_contract::all::contract";
const CUSTOM: &str = "test_qwen3_tts_customvoice_contract::all::contract";

fn run(extra: &[&str]) -> Result<Run, Failed> {
    let mut args = vec!["--server", "sim", "--hardware", "SIM"];
    if !extra.contains(&"--bench") {
        args.extend_from_slice(&["--bench", "native"]);
    }
    args.extend_from_slice(extra);
    perf_unset(
        CONFIG,
        &args,
        &[],
        &["DFX_HARDWARE", "DFX_SERVER", "DFX_BENCH"],
    )
}

fn result(run: &Run, trial: &str) -> Result<Value, Failed> {
    let dir = run
        .run_dir()?
        .join("trials")
        .join(dfx_core::fsutil::sanitize_component(trial));
    let text = std::fs::read_to_string(dir.join("result.json")).map_err(|e| e.to_string())?;
    Ok(serde_json::from_str(&text).map_err(|e| e.to_string())?)
}

fn scenarios(doc: &Value) -> Vec<Value> {
    doc["contract"].as_array().cloned().unwrap_or_default()
}

pub fn contract_scenarios_pass_against_the_simulator() -> Result<(), Failed> {
    let ok = run(&[])?;
    check(ok.code() == Some(0), "exit status 0: both trials pass", &ok)?;
    let base = result(&ok, BASE)?;
    let n = dfx_core::contract::SCENARIOS.len();
    check(
        base["num_prompts"] == n && base["completed"] == n && base["skipped"] == 0,
        "the Base server runs every scenario and passes it",
        &ok,
    )?;
    check(
        scenarios(&base)
            .iter()
            .all(|s| s["passed"] == true && s["got"].is_string()),
        "every scenario line passed, with what it got",
        &ok,
    )?;
    let custom = result(&ok, CUSTOM)?;
    let skipped = scenarios(&custom)
        .iter()
        .filter(|s| s["skipped"].is_string())
        .count();
    check(
        skipped == 3 && custom["skipped"] == 3 && custom["completed"] == n,
        "the CustomVoice server skips the three reference-audio scenarios",
        &ok,
    )
}

pub fn contract_fails_naming_the_scenario_under_a_broken_envelope() -> Result<(), Failed> {
    let bad = run(&["--sim-faults", "broken-error-envelope", "--exact", BASE])?;
    check(bad.code() == Some(101), "the trial fails", &bad)?;
    let text = bad.both();
    check(
        text.contains("contract scenario malformed_json")
            && text.contains("the body has no `error` object"),
        "the failure names the scenario and what differed",
        &bad,
    )?;
    let doc = result(&bad, BASE)?;
    let failed: Vec<String> = scenarios(&doc)
        .iter()
        .filter(|s| s["passed"] == false)
        .filter_map(|s| s["scenario"].as_str().map(String::from))
        .collect();
    check(
        failed.contains(&"ref_audio_file_url".to_string())
            && !failed.contains(&"min_input".to_string())
            && !failed.contains(&"voice_lifecycle".to_string())
            && doc["failed"] == failed.len(),
        "the error-envelope scenarios fail, the others still pass",
        &bad,
    )
}

pub fn contract_listing_names_the_runner_and_the_external_reason() -> Result<(), Failed> {
    let list = |bench: &str| run(&["--list", "--verbose", "--bench", bench]);
    let native = list("native")?;
    check(
        native.code() == Some(0)
            && native.stdout().matches("runner     contract").count() == 2
            && !native.stdout().contains("ignored"),
        "--bench native: two contract trials to run",
        &native,
    )?;
    let ext = list("vllm")?;
    check(
        ext.stdout().matches("API contract").count() == 2,
        "--bench vllm: both ignored with the external bench's reason",
        &ext,
    )
}
