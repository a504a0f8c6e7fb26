//! Upstream's result checks beyond completion (`run_benchmark.py` `assert_result`,
//! docs/research/upstream-2026.md §1.11), as trial failures with clear messages:
//!
//! - **fixed-length workloads**: for every stage `s` of `extra_body.sampling_params_list`
//!   with an integer `max_tokens > 0` and `min_tokens == max_tokens`, every one of the
//!   `num_prompts` entries of the result's `request_stage_metrics` must have
//!   `["<s>"]["num_tokens_out"] == max_tokens`;
//! - **TPOT** (`tpot_failures`): when the trial's resolved hardware bucket names
//!   `mean_tpot_ms` (a threshold, or `null`), the result needs `num_tpot_samples > 0` and
//!   a finite `mean_tpot_ms`;
//! - **OmniInteract** (entries with `dataset_name: "omniinteract"`): the result's
//!   `omniinteract.{total, success, failed}` must be `(num_prompts, num_prompts, 0)` and
//!   `omniinteract.artifacts_complete` `true`; then
//! - **OmniInteract accuracy** (entries with `omniinteract_evaluate`): `accuracy.status ==
//!   "ok"`, `accuracy.failed == 0`, `accuracy.evaluated ≥ 1`, a finite
//!   `accuracy.summary.IA_QTF1`, at least the entry's `omniinteract_min_ia_qtf1`;
//! - the **pooled IA-QTF1** over a test's subsets (`pooled_ia_qtf1`), checked against the
//!   case's `omniinteract_aggregate_min_ia_qtf1` by the runner once every subset ran;
//! - dfx-perf's **`--require-thresholds`** (`missing_thresholds`): a trial with no
//!   threshold for the run's hardware label fails instead of passing as "needs data".

use serde_json::Value;

use crate::baseline::Thresholds;
use crate::lenient::is_set;
use crate::plan::{BenchEntry, Dialect, Trial};
use crate::result::ResultDoc;

/// The fixed stages of an entry: `(stage index, expected num_tokens_out)`.
pub(crate) fn fixed_stages(entry: &BenchEntry) -> Vec<(usize, u64)> {
    let body = entry
        .raw
        .get("extra_body")
        .or_else(|| entry.raw.get("extra-body"));
    let Some(Value::Array(list)) = body.and_then(|b| b.get("sampling_params_list")) else {
        return Vec::new();
    };
    list.iter()
        .enumerate()
        .filter_map(|(s, p)| {
            let max = p.get("max_tokens")?.as_u64().filter(|m| *m > 0)?;
            (p.get("min_tokens")?.as_u64()? == max).then_some((s, max))
        })
        .collect()
}

/// Failures of the fixed-length check (empty when it passes or does not apply).
pub fn fixed_length_failures(entry: &BenchEntry, doc: &ResultDoc, num_prompts: u64) -> Vec<String> {
    let stages = fixed_stages(entry);
    if stages.is_empty() {
        return Vec::new();
    }
    let Some(Value::Array(reqs)) = doc.get("request_stage_metrics") else {
        return vec![format!(
            "Fixed stage workload: the result has no request_stage_metrics list (expected {num_prompts} requests)"
        )];
    };
    if reqs.len() as u64 != num_prompts {
        return vec![format!(
            "Fixed stage workload: request_stage_metrics has {} entries, expected {num_prompts}",
            reqs.len()
        )];
    }
    let mut out = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        for &(s, want) in &stages {
            let got = r.get(s.to_string()).and_then(|m| m.get("num_tokens_out"));
            if got.and_then(Value::as_u64) != Some(want) {
                out.push(format!(
                    "Fixed stage workload: request {i} stage {s} num_tokens_out {} != {want} (min_tokens == max_tokens)",
                    got.map_or("missing".to_string(), Value::to_string)
                ));
            }
        }
    }
    out.truncate(5);
    out
}

