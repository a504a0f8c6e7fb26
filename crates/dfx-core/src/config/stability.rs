//! Stability (soak) entries: batches of `num_prompts_per_batch` requests at one
//! concurrency or rate until `duration_sec` has passed (upstream's stability runner,
//! `tests/dfx/stability/`). A soak takes the omni entry's keys too: those it reads are
//! typed as a sweep entry types them, and those that shape or judge sweep steps are
//! refused, since a soak would run without them.

use std::num::NonZeroU64;

use serde_json::{Map, Value};

use super::entry_parts::{CommonKeys, EntryDraft, result_gates};
use super::known_keys::LOAD_KEYS;
use super::known_keys::entry::{SOAK_BATCH, SOAK_DURATION};
use super::raw::{RawOmniEntry, from_object};
use super::runners::{draft, step};
use super::sweep;
use super::value::opt_count;
use crate::diag::{Ctx, Errs, json_type};
use crate::plan::{Dialect, StepKind};
use crate::runner_keys::{
    DEFAULT_SOAK_DURATION_S, DEFAULT_SOAK_WORDS, RunnerKeys, SOAK_WORDS_ACCEPTED, SoakKeys,
    soak_words,
};

/// `num_prompts_per_batch` of a stability entry without the key (upstream's default).
const DEFAULT_SOAK_BATCH: NonZeroU64 = NonZeroU64::new(20).unwrap();

/// dfx-perf keys of a sweep entry that a soak has no use for: the load shapes (a soak
/// sends batches at one concurrency or rate), `repeats` and `capacity` (a soak is one
/// run of its duration).
const SWEEP_ONLY: [&str; 2] = ["repeats", "capacity"];

/// Keys upstream's stability runner drops without reading them (`_build_base_args`):
/// accepted, as upstream accepts them, with a warning that they do nothing here.
const UPSTREAM_IGNORES: [&str; 2] = ["baseline", "num_prompts"];

/// A stability entry: exactly one of `max_concurrency` / `request_rate` (a single value;
/// the kebab-case spellings of upstream's diffusion stability configs are read too),
/// `num_prompts_per_batch` (default 20), `duration_sec` (default 300).
pub(crate) fn stability_entry(
    ctx: &Ctx<'_>,
    raw_index: usize,
    obj: &Map<String, Value>,
    errs: &mut Errs,
    warnings: &mut Vec<String>,
) -> Option<EntryDraft> {
    let n = errs.len();
    // 0 used to become 1 silently; it is refused like every other count.
    let batch = opt_count(
        ctx,
        SOAK_BATCH.name,
        obj.get(SOAK_BATCH.name),
        const { SOAK_BATCH.int_max() },
        errs,
    )
    .unwrap_or(DEFAULT_SOAK_BATCH);
    let duration = obj.get(SOAK_DURATION.name);
    let max = const { SOAK_DURATION.positive_max() };
    let duration_s = super::value::check_seconds(ctx, SOAK_DURATION.name, duration, max, errs)
        .unwrap_or(DEFAULT_SOAK_DURATION_S);
    let words = soak_words_key(ctx, obj.get("random_input_len"), errs);
    let (conc_key, conc) = either_spelling(ctx, obj, "max_concurrency", errs);
    let (rate_key, rate) = either_spelling(ctx, obj, "request_rate", errs);
    // The sweep's own checks and messages, for one value instead of a list.
    let kind = match (conc, rate) {
        (Some(c), None) => match sweep::concurrency(c) {
            Ok(max_concurrency) => Some(StepKind::Concurrency { max_concurrency }),
            Err(problem) => {
                let accepted = sweep::concurrency_accepted(false);
                errs.push(ctx.err(conc_key, problem.to_string(), &accepted));
                None
            }
        },
        (None, Some(r)) => match sweep::rate(r) {
            Ok(request_rate) => Some(StepKind::RequestRate { request_rate }),
            Err(problem) => {
                errs.push(ctx.err(rate_key, problem.to_string(), &sweep::rate_accepted(false)));
                None
            }
        },
        _ => {
            errs.push(ctx.err(
                "max_concurrency/request_rate",
                "a stability entry needs exactly one of `max_concurrency` and `request_rate`",
                "one of them, a single value",
            ));
            None
        }
    };
    // The omni entry's keys a soak reads, as a sweep entry reads them.
    let raw: RawOmniEntry = from_object(obj).unwrap_or_default();
    let common = CommonKeys::read(ctx, &raw, errs);
    let gates = result_gates(ctx, obj, errs);
    not_read_by_a_soak(ctx, obj, errs, warnings);
    let mut d = draft(raw_index, obj, Dialect::Stability, step(kind?, batch));
    common.apply(&mut d.entry);
    d.entry.gates = gates;
    d.entry.runner = RunnerKeys::Stability(SoakKeys { duration_s, words });
    (errs.len() == n).then_some(d)
}

