//! The load keys of an omni entry (`ramp_start_rate`, `burst`, `soak_duration_s`,
//! `cohorts`, `saturation`, `open_loop_max_concurrency`) → a [`LoadSpec`], every problem
//! an error naming the key and what is accepted; and the schedule bound of every
//! request-rate step under that shape.

use std::num::NonZeroU32;

use serde_json::Value;

use super::known_keys::entry::OPEN_LOOP_MAX_CONCURRENCY;
use super::raw::RawOmniEntry;
use super::sweep::schedule_too_long;
use super::value::{opt_bool, opt_count, opt_f64_in, opt_uint};
use crate::bounds::{MAX_COHORTS, MAX_PROMPTS, MAX_RATE, MAX_SCHEDULE_SECONDS, MIN_RATE};
use crate::diag::{Ctx, Errs, json_type};
use crate::load::{Cohort, LoadShape, LoadSpec, Saturation};
use crate::plan::{StepKind, SweepStep};

/// What a rate key accepts.
fn rate_range() -> (f64, f64) {
    (MIN_RATE, MAX_RATE)
}

/// Reads the load keys of `raw` for an entry with `steps`; pushes every problem.
pub(crate) fn load_spec(
    ctx: &Ctx<'_>,
    raw: &RawOmniEntry,
    steps: &[SweepStep],
    errs: &mut Errs,
) -> LoadSpec {
    let shape = shape(ctx, raw, errs);
    // `None`: no cap, rate steps run uncapped as upstream's do.
    let cap = opt_count(
        ctx,
        OPEN_LOOP_MAX_CONCURRENCY.name,
        raw.open_loop_max_concurrency.as_ref(),
        const { OPEN_LOOP_MAX_CONCURRENCY.int_max() },
        errs,
    )
    .and_then(|c| NonZeroU32::try_from(c).ok());
    let saturation = saturation(ctx, raw.saturation.as_ref(), errs);
    if saturation == Some(Saturation::Fail) && cap.is_none() {
        errs.push(ctx.err(
            "saturation",
            "\"fail\" gates arrivals on the open-loop cap, but `open_loop_max_concurrency` is not set",
            "`open_loop_max_concurrency` (the cap the gate checks) with `saturation: \"fail\"`",
        ));
    }
    let spec = LoadSpec {
        shape,
        open_loop_max_concurrency: cap,
        saturation: saturation.unwrap_or_default(),
    };
    check_steps(ctx, raw, &spec, steps, errs);
    spec
}

/// The keys present with a value (not `null`, not `burst: false`).
fn keys_given(raw: &RawOmniEntry) -> Vec<&'static str> {
    let given = |v: &Option<Value>| v.as_ref().is_some_and(|v| !v.is_null());
    [
        ("ramp_start_rate", given(&raw.ramp_start_rate)),
        (
            "burst",
            given(&raw.burst) && raw.burst != Some(Value::Bool(false)),
        ),
        ("soak_duration_s", given(&raw.soak_duration_s)),
        ("cohorts", given(&raw.cohorts)),
        ("saturation", given(&raw.saturation)),
        (
            "open_loop_max_concurrency",
            given(&raw.open_loop_max_concurrency),
        ),
    ]
    .into_iter()
    .filter_map(|(k, on)| on.then_some(k))
    .collect()
}

fn shape(ctx: &Ctx<'_>, raw: &RawOmniEntry, errs: &mut Errs) -> LoadShape {
    let shapes: Vec<&str> = keys_given(raw)
        .into_iter()
        .filter(|k| !matches!(*k, "saturation" | "open_loop_max_concurrency"))
        .collect();
    if shapes.len() > 1 {
        errs.push(ctx.err(
            &shapes.join("/"),
            format!("more than one load shape: {}", shapes.join(", ")),
            "at most one of `ramp_start_rate`, `burst`, `soak_duration_s`, `cohorts`",
        ));
        return LoadShape::Steady;
    }
    let ramp = opt_f64_in(
        ctx,
        "ramp_start_rate",
        raw.ramp_start_rate.as_ref(),
        rate_range(),
        errs,
    );
    let burst = opt_bool(ctx, "burst", raw.burst.as_ref(), errs);
    let soak = opt_f64_in(
        ctx,
        "soak_duration_s",
        raw.soak_duration_s.as_ref(),
        (0.0, MAX_SCHEDULE_SECONDS),
        errs,
    );
    if soak == Some(0.0) {
        errs.push(ctx.err(
            "soak_duration_s",
            "invalid value 0",
            &format!("a number of seconds greater than 0, at most {MAX_SCHEDULE_SECONDS}"),
        ));
    }
    let cohorts = raw.cohorts.as_ref().and_then(|v| cohorts(ctx, v, errs));
    match (ramp, burst, soak.filter(|d| *d > 0.0), cohorts) {
        (Some(start_rate), ..) => LoadShape::Ramp { start_rate },
        (_, Some(true), ..) => LoadShape::Burst,
        (_, _, Some(duration_s), _) => LoadShape::Soak { duration_s },
        (.., Some(cohorts)) => LoadShape::Cohorts { cohorts },
        _ => LoadShape::Steady,
    }
}