/// Failures of the TPOT rule (upstream `assert_result`): empty when `thresholds` (the
/// trial's bucket for the run's label) does not name `mean_tpot_ms` or the result has
/// measurable TPOT.
pub fn tpot_failures(thresholds: &Thresholds, doc: &ResultDoc) -> Vec<String> {
    const TPOT: &str = "mean_tpot_ms";
    let named = thresholds.items.iter().any(|t| t.metric == TPOT)
        || thresholds.skipped.iter().any(|m| m == TPOT);
    if !named {
        return Vec::new();
    }
    let samples = doc.get("num_tpot_samples");
    if samples.and_then(Value::as_u64).is_none_or(|n| n == 0) {
        return vec![format!(
            "TPOT baseline is configured, but no measurable TPOT samples were produced \
             (num_tpot_samples {}; expected an integer > 0)",
            show(samples)
        )];
    }
    let mean = doc.get(TPOT);
    if mean.and_then(Value::as_f64).is_none_or(|x| !x.is_finite()) {
        return vec![format!(
            "TPOT baseline is configured, but mean_tpot_ms is not finite ({})",
            show(mean)
        )];
    }
    Vec::new()
}

/// Failures of the OmniInteract checks of an `omniinteract` entry's result over
/// `num_prompts` requests: the summary gate first (upstream stops there), then the
/// accuracy check of entries with `omniinteract_evaluate`. Empty when they pass or do
/// not apply.
pub fn omniinteract_failures(entry: &BenchEntry, doc: &ResultDoc, num_prompts: u64) -> Vec<String> {
    if entry.dataset_name.as_deref() == Some("omniinteract") {
        let gate = omniinteract_gate(doc, num_prompts);
        if !gate.is_empty() {
            return gate;
        }
    }
    if !is_set(entry.raw.get("omniinteract_evaluate")) {
        return Vec::new();
    }
    let acc = doc.get("omniinteract").and_then(|o| o.get("accuracy"));
    let Some(acc) = acc.filter(|a| a.is_object()) else {
        return vec!["OmniInteract: the result has no omniinteract.accuracy object".into()];
    };
    let mut out = Vec::new();
    if acc.get("status").and_then(Value::as_str) != Some("ok") {
        out.push(format!(
            "OmniInteract accuracy status {} (expected \"ok\")",
            show(acc.get("status"))
        ));
    }
    if acc.get("failed").and_then(Value::as_u64) != Some(0) {
        out.push(format!(
            "OmniInteract accuracy failed {} (expected 0)",
            show(acc.get("failed"))
        ));
    }
    if acc
        .get("evaluated")
        .and_then(Value::as_u64)
        .is_none_or(|n| n < 1)
    {
        out.push(format!(
            "OmniInteract subset evaluated {} cases (skipped={})",
            show(acc.get("evaluated")),
            show(acc.get("skipped"))
        ));
    }
    match acc
        .get("summary")
        .and_then(|s| s.get("IA_QTF1"))
        .and_then(Value::as_f64)
    {
        Some(f) if f.is_finite() => {
            if let Some(min) = entry.gates.min_ia_qtf1
                && f < min
            {
                out.push(format!(
                    "OmniInteract IA_QTF1 {f} < omniinteract_min_ia_qtf1 {min}"
                ));
            }
        }
        _ => out.push("OmniInteract accuracy.summary.IA_QTF1 is missing or not finite".into()),
    }
    out
}

/// `omniinteract.{total, success, failed} == (n, n, 0)` and `artifacts_complete: true`.
fn omniinteract_gate(doc: &ResultDoc, n: u64) -> Vec<String> {
    let Some(summary) = doc.get("omniinteract").filter(|o| o.is_object()) else {
        return vec![
            "OmniInteract summary is missing (the result has no omniinteract object)".into(),
        ];
    };
    let count = |k: &str| summary.get(k).and_then(Value::as_f64);
    let mut out = Vec::new();
    let want = [n as f64, n as f64, 0.0];
    let got = [count("total"), count("success"), count("failed")];
    if got.iter().zip(want).any(|(g, w)| *g != Some(w)) {
        out.push(format!(
            "OmniInteract requests did not all succeed: total {}, success {}, failed {} \
             (expected {n}, {n}, 0)",
            show(summary.get("total")),
            show(summary.get("success")),
            show(summary.get("failed"))
        ));
    }
    if summary.get("artifacts_complete") != Some(&Value::Bool(true)) {
        out.push(format!(
            "OmniInteract artifacts are incomplete (artifacts_complete {}; expected true)",
            show(summary.get("artifacts_complete"))
        ));
    }
    out
}

