//! From a loaded plan to the entries of one config file and their steps, so trial names
//! map to list positions exactly as the loader assigned them.

use std::path::Path;

use dfx_core::plan::{Plan, StepKind};

use super::{EntryRef, StepRef, Sweep};

/// The entries of `file` in the plan (runnable trials only), in file order.
pub fn entries_from_plan(plan: &Plan, file: &Path) -> Vec<EntryRef> {
    let same = |p: &Path| match (p.canonicalize(), file.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => p == file,
    };
    let mut out: Vec<EntryRef> = Vec::new();
    for t in plan
        .trials
        .iter()
        .filter(|t| t.unsupported.is_none() && same(&t.source.file))
    {
        let step = StepRef {
            trial: t.name.clone(),
            sweep: match t.step.kind {
                StepKind::Concurrency { .. } => Sweep::Concurrency,
                StepKind::RequestRate { .. } => Sweep::RequestRate,
            },
            index: t.step.index,
            key: t.step.baseline_key(),
        };
        let pos = (t.source.case_index, t.source.raw_entry_index);
        match out
            .iter_mut()
            .find(|e| (e.case_index, e.raw_entry_index) == pos)
        {
            Some(e) => e.steps.push(step),
            None => out.push(EntryRef {
                test_name: t.test_name.clone(),
                case_index: pos.0,
                raw_entry_index: pos.1,
                steps: vec![step],
            }),
        }
    }
    out.sort_by_key(|e| (e.case_index, e.raw_entry_index));
    out
}