fn saturation(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> Option<Saturation> {
    let v = v.filter(|v| !v.is_null())?;
    let Value::String(text) = v else {
        errs.push(ctx.err(
            "saturation",
            format!("wrong type: got {}", json_type(v)),
            Saturation::ACCEPTED,
        ));
        return None;
    };
    let s = Saturation::parse(text);
    if s.is_none() {
        errs.push(ctx.err(
            "saturation",
            format!("invalid value {text:?}"),
            Saturation::ACCEPTED,
        ));
    }
    s
}

const COHORT_KEYS: &str = "an object with `offset_s` (seconds from 0), `num_prompts` \
(integer from 1) and optionally `request_rate` (requests per second)";

fn cohorts(ctx: &Ctx<'_>, v: &Value, errs: &mut Errs) -> Option<Vec<Cohort>> {
    let accepted = format!("a list of 1 to {MAX_COHORTS} cohorts, each {COHORT_KEYS}");
    let items = match v {
        Value::Null => return None,
        Value::Array(items) if !items.is_empty() && items.len() <= MAX_COHORTS => items,
        Value::Array(items) => {
            let problem = format!("{} cohorts", items.len());
            errs.push(ctx.err("cohorts", problem, &accepted));
            return None;
        }
        other => {
            let problem = format!("wrong type: got {}", json_type(other));
            errs.push(ctx.err("cohorts", problem, &accepted));
            return None;
        }
    };
    let n = errs.len();
    let out: Vec<Cohort> = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| cohort(ctx, i, item, errs))
        .collect();
    (errs.len() == n).then_some(out)
}

fn cohort(ctx: &Ctx<'_>, i: usize, v: &Value, errs: &mut Errs) -> Option<Cohort> {
    let key = |k: &str| format!("cohorts[{i}].{k}");
    let Value::Object(obj) = v else {
        let problem = format!("wrong type: got {}", json_type(v));
        errs.push(ctx.err(&format!("cohorts[{i}]"), problem, COHORT_KEYS));
        return None;
    };
    for k in obj.keys() {
        if !matches!(k.as_str(), "offset_s" | "num_prompts" | "request_rate") {
            errs.push(ctx.err(&key(k), "unknown cohort key", COHORT_KEYS));
        }
    }
    let offset = obj.get("offset_s");
    let offset_s = opt_f64_in(
        ctx,
        &key("offset_s"),
        offset,
        (0.0, MAX_SCHEDULE_SECONDS),
        errs,
    );
    let prompts = obj.get("num_prompts");
    let num_prompts = opt_uint(ctx, &key("num_prompts"), prompts, MAX_PROMPTS, errs);
    for (name, missing) in [
        ("offset_s", offset.is_none()),
        ("num_prompts", prompts.is_none()),
    ] {
        if missing {
            errs.push(ctx.err(&key(name), "missing", COHORT_KEYS));
        }
    }
    if num_prompts == Some(0) {
        let accepted = format!("an integer from 1 to {MAX_PROMPTS}");
        errs.push(ctx.err(&key("num_prompts"), "invalid value 0", &accepted));
    }
    let rate = obj.get("request_rate").filter(|v| !v.is_null());
    let request_rate = opt_f64_in(ctx, &key("request_rate"), rate, rate_range(), errs);
    Some(Cohort {
        offset_s: offset_s?,
        num_prompts: num_prompts.filter(|&n| n > 0)?,
        request_rate,
    })
}

/// The keys' fit with the entry's steps: they need a request-rate step; cohorts add up
/// to each rate step's `num_prompts`; a soak's rate is within bounds; every rate step's
/// schedule is bounded.
fn check_steps(
    ctx: &Ctx<'_>,
    raw: &RawOmniEntry,
    spec: &LoadSpec,
    steps: &[SweepStep],
    errs: &mut Errs,
) {
    let rate_steps: Vec<&SweepStep> = steps
        .iter()
        .filter(|s| matches!(s.kind, StepKind::RequestRate { .. }))
        .collect();
    let given = keys_given(raw);
    if rate_steps.is_empty() && !steps.is_empty() && !given.is_empty() {
        for key in given {
            errs.push(ctx.err(
                key,
                "applies to open-loop steps only, and this entry has no `request_rate` step",
                "`request_rate` (number or list) on the entry; `max_concurrency` steps are closed loop",
            ));
        }
        return;
    }
    let shape_key = match &spec.shape {
        LoadShape::Steady => "request_rate",
        LoadShape::Ramp { .. } => "ramp_start_rate",
        LoadShape::Burst => "burst",
        LoadShape::Soak { .. } => "soak_duration_s",
        LoadShape::Cohorts { .. } => "cohorts",
    };
    for s in rate_steps {
        shape_fits_step(ctx, &spec.shape, s, errs);
        if let Some(e) = schedule_too_long(ctx, shape_key, s, &spec.shape) {
            errs.push(e);
        }
    }
}

/// A cohorts shape holds the step's `num_prompts`; a soak's rate is at most [`MAX_RATE`].
fn shape_fits_step(ctx: &Ctx<'_>, shape: &LoadShape, s: &SweepStep, errs: &mut Errs) {
    match shape {
        LoadShape::Cohorts { cohorts } => {
            let sum: u64 = cohorts.iter().map(|c| c.num_prompts).sum();
            if sum != s.num_prompts.get() {
                errs.push(ctx.err(
                    "cohorts",
                    format!(
                        "step {}: the cohorts hold {sum} requests but the step has num_prompts {}",
                        s.label, s.num_prompts
                    ),
                    "cohorts whose `num_prompts` add up to every request-rate step's `num_prompts`",
                ));
            }
        }
        LoadShape::Soak { duration_s } if s.num_prompts.get() as f64 / duration_s > MAX_RATE => {
            errs.push(ctx.err(
                "soak_duration_s",
                format!(
                    "step {}: {} requests over {duration_s} s is more than {MAX_RATE} req/s",
                    s.label, s.num_prompts
                ),
                &format!("a duration of at least num_prompts / {MAX_RATE} s"),
            ));
        }
        _ => {}
    }
}