/// `(TP, FP, FN)` of a subset's `accuracy.summary.Global_TP/FP/FN` (all finite).
pub(crate) fn global_counts(doc: &ResultDoc) -> Option<(f64, f64, f64)> {
    let s = doc.get("omniinteract")?.get("accuracy")?.get("summary")?;
    let g = |k: &str| s.get(k).and_then(Value::as_f64).filter(|x| x.is_finite());
    Some((g("Global_TP")?, g("Global_FP")?, g("Global_FN")?))
}

/// The pooled IA-QTF1 `2PR/(P+R)`, `P = TP/(TP+FP)`, `R = TP/(TP+FN)` (each 0 when its
/// denominator is 0; the result 0 when `P+R = 0`).
pub(crate) fn pooled_ia_qtf1(counts: &[(f64, f64, f64)]) -> f64 {
    let (tp, fp, fn_) = counts
        .iter()
        .fold((0.0, 0.0, 0.0), |a, c| (a.0 + c.0, a.1 + c.1, a.2 + c.2));
    let ratio = |n: f64, d: f64| if d == 0.0 { 0.0 } else { n / d };
    let (p, r) = (ratio(tp, tp + fp), ratio(tp, tp + fn_));
    if p + r == 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    }
}

/// `(TP, FP, FN)` of each evaluated subset so far, by (test name, subset).
pub type SubsetCounts = std::collections::BTreeMap<(String, String), (f64, f64, f64)>;

/// The pooled IA-QTF1 gate of a case with `omniinteract_aggregate_min_ia_qtf1`, as
/// upstream's runner applies it: a subset trial that passed its own OmniInteract checks
/// records its global counts (the latest result of a subset counts); once every subset of
/// the case has counts, the pooled IA-QTF1 must reach the floor. `Some(failure)` when it
/// does not, or when the counts are missing.
pub fn pooled_gate(
    counts: &mut SubsetCounts,
    test_name: &str,
    entry: &BenchEntry,
    doc: &ResultDoc,
) -> Option<String> {
    let min = entry.case.omniinteract_aggregate_min_ia_qtf1?;
    if !is_set(entry.raw.get("omniinteract_evaluate")) {
        return None;
    }
    let subset = entry.raw.get("omniinteract_subsets")?.as_str()?;
    let Some(c) = global_counts(doc) else {
        return Some(
            "OmniInteract accuracy summary Global_TP / Global_FP / Global_FN missing or not \
             finite (needed for the pooled IA-QTF1)"
                .into(),
        );
    };
    counts.insert((test_name.to_string(), subset.to_string()), c);
    let all = &entry.case.omniinteract_aggregate_subsets;
    let present: Vec<(f64, f64, f64)> = all
        .iter()
        .filter_map(|s| counts.get(&(test_name.to_string(), s.clone())).copied())
        .collect();
    if present.len() != all.len() {
        return None;
    }
    let pooled = pooled_ia_qtf1(&present);
    (pooled < min).then(|| {
        format!(
            "OmniInteract aggregate IA-QTF1 {pooled:.6} over {} subsets ({}) is below {min}",
            all.len(),
            all.join(", ")
        )
    })
}

fn show(v: Option<&Value>) -> String {
    v.map_or("missing".into(), Value::to_string)
}

/// Under `--require-thresholds`: why `trial` fails when it has no threshold for
/// `hardware`, or `None` when it has one. Contract entries check their API contract and
/// never carry thresholds, so they need none.
pub fn missing_thresholds(trial: &Trial, hardware: &str) -> Option<String> {
    if !trial.thresholds.items.is_empty() || trial.entry.dialect == Dialect::Contract {
        return None;
    }
    let why = trial
        .thresholds
        .note
        .as_deref()
        .map_or(String::new(), |n| format!(" ({n})"));
    Some(format!(
        "no threshold for hardware `{hardware}`{why}: --require-thresholds fails such a \
         trial; add a `{hardware}` bucket to the entry's baseline or a baselines/{hardware}.json \
         entry (dfx-perf recalibrate)"
    ))
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
