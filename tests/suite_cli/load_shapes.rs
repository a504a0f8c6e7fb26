//! Load shapes through the whole suite against the simulator (fixture
//! `tests/fixtures/suite_cli/sim_shapes.json`, native bench, SIMx5): the ramp trial passes
//! with its planned sends speeding up and its result naming the shape and the offered
//! and achieved rates; the gated burst fails on completion with the saturation message,
//! its refused arrivals in records.jsonl.

use std::path::Path;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{output_text, sim_native};

const RAMP: &str = "test_sim_shapes::ramp::qps8.0";
const GATE: &str = "test_sim_shapes::gate::qps1.0";
const SATURATED: &str =
    "load generator saturated: 5 arrivals found max_concurrency=1 requests in flight";

fn read_json(path: &Path) -> Result<Value, Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(serde_json::from_str(&text)?)
}

/// The trial folder whose result.json has `load_shape` = `shape`.
fn trial_with_shape(results: &Path, shape: &str) -> Result<std::path::PathBuf, Failed> {
    for e in std::fs::read_dir(results.join("latest/trials"))? {
        let dir = e?.path();
        if read_json(&dir.join("result.json"))?["load_shape"] == shape {
            return Ok(dir);
        }
    }
    Err(format!("no trial with load_shape {shape}").into())
}

fn records(dir: &Path) -> Result<Vec<Value>, Failed> {
    let text = std::fs::read_to_string(dir.join("records.jsonl"))?;
    let mut v: Vec<Value> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<Vec<Value>, _>>()?
        .into_iter()
        .filter(|r| r["warmup"] == false)
        .collect();
    v.sort_by_key(|r| r["index"].as_u64());
    Ok(v)
}

pub fn ramp_passes_and_the_gate_trips_against_the_simulator() -> Result<(), Failed> {
    let (out, results) = sim_native("sim_shapes.json", &[], &[])?;
    let text = output_text(&out);
    if matches!(out.status.code(), Some(0) | Some(2) | None) {
        return Err(format!("one failed trial expected:\n{text}").into());
    }
    let summary = read_json(&results.path().join("latest/summary.json"))?;
    let trials = summary["trials"].as_array().ok_or("no trials")?;
    let outcome = |name: &str| {
        trials
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| (t["outcome"].clone(), t["failures"].clone()))
    };
    let (ramp, _) = outcome(RAMP).ok_or_else(|| format!("no {RAMP}:\n{text}"))?;
    let (gate, failures) = outcome(GATE).ok_or_else(|| format!("no {GATE}:\n{text}"))?;
    let names_gate = failures[0]
        .as_str()
        .is_some_and(|f| f.contains("completed 1 of num_prompts 6") && f.contains(SATURATED));
    if ramp != "passed" || gate != "failed" || !names_gate {
        return Err(format!("ramp {ramp}, gate {gate} {failures}:\n{text}").into());
    }
    check_ramp(&trial_with_shape(results.path(), "ramp")?)?;
    check_gate(&trial_with_shape(results.path(), "burst")?)
}

fn check_ramp(dir: &Path) -> Result<(), Failed> {
    let doc = read_json(&dir.join("result.json"))?;
    let recs = records(dir)?;
    let planned: Vec<f64> = recs
        .iter()
        .filter_map(|r| r["planned_send_s"].as_f64())
        .collect();
    let actual: Vec<f64> = recs
        .iter()
        .filter_map(|r| r["actual_send_s"].as_f64())
        .collect();
    let offered = doc["offered_request_rate"].as_f64().unwrap_or(0.0);
    let achieved = doc["achieved_request_rate"].as_f64().unwrap_or(0.0);
    let ok = planned.len() == 8
        && actual.len() == 8
        && planned[1] - planned[0] > 2.0 * (planned[7] - planned[6])
        && actual[1] - actual[0] > 1.5 * (actual[7] - actual[6])
        && (offered - 7.0 / (planned[7] - planned[0])).abs() < 1e-6
        && (achieved / offered - 1.0).abs() < 0.3
        && doc["saturated_requests"] == 0
        && doc["completed"] == 8;
    if !ok {
        return Err(format!("ramp: planned {planned:?} actual {actual:?}\n{doc:#}").into());
    }
    Ok(())
}

fn check_gate(dir: &Path) -> Result<(), Failed> {
    let doc = read_json(&dir.join("result.json"))?;
    let recs = records(dir)?;
    let refused = recs.iter().filter(|r| r["saturated"] == true).count();
    let ok = refused == 5
        && doc["saturated_requests"] == 5
        && doc["max_concurrency"] == 1
        && doc["error_counts"]["saturated"] == 5
        && doc["offered_request_rate"].is_null()
        && recs
            .iter()
            .all(|r| r["planned_send_s"].as_f64() == Some(0.0));
    if !ok {
        return Err(format!("gate: {refused} refused\n{doc:#}").into());
    }
    Ok(())
}
