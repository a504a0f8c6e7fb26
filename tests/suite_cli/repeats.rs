//! Repeats end to end: one step run three times on one simulator, each repeat with its
//! own seed (so its own prompts, audio lengths and timings), gives every repeat's
//! folder and result, a non-zero spread, and a confidence interval around the median
//! the verdict judged.

use std::path::PathBuf;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{check_schemas, output_text, sim_native};

fn read(path: &std::path::Path) -> Result<Value, Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(serde_json::from_str(&text)?)
}

pub fn repeats_give_a_spread_and_an_interval_around_the_median() -> Result<(), Failed> {
    let (out, results) = sim_native("sim_repeats.json", &["--assert-baseline"], &[])?;
    if out.status.code() != Some(0) {
        return Err(format!("suite failed: {}", output_text(&out)).into());
    }
    let trials = results.path().join("latest/trials");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&trials)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    let [dir] = dirs.as_slice() else {
        return Err(format!("one trial folder expected: {dirs:?}").into());
    };
    let doc = read(&dir.join("result.json"))?;
    let mut texts = Vec::new();
    for k in 1..=3 {
        let r = read(&dir.join(format!("repeat-{k}/result.json")))?;
        let records = std::fs::read_to_string(dir.join(format!("repeat-{k}/records.jsonl")))?;
        if r["completed"] != 4 || records.is_empty() || r["repeat"]["seed"] != 10 + k {
            return Err(format!("repeat {k}: {r}").into());
        }
        texts.push(records);
    }
    if texts[0] == texts[1] || texts[1] == texts[2] {
        return Err("the repeats drew the same requests".into());
    }
    let stats = &doc["repeats"]["stats"]["mean_e2el_ms"];
    let f = |k: &str| stats[k].as_f64().unwrap_or(f64::NAN);
    let (median, lo, hi) = (f("median"), f("ci95_low"), f("ci95_high"));
    let ok = stats["values"].as_array().map(Vec::len) == Some(3)
        && f("std") > 0.0
        && lo <= median
        && median <= hi
        && lo < hi
        && doc["mean_e2el_ms"].as_f64() == Some(median)
        && doc["repeats"]["ci_method"]
            .as_str()
            .is_some_and(|m| m.contains("bootstrap"));
    if !ok {
        return Err(format!("repeat statistics: {}", doc["repeats"]).into());
    }
    let summary = read(&results.path().join("latest/summary.json"))?;
    let entry = &summary["trials"][0];
    if entry["repeats"]["stats"]["mean_e2el_ms"]["median"].as_f64() != Some(median) {
        return Err(format!("summary: {entry}").into());
    }
    check_schemas(&results.path().join("latest"))
}
