//! One bench run of a trial, or its repeats (`repeats`, `--repeats`): each repeat runs the
//! whole step on the same server into `repeat-<k>/` of the trial folder with seed
//! `seed + k − 1`, and the trial's result is [`dfx_core::repeats::combine`] of theirs.

use std::borrow::Cow;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;

use dfx_core::bench::{Bench, BenchContext, BenchOutcome};
use dfx_core::fsutil::write_json_atomic;
use dfx_core::plan::Trial;
use dfx_core::repeats::{RepeatRun, combine};
use dfx_core::result::{ResultDoc, template_fallback};
use serde_json::json;

use super::failure::{NoResult, TrialFailure, render};

/// The quality step's settings and whether its absence was said.
pub(super) struct QualityStep<'a> {
    pub cmd: Option<&'a crate::quality::QualityHook>,
    pub said: &'a mut bool,
}

/// What one bench run (or the repeats together) produced.
pub(super) struct Piece {
    pub doc: ResultDoc,
    pub failures: Vec<TrialFailure>,
    /// Why `doc` is the template fallback, when it is.
    pub fallback: Option<NoResult>,
    /// Bench log tail shown with a fallback.
    pub log_tail: String,
    pub errors: Vec<String>,
}

/// Runs the step once, or `repeats` times into `repeat-<k>/` and combines them.
pub(super) fn run(
    bench: &dyn Bench,
    ctx: &BenchContext<'_>,
    label: &str,
    repeats: NonZeroU32,
    base_seed: u64,
    quality: QualityStep<'_>,
) -> Piece {
    let repeats = repeats.get();
    if repeats == 1 {
        return piece(bench.run(ctx), label, ctx, quality);
    }
    let QualityStep { cmd, said } = quality;
    let (mut runs, mut typed) = (Vec::new(), Vec::new());
    let (mut errors, mut log_tail) = (Vec::new(), String::new());
    for k in 1..=repeats {
        let seed = base_seed.wrapping_add(u64::from(k - 1));
        let dir = format!("repeat-{k}");
        let trial = reseeded(ctx.trial, k, seed);
        let out_dir = ctx.out_dir.join(&dir);
        let mut failures = Vec::new();
        if let Err(e) = std::fs::create_dir_all(&out_dir) {
            failures.push(TrialFailure::CreateDir {
                dir: out_dir.clone(),
                error: e.to_string(),
            });
        }
        let rctx = BenchContext {
            trial: &trial,
            out_dir: out_dir.clone(),
            ..ctx.clone()
        };
        let quality = QualityStep {
            cmd,
            said: &mut *said,
        };
        let p = piece(bench.run(&rctx), label, &rctx, quality);
        failures.extend(p.failures);
        if let Some(why) = &p.fallback {
            failures.insert(0, TrialFailure::NoResult(why.clone()));
            log_tail = p.log_tail;
        }
        for e in p.errors {
            if errors.len() < 8 && !errors.contains(&e) {
                errors.push(e);
            }
        }
        let doc = p.fallback.is_none().then_some(p.doc);
        if let Some(d) = &doc {
            let mut d = d.clone();
            crate::result_keys::add_runner_keys(&mut d, &trial, &ctx.hardware, Some(label));
            d.insert(
                "repeat".into(),
                json!({"index": k, "of": repeats, "seed": seed}),
            );
            if let Err(e) = write_json_atomic(&out_dir.join("result.json"), &d) {
                failures.push(TrialFailure::WriteRepeat {
                    dir: dir.clone(),
                    error: e.to_string(),
                });
            }
        }
        runs.push(RepeatRun {
            repeat: k,
            dir,
            seed,
            doc,
            failures: render(&failures),
        });
        typed.extend(failures.into_iter().map(|f| TrialFailure::Repeat {
            k,
            of: repeats,
            failure: Box::new(f),
        }));
    }
    let combined = combine(&runs);
    let fallback = combined
        .is_none()
        .then_some(NoResult::NoRepeat { of: repeats });
    let reason = fallback.as_ref().map(ToString::to_string);
    Piece {
        doc: combined.unwrap_or_else(|| template_fallback(reason.as_deref().unwrap_or_default())),
        failures: typed,
        fallback,
        log_tail,
        errors,
    }
}

/// The trial as repeat `k` runs it: the entry's seed set to `seed` (also in the raw
/// entry, which the external bench turns into `--seed`) from the second repeat on.
/// The first repeat runs the trial itself; a later one needs a trial of its own.
fn reseeded(trial: &Trial, k: u32, seed: u64) -> Cow<'_, Trial> {
    if k == 1 {
        return Cow::Borrowed(trial);
    }
    let mut entry = (*trial.entry).clone();
    entry.seed = Some(seed);
    if entry.raw.contains_key("seed") {
        entry.raw.insert("seed".into(), json!(seed));
    }
    Cow::Owned(Trial {
        entry: Arc::new(entry),
        ..trial.clone()
    })
}

/// One bench outcome as the trial sees it: the document (or the fallback and why), the
/// quality step for `seed_tts_wer_eval` entries, and the failures the verdict cannot see.
fn piece(outcome: BenchOutcome, label: &str, ctx: &BenchContext<'_>, q: QualityStep<'_>) -> Piece {
    let tail = |t: &str| {
        if t.trim().is_empty() {
            String::new()
        } else {
            format!("\n--- bench log tail ---\n{}", t.trim_end())
        }
    };
    let mut failures = Vec::new();
    let mut fallback = None;
    let mut doc = match outcome.result {
        Some(doc) => {
            if let Some(exit) = &outcome.exit {
                failures.push(TrialFailure::BenchEnded {
                    exit: exit.clone(),
                    log_tail: tail(&outcome.log_tail),
                });
            }
            doc
        }
        None => {
            let why = NoResult::Left {
                label: label.to_string(),
                exit: outcome.exit.clone(),
            };
            let doc = template_fallback(&why.to_string());
            fallback = Some(why);
            doc
        }
    };
    if ctx.trial.entry.seed_tts_wer_eval() && fallback.is_none() {
        quality_step(q, &ctx.trial.name, &ctx.out_dir, &mut doc, &mut failures);
    }
    if let Some(invalid) = outcome.invalid_load {
        failures.push(TrialFailure::InvalidLoad(invalid));
    }
    let log_tail = if fallback.is_some() {
        tail(&outcome.log_tail)
    } else {
        String::new()
    };
    Piece {
        doc,
        failures,
        fallback,
        log_tail,
        errors: outcome.errors,
    }
}

fn quality_step(
    q: QualityStep<'_>,
    trial: &str,
    dir: &Path,
    doc: &mut ResultDoc,
    failures: &mut Vec<TrialFailure>,
) {
    use crate::quality::{Quality, evaluate};
    match evaluate(q.cmd, dir, doc) {
        Quality::HookFailed(e) => failures.push(TrialFailure::Quality(e)),
        Quality::NotEvaluated(why) if !*q.said => {
            *q.said = true;
            eprintln!("{trial}: {why}");
        }
        Quality::NotEvaluated(_) | Quality::Evaluated(_) => {}
    }
}
