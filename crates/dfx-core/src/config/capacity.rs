//! The entry key `capacity` (dfx-perf's own): instead of a sweep, the entry searches the
//! highest open-loop arrival rate that meets its criteria ([`CapacitySpec`]). Checked
//! here, once, at load; the entry becomes one trial (step label `capacity`) whose
//! `num_prompts` is the size of every probe.

use std::num::{NonZeroU32, NonZeroU64};

use serde_json::{Map, Value};

use super::known_keys::runners::{
    CAP_BOUNDARY_REPEATS, CAP_CONTINUITY, CAP_MAX_P99, CAP_MAX_PROBES, CAP_TOLERANCE,
};
use crate::bounds::{MAX_PROMPTS, MAX_RATE, MIN_RATE};
use crate::diag::{Ctx, Errs, json_type};
use crate::plan::{CapacitySpec, StepKind, SweepStep};

/// What the `capacity` object accepts, for error messages.
pub(super) const ACCEPTED: &str = "an object with max_p99_ttfp_ms (> 0) and optionally \
min_continuity (0 to 1, default 0.95), start_rate, min_rate, max_rate (requests per second, \
min_rate ≤ start_rate ≤ max_rate), tolerance (0.01 to 1, default 0.1), boundary_repeats \
(1 to 20, default 3) and max_probes (4 to 64, default 24)";

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
    let known = |k: &str| {
        super::known_keys::runners::CAPACITY
            .iter()
            .any(|r| r.name == k)
    };
    for k in obj.keys().filter(|k| !known(k)) {
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
    let boundary_repeats = num(CAP_BOUNDARY_REPEATS.name, Some(3.0), &|f| {
        integer_in(
            f,
            const { CAP_BOUNDARY_REPEATS.int_min() },
            const { CAP_BOUNDARY_REPEATS.int_max() },
        )
    });
    let in_row = |(lo, hi): (f64, f64)| move |f: f64| (lo..=hi).contains(&f);
    let spec = CapacitySpec {
        max_p99_ttfp_ms: num(CAP_MAX_P99.name, None, &|f| {
            f > 0.0 && f <= const { CAP_MAX_P99.positive_max() }
        }),
        min_continuity: num(
            CAP_CONTINUITY.name,
            Some(0.95),
            &in_row(const { CAP_CONTINUITY.num_range() }),
        ),
        start_rate: num("start_rate", Some(1.0), &rate),
        min_rate: num("min_rate", Some(MIN_RATE.max(0.01)), &rate),
        max_rate: num("max_rate", Some(1024.0), &rate),
        tolerance: num(
            CAP_TOLERANCE.name,
            Some(0.1),
            &in_row(const { CAP_TOLERANCE.num_range() }),
        ),
        // Refused (NaN, so 0): the error is pushed and no spec is returned below.
        boundary_repeats: NonZeroU32::new(boundary_repeats as u32).unwrap_or(NonZeroU32::MIN),
        max_probes: num(CAP_MAX_PROBES.name, Some(24.0), &|f| {
            integer_in(
                f,
                const { CAP_MAX_PROBES.int_min() },
                const { CAP_MAX_PROBES.int_max() },
            )
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

/// Whether `f` is a whole number from `lo` to `hi`.
fn integer_in(f: f64, lo: u64, hi: u64) -> bool {
    f.fract() == 0.0 && (lo as f64..=hi as f64).contains(&f)
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