/// A stability sweep key under its snake-case name or the kebab-case one upstream's
/// diffusion stability configs write (`max-concurrency`): the name used and the value
/// (`null` is absent). Both spellings at once is an error at the kebab one.
fn either_spelling<'a>(
    ctx: &Ctx<'_>,
    obj: &'a Map<String, Value>,
    snake: &'static str,
    errs: &mut Errs,
) -> (&'static str, Option<&'a Value>) {
    let kebab: &'static str = match snake {
        "max_concurrency" => "max-concurrency",
        _ => "request-rate",
    };
    let get = |k: &str| obj.get(k).filter(|v| !v.is_null());
    match (get(snake), get(kebab)) {
        (Some(_), Some(_)) => {
            errs.push(ctx.err(
                kebab,
                format!("`{kebab}` and `{snake}` are the same key, given twice"),
                "one spelling",
            ));
            (snake, None)
        }
        (None, Some(v)) => (kebab, Some(v)),
        (v, None) => (snake, v),
    }
}

/// `random_input_len` of a stability entry: the soak's text lengths in words.
fn soak_words_key(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> (u64, u64) {
    let fallback = (DEFAULT_SOAK_WORDS, DEFAULT_SOAK_WORDS);
    match v {
        None | Some(Value::Null) => fallback,
        Some(v) => soak_words(v).unwrap_or_else(|| {
            errs.push(ctx.err(
                "random_input_len",
                format!("invalid value {v}"),
                SOAK_WORDS_ACCEPTED,
            ));
            fallback
        }),
    }
}

/// Refuses the sweep-only keys ([`SWEEP_ONLY`], the load-shape keys) and warns about
/// those upstream ignores ([`UPSTREAM_IGNORES`]).
fn not_read_by_a_soak(
    ctx: &Ctx<'_>,
    obj: &Map<String, Value>,
    errs: &mut Errs,
    warnings: &mut Vec<String>,
) {
    let given = obj.iter().filter(|(_, v)| !v.is_null());
    for (key, v) in given.map(|(k, v)| (k.as_str(), v)) {
        if SWEEP_ONLY.contains(&key) || LOAD_KEYS.contains(&key) {
            errs.push(ctx.err(
                key,
                "a stability entry does not read it: it shapes or repeats sweep steps, and a \
                 soak sends batches of `num_prompts_per_batch` at one `max_concurrency` or \
                 `request_rate` for `duration_sec`",
                "the stability keys, or this key in a sweep entry",
            ));
        } else if UPSTREAM_IGNORES.contains(&key) {
            // Still of its sweep type: a typo is an error whether or not it is read.
            let count = |v: &Value| v.as_u64().is_some();
            let (typed, accepted) = match key {
                "baseline" => (v.is_object(), "an object"),
                _ => (
                    count(v) || v.as_array().is_some_and(|a| a.iter().all(count)),
                    "an integer or a list of integers",
                ),
            };
            if !typed {
                errs.push(ctx.err(key, format!("wrong type: got {}", json_type(v)), accepted));
            }
            let why = "not read by a stability entry (upstream's stability runner drops it \
                       too): a soak is judged by its failures and its drift";
            warnings.push(ctx.err(key, why, "").to_string());
        }
    }
}
