//! The entry key `capacity` (dfx-perf's own): instead of a sweep, the entry searches the
//! highest open-loop arrival rate that meets its criteria ([`CapacitySpec`]). Checked
//! here, once, at load; the entry becomes one trial (step label `capacity`) whose
//! `num_prompts` is the size of every probe.

use std::num::{NonZeroU32, NonZeroU64};

use serde_json::{Map, Value};

use crate::bounds::{MAX_PROMPTS, MAX_RATE, MIN_RATE};
use crate::diag::{Ctx, Errs, json_type};
use crate::plan::{CapacitySpec, StepKind, SweepStep};

/// What the `capacity` object accepts, for error messages.
pub(super) const ACCEPTED: &str = "an object with max_p99_ttfp_ms (> 0) and optionally \
min_continuity (0 to 1, default 0.95), start_rate, min_rate, max_rate (requests per second, \
min_rate ≤ start_rate ≤ max_rate), tolerance (0.01 to 1, default 0.1), boundary_repeats \
(1 to 20, default 3) and max_probes (4 to 64, default 24)";

const KEYS: [&str; 8] = [
    "max_p99_ttfp_ms",
    "min_continuity",
    "start_rate",
    "min_rate",
    "max_rate",
    "tolerance",
    "boundary_repeats",
    "max_probes",
];

/// Reads `capacity`; `None` (with errors pushed) when it is not a valid search.
pub(crate) fn capacity_key(
    ctx: &Ctx<'_>,
    v: Option<&Value>,
    errs: &mut Errs,
) -> Option<CapacitySpec> {
    let v = v?;
    let Some(obj) = v.as_object() else {
        errs.push(ctx.err(
            "capacity",
            format!("wrong type: got {}", json_type(v)),
            ACCEPTED,
        ));
        return None;
    };
    let before = errs.len();
    for k in obj.keys().filter(|k| !KEYS.contains(&k.as_str())) {
        errs.push(ctx.err(&format!("capacity.{k}"), "unknown key", ACCEPTED));
    }
    let mut num = |key: &str, default: Option<f64>, ok: &dyn Fn(f64) -> bool| -> f64 {
        match obj.get(key) {
            None => default.unwrap_or_else(|| {
                errs.push(ctx.err(&format!("capacity.{key}"), "missing", ACCEPTED));
                f64::NAN
            }),
            Some(x) => match x.as_f64().filter(|f| f.is_finite() && ok(*f)) {
                Some(f) => f,
                None => {
                    errs.push(ctx.err(
                        &format!("capacity.{key}"),
                        format!("invalid value {x}"),
                        ACCEPTED,
                    ));
                    f64::NAN
                }
            },
        }
    };
    let rate = |f: f64| (MIN_RATE..=MAX_RATE).contains(&f);
    let boundary_repeats = num("boundary_repeats", Some(3.0), &|f| {
        f.fract() == 0.0 && (1.0..=20.0).contains(&f)
    });
    let spec = CapacitySpec {
        max_p99_ttfp_ms: num("max_p99_ttfp_ms", None, &|f| f > 0.0 && f <= 3.6e6),
        min_continuity: num("min_continuity", Some(0.95), &|f| (0.0..=1.0).contains(&f)),
        start_rate: num("start_rate", Some(1.0), &rate),
        min_rate: num("min_rate", Some(MIN_RATE.max(0.01)), &rate),
        max_rate: num("max_rate", Some(1024.0), &rate),
        tolerance: num("tolerance", Some(0.1), &|f| (0.01..=1.0).contains(&f)),
        // Refused (NaN, so 0): the error is pushed and no spec is returned below.
        boundary_repeats: NonZeroU32::new(boundary_repeats as u32).unwrap_or(NonZeroU32::MIN),
        max_probes: num("max_probes", Some(24.0), &|f| {
            f.fract() == 0.0 && (4.0..=64.0).contains(&f)
        }) as u32,
    };
    if errs.len() > before {
        return None;
    }
    if !(spec.min_rate <= spec.start_rate && spec.start_rate <= spec.max_rate) {
        errs.push(ctx.err(
            "capacity.start_rate",
            format!(
                "min_rate {} ≤ start_rate {} ≤ max_rate {} does not hold",
                spec.min_rate, spec.start_rate, spec.max_rate
            ),
            ACCEPTED,
        ));
        return None;
    }
    Some(spec)
}

/// The one step of a capacity entry: its probes' size from `num_prompts` (one integer,
/// or a list of one), no `request_rate` / `max_concurrency` (the search sets the rate).
pub(crate) fn capacity_step(
    ctx: &Ctx<'_>,
    obj: &Map<String, Value>,
    spec: &CapacitySpec,
    errs: &mut Errs,
) -> Vec<SweepStep> {
    for key in ["request_rate", "max_concurrency"] {
        if obj.get(key).is_some_and(|v| !v.is_null()) {
            errs.push(ctx.err(
                key,
                "not allowed with `capacity`: the search chooses the rate",
                "no sweep key in a capacity entry (num_prompts sets each probe's size)",
            ));
        }
    }
    let n = match obj.get("num_prompts") {
        Some(Value::Array(a)) if a.len() == 1 => a[0].as_u64(),
        Some(v) => v.as_u64(),
        None => None,
    };
    let Some(n) = n.filter(|n| *n <= MAX_PROMPTS).and_then(NonZeroU64::new) else {
        errs.push(ctx.err(
            "num_prompts",
            "a capacity entry needs the size of each probe",
            &format!("one integer from 1 to {MAX_PROMPTS} (or a list of one)"),
        ));
        return Vec::new();
    };
    vec![SweepStep {
        kind: StepKind::RequestRate {
            request_rate: spec.start_rate,
        },
        index: 0,
        num_prompts: n,
        label: "capacity".into(),
    }]
}
