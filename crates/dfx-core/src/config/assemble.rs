//! Validated cases → trials: cases sharing a `test_name` are one test (entries
//! concatenated, indices and suffixes assigned across them), then the duplicate-name check,
//! the baseline store, the `--mark` selection and the load warnings.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::case::CaseDraft;
use super::marks::MarkExpr;
use super::naming::{dedup_suffixes, entry_suffix, trial_name};
use crate::baseline::{Store, Thresholds};
use crate::diag::{ConfigError, Ctx};
use crate::plan::{BenchEntry, SourceRef, Trial};

/// Builds every trial in plan order (tests in order of their first case).
pub(crate) fn build_trials(cases: &[CaseDraft], hardware: &str) -> Vec<Trial> {
    let mut order: Vec<&str> = Vec::new();
    for c in cases {
        if let Some(t) = c.test_name.as_deref()
            && !order.contains(&t)
        {
            order.push(t);
        }
    }
    let mut trials = Vec::new();
    for test in order {
        let members: Vec<&CaseDraft> = cases
            .iter()
            .filter(|c| c.test_name.as_deref() == Some(test))
            .collect();
        let drafts: Vec<(&CaseDraft, &super::entry_parts::EntryDraft)> = members
            .iter()
            .flat_map(|c| c.entries.iter().map(move |e| (*c, e)))
            .collect();
        let raw: Vec<String> = drafts
            .iter()
            .enumerate()
            .map(|(i, (_, d))| {
                let parts: Vec<Option<&str>> =
                    d.suffix_parts.iter().map(Option::as_deref).collect();
                entry_suffix(d.entry.name.as_deref(), &parts, i)
            })
            .collect();
        for (i, ((case, draft), suffix)) in drafts.iter().zip(dedup_suffixes(&raw)).enumerate() {
            let Some(server) = case.server.clone() else {
                continue;
            };
            let entry = Arc::new(BenchEntry {
                index: i,
                suffix: suffix.clone(),
                ..draft.entry.clone()
            });
            for step in &draft.steps {
                let thresholds = match &draft.baseline {
                    Some(b) => b.resolve(step, hardware),
                    None => Thresholds::default(),
                };
                trials.push(Trial {
                    name: trial_name(test, &suffix, &step.label),
                    test_name: test.to_string(),
                    marks: case.marks.tags.clone(),
                    hardware_marks: case.marks.hardware.clone(),
                    source: SourceRef {
                        file: case.file.clone(),
                        case_index: case.case_index,
                        raw_entry_index: draft.raw_index,
                    },
                    server: server.clone(),
                    entry: entry.clone(),
                    step: step.clone(),
                    thresholds,
                    // Diffusion entries run when a diffusion bench is configured; the
                    // harness gives `DIFFUSION_UNSUPPORTED` as the reason otherwise.
                    // The benches decide for every dialect: the native one runs
                    // native-duplex entries and soaks openai-audio-speech.
                    unsupported: None,
                });
            }
        }
    }
    trials
}

/// One error per trial whose name an earlier trial already has.
pub(crate) fn duplicate_names(trials: &[Trial]) -> Vec<ConfigError> {
    let mut seen: HashMap<&str, &SourceRef> = HashMap::new();
    let mut errs = Vec::new();
    for t in trials {
        match seen.get(t.name.as_str()) {
            Some(first) => errs.push(
                Ctx::new(&t.source.file)
                    .test(Some(&t.test_name))
                    .entry(t.source.raw_entry_index)
                    .err(
                        "name",
                        format!(
                            "duplicate trial name `{}` (also produced by {} case [{}] benchmark_params[{}])",
                            t.name,
                            first.file.display(),
                            first.case_index,
                            first.raw_entry_index
                        ),
                        "entries of one test with distinct `name` values (or distinct task/eval_phase/dataset_name)",
                    ),
            ),
            None => {
                seen.insert(&t.name, &t.source);
            }
        }
    }
    errs
}

/// Applies the store to every trial; warns about store entries of loaded tests that match
/// no trial (renamed or removed). Entries of tests not loaded at all are ignored.
/// The store's numbers also fill the run's own bucket of the result's `baseline`.
pub(crate) fn apply_store(
    store: &Store,
    trials: &mut [Trial],
    hardware: &str,
    warnings: &mut Vec<String>,
) {
    for t in trials.iter_mut() {
        if store.apply(&t.name, &mut t.thresholds)
            && let Some(values) = store.entries.get(&t.name)
        {
            crate::baseline::result_form::merge_store(&mut t.thresholds.buckets, hardware, values);
        }
    }
    let names: BTreeSet<&str> = trials.iter().map(|t| t.name.as_str()).collect();
    let tests: BTreeSet<&str> = trials.iter().map(|t| t.test_name.as_str()).collect();
    for key in store.entries.keys() {
        let of_loaded_test = tests.iter().any(|t| key.starts_with(&format!("{t}::")));
        if of_loaded_test && !names.contains(key.as_str()) {
            warnings.push(format!(
                "{}: entry `{key}` matches no trial of the loaded configs (renamed or removed?); ignored",
                store.file.display()
            ));
        }
    }
}

/// One warning per entry whose trials have no thresholds for this hardware although the
/// entry has a baseline.
pub(crate) fn note_warnings(trials: &[Trial], warnings: &mut Vec<String>) {
    let mut done: BTreeSet<(String, usize, usize)> = BTreeSet::new();
    for t in trials.iter().filter(|t| t.unsupported.is_none()) {
        let Some(note) = &t.thresholds.note else {
            continue;
        };
        let key = (
            t.source.file.display().to_string(),
            t.source.case_index,
            t.source.raw_entry_index,
        );
        if done.insert(key) {
            let ctx = Ctx::new(&t.source.file)
                .test(Some(&t.test_name))
                .entry(t.source.raw_entry_index);
            warnings.push(ctx.err("baseline", note.clone(), "").to_string());
        }
    }
}

/// Keeps the trials whose case tags match `--mark`. The expression must parse and may only
/// name tags some loaded case has; otherwise an error is pushed and nothing is removed.
pub(crate) fn select_by_mark(
    expr: &str,
    cases: &[CaseDraft],
    trials: &mut Vec<Trial>,
    errs: &mut Vec<ConfigError>,
) {
    let syntax = "tag names with and / or / not and parentheses, e.g. `tts and not slow`";
    let parsed = match MarkExpr::parse(expr) {
        Ok(p) => p,
        Err(e) => {
            errs.push(
                ConfigError::flag("--mark", format!("invalid expression `{expr}`: {e}"))
                    .with_accepted(syntax),
            );
            return;
        }
    };
    let known: BTreeSet<&str> = cases
        .iter()
        .flat_map(|c| c.marks.tags.iter().map(String::as_str))
        .collect();
    let mut unknown: Vec<&str> = Vec::new();
    for t in parsed.tags() {
        if !known.contains(t) && !unknown.contains(&t) {
            unknown.push(t);
        }
    }
    if !unknown.is_empty() {
        let list: Vec<String> = unknown.iter().map(|t| format!("`{t}`")).collect();
        let known: Vec<&str> = known.into_iter().collect();
        errs.push(
            ConfigError::flag(
                "--mark",
                format!(
                    "unknown tag(s) {} in `{expr}`: no loaded case has them",
                    list.join(", ")
                ),
            )
            .with_accepted(format!(
                "known tags: {}",
                if known.is_empty() {
                    "(none)".into()
                } else {
                    known.join(", ")
                }
            )),
        );
        return;
    }
    trials.retain(|t| parsed.matches(&t.marks));
}
