//! Whether two sets of runs may be compared at all: same hardware, same config files,
//! same trials. Each refusal says what differs and which flag overrides it.

use std::collections::BTreeSet;

use crate::ReportError;
use crate::run::{Outcome, Run};

/// Trial names a run measured (ignored trials left out).
pub(super) fn trial_set(run: &Run) -> BTreeSet<String> {
    run.trials
        .iter()
        .filter(|t| t.outcome != Outcome::Ignored)
        .map(|t| t.name.clone())
        .collect()
}

fn run_list(runs: &[&Run], f: impl Fn(&Run) -> String) -> String {
    runs.iter()
        .map(|r| format!("{} ({})", r.run_id, f(r)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Refuses runs of different hardware labels (or simulator speeds).
pub(super) fn same_hardware(a: &[Run], b: &[Run], allow: bool) -> Result<Vec<String>, ReportError> {
    let all: Vec<&Run> = a.iter().chain(b).collect();
    let labels: BTreeSet<String> = all.iter().map(|r| r.hardware_identity()).collect();
    if labels.len() <= 1 {
        return Ok(Vec::new());
    }
    let detail = format!(
        "A: {}; B: {}",
        run_list(&a.iter().collect::<Vec<_>>(), Run::hardware_identity),
        run_list(&b.iter().collect::<Vec<_>>(), Run::hardware_identity)
    );
    if allow {
        return Ok(vec![format!(
            "runs of different hardware compared as asked (--allow-different-hardware): {detail}"
        )]);
    }
    Err(ReportError::Refused(format!(
        "refusing to compare runs of different hardware: {detail}. Timings from different \
         hardware (or simulator speeds) differ for reasons unrelated to the change under test; \
         pass --allow-different-hardware to compare anyway"
    )))
}

/// Refuses runs whose config files or trial sets differ; with `allow`, returns notes
/// and the common trials are compared.
pub(super) fn same_configs(a: &[Run], b: &[Run], allow: bool) -> Result<Vec<String>, ReportError> {
    let mut problems = Vec::new();
    let all: Vec<&Run> = a.iter().chain(b).collect();
    let first = all[0];
    let configs = first.info.config_identities();
    for r in &all[1..] {
        let other = r.info.config_identities();
        if other != configs {
            problems.push(format!(
                "config files differ: {} has [{}], {} has [{}]",
                first.run_id,
                configs.join(", "),
                r.run_id,
                other.join(", ")
            ));
        }
    }
    let bench = |r: &Run| r.info.bench_tool.clone().unwrap_or_else(|| "?".into());
    for r in &all[1..] {
        if r.info.bench_tool != first.info.bench_tool {
            problems.push(format!(
                "bench tools differ: {} used {}, {} used {}",
                first.run_id,
                bench(first),
                r.run_id,
                bench(r)
            ));
        }
    }
    let trials = trial_set(first);
    for r in &all[1..] {
        let other = trial_set(r);
        if other != trials {
            let only_first: Vec<&String> = trials.difference(&other).collect();
            let only_other: Vec<&String> = other.difference(&trials).collect();
            problems.push(format!(
                "trial sets differ: {} trial(s) only in {}{}, {} only in {}{}",
                only_first.len(),
                first.run_id,
                examples(&only_first),
                only_other.len(),
                r.run_id,
                examples(&only_other)
            ));
        }
    }
    if problems.is_empty() {
        return Ok(Vec::new());
    }
    if allow {
        return Ok(problems
            .into_iter()
            .map(|p| {
                format!("{p} (compared the common trials as asked: --allow-different-configs)")
            })
            .collect());
    }
    Err(ReportError::Refused(format!(
        "refusing to compare runs of different configs: {}. Different configs or trial \
         selections measure different things; pass --allow-different-configs to compare the \
         trials the runs have in common",
        problems.join("; ")
    )))
}

fn examples(names: &[&String]) -> String {
    if names.is_empty() {
        return String::new();
    }
    let shown: Vec<&str> = names.iter().take(3).map(|s| s.as_str()).collect();
    let more = if names.len() > 3 { ", …" } else { "" };
    format!(" (e.g. {}{more})", shown.join(", "))
}
