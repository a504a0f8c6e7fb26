//! The baseline shapes a perf-config may use, validated at load time and resolved per
//! sweep step: per metric `null` (no threshold), a scalar, a list (element
//! `[step.index]`), or a dict keyed by [`SweepStep::baseline_key`]; the whole object either
//! flat `{metric: shape}` or hardware-nested `{"H100": {metric: shape}, "A3": {…}}`.

use serde_json::{Map, Value};

use super::{Threshold, ThresholdSource, Thresholds};
use crate::diag::{Ctx, Errs, json_type};
use crate::hardware;
use crate::metrics::{Direction, bound_accepted, bound_problem, direction_of, unknown_metric_hint};
use crate::step::{StepKind, SweepStep};

/// One metric's baseline as written.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricShape {
    /// No threshold (upstream used 100000).
    Null,
    /// The same threshold at every step.
    Scalar(f64),
    /// Element `[step.index]`; a `null` element means no threshold at that step.
    List(Vec<Option<f64>>),
    /// Keyed by `str(max_concurrency)` / `str(request_rate)`; `null` means no threshold.
    Dict(Vec<(String, Option<f64>)>),
}

/// `{metric: shape}` in file order (metrics with a known direction only), plus the two
/// non-metric keys upstream's 2026 buckets may hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlatBaseline {
    /// `{metric: shape}` in file order.
    pub metrics: Vec<(String, MetricShape)>,
    /// `source`: where the numbers came from (provenance only, shown in listings).
    pub source: Option<String>,
    /// `regression_tolerance`: a fraction in `[0, 1)` applied to every metric of the
    /// bucket: the written numbers are bases, the thresholds `base × (1 − tol)` for
    /// higher-is-better metrics and `base × (1 + tol)` for lower-is-better ones.
    pub tolerance: Option<f64>,
}

/// Bucket keys that are not metrics.
const BUCKET_KEYS: [&str; 2] = ["source", "regression_tolerance"];

/// An entry's `baseline` object.
#[derive(Debug, Clone, PartialEq)]
pub enum BaselineSpec {
    /// A baseline keyed by metric name directly (one bucket for every hardware label).
    Flat(FlatBaseline),
    /// `(hardware label, bucket)` in file order.
    Nested(Vec<(String, FlatBaseline)>),
}

const SHAPE_ACCEPTED: &str = "null, a number, a list with one number per sweep step, or an \
object keyed by str(max_concurrency) / str(request_rate) (e.g. \"16\", \"2.0\")";

/// Whether a baseline object is hardware-nested: every top-level key is not a metric name
/// and holds an object, and either a key is a built-in hardware label or some inner key is
/// not a step key (a flat dict-shaped metric has numeric step keys inside, a bucket
/// metric names, misspelt or not: `{"SIMx20": {"median_ttfx_ms": 5}}` is a bucket whose
/// metric is unknown, not a metric named `SIMx20`).
pub fn looks_nested(obj: &Map<String, Value>) -> bool {
    !obj.is_empty()
        && obj.iter().all(|(k, v)| {
            v.is_object() && direction_of(k).is_none() && !BUCKET_KEYS.contains(&k.as_str())
        })
        && obj.iter().any(|(k, v)| {
            is_hardware_label(k)
                || v.as_object()
                    .is_some_and(|inner| inner.keys().any(|m| !is_step_key(m)))
        })
}

fn is_hardware_label(k: &str) -> bool {
    hardware::is_builtin(k)
}

/// Whether a key can be a sweep step's key of a dict-shaped metric (`"16"`, `"2.0"`).
fn is_step_key(k: &str) -> bool {
    k.trim().parse::<f64>().is_ok()
}

/// Parses an entry's `baseline` (`None` for `null`); problems go to `errs`.
pub(crate) fn parse_baseline(ctx: &Ctx<'_>, v: &Value, errs: &mut Errs) -> Option<BaselineSpec> {
    let obj = match v {
        Value::Null => return None,
        Value::Object(o) => o,
        other => {
            errs.push(ctx.err(
                "baseline",
                format!("wrong type: got {}", json_type(other)),
                "an object {metric: shape} or {hardware label: {metric: shape}}",
            ));
            return None;
        }
    };
    if looks_nested(obj) {
        let buckets = obj
            .iter()
            .map(|(hw, bucket)| {
                let key = format!("baseline.{hw}");
                let bucket = bucket.as_object().expect("looks_nested checked objects");
                (hw.clone(), parse_flat(ctx, &key, bucket, errs))
            })
            .collect();
        Some(BaselineSpec::Nested(buckets))
    } else {
        Some(BaselineSpec::Flat(parse_flat(ctx, "baseline", obj, errs)))
    }
}

fn parse_flat(
    ctx: &Ctx<'_>,
    prefix: &str,
    obj: &Map<String, Value>,
    errs: &mut Errs,
) -> FlatBaseline {
    let mut out = FlatBaseline::default();
    for (metric, raw) in obj {
        let key = format!("{prefix}.{metric}");
        if metric == "source" {
            match raw {
                Value::String(s) => out.source = Some(s.clone()),
                Value::Null => {}
                other => errs.push(ctx.err(
                    &key,
                    format!("wrong type: got {}", json_type(other)),
                    "a string saying where the numbers came from",
                )),
            }
            continue;
        }
        if metric == "regression_tolerance" {
            match raw.as_f64() {
                Some(t) if (0.0..1.0).contains(&t) => out.tolerance = Some(t),
                _ if raw.is_null() => {}
                _ => errs.push(ctx.err(
                    &key,
                    format!("invalid value {raw}"),
                    "a fraction from 0 (inclusive) to 1 (exclusive), e.g. 0.1",
                )),
            }
            continue;
        }
        if direction_of(metric).is_none() {
            errs.push(ctx.err(
                &key,
                format!("unknown metric `{metric}`"),
                &unknown_metric_hint(metric),
            ));
            continue;
        }
        if let Some(shape) = parse_shape(ctx, &key, raw, errs) {
            check_bounds(ctx, &key, metric, &shape, errs);
            out.metrics.push((metric.clone(), shape));
        }
    }
    out
}

/// Every number of a metric's shape must be a threshold that checks something
/// ([`bound_problem`]); each one that is not is an error at its own key.
fn check_bounds(ctx: &Ctx<'_>, key: &str, metric: &str, shape: &MetricShape, errs: &mut Errs) {
    let values: Vec<(String, f64)> = match shape {
        MetricShape::Null => Vec::new(),
        MetricShape::Scalar(x) => vec![(key.to_string(), *x)],
        MetricShape::List(items) => items
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.map(|x| (format!("{key}[{i}]"), x)))
            .collect(),
        MetricShape::Dict(items) => items
            .iter()
            .filter_map(|(k, x)| x.map(|x| (format!("{key}.{k}"), x)))
            .collect(),
    };
    for (at, x) in values {
        if let Some(why) = bound_problem(metric, x) {
            errs.push(ctx.err(&at, why, bound_accepted(metric)));
        }
    }
}

fn parse_shape(ctx: &Ctx<'_>, key: &str, raw: &Value, errs: &mut Errs) -> Option<MetricShape> {
    let mut num = |k: String, v: &Value| -> Option<Option<f64>> {
        match v {
            Value::Null => Some(None),
            Value::Number(n) => Some(n.as_f64()),
            other => {
                errs.push(ctx.err(
                    &k,
                    format!("wrong type: got {}", json_type(other)),
                    "a number or null",
                ));
                None
            }
        }
    };
    match raw {
        Value::Null => Some(MetricShape::Null),
        Value::Number(n) => n.as_f64().map(MetricShape::Scalar),
        Value::Array(items) => {
            let vals: Vec<Option<Option<f64>>> = items
                .iter()
                .enumerate()
                .map(|(i, v)| num(format!("{key}[{i}]"), v))
                .collect();
            vals.iter()
                .all(Option::is_some)
                .then(|| MetricShape::List(vals.into_iter().flatten().collect()))
        }
        Value::Object(map) => {
            let vals: Vec<(String, Option<Option<f64>>)> = map
                .iter()
                .map(|(k, v)| (k.clone(), num(format!("{key}.{k}"), v)))
                .collect();
            vals.iter().all(|(_, v)| v.is_some()).then(|| {
                MetricShape::Dict(vals.into_iter().map(|(k, v)| (k, v.flatten())).collect())
            })
        }
        other => {
            errs.push(ctx.err(
                key,
                format!("unknown baseline shape: got {}", json_type(other)),
                SHAPE_ACCEPTED,
            ));
            None
        }
    }
}

impl BaselineSpec {
    /// Checks every bucket against the entry's steps (list long enough, dict has every
    /// step's key), so a broken `A3` bucket is caught on an `H100` runner too.
    pub(crate) fn check_steps(&self, ctx: &Ctx<'_>, steps: &[SweepStep], errs: &mut Errs) {
        let buckets: Vec<(String, &FlatBaseline)> = match self {
            BaselineSpec::Flat(f) => vec![("baseline".into(), f)],
            BaselineSpec::Nested(b) => b
                .iter()
                .map(|(hw, f)| (format!("baseline.{hw}"), f))
                .collect(),
        };
        for (prefix, flat) in buckets {
            for (metric, shape) in &flat.metrics {
                check_shape(ctx, &format!("{prefix}.{metric}"), shape, steps, errs);
            }
        }
    }

    /// The thresholds of one step for its own hardware label alone (no result buckets;
    /// [`BaselineSpec::resolve`] adds them).
    pub(super) fn own_thresholds(&self, step: &SweepStep, hardware: &str) -> Thresholds {
        let flat = match self {
            BaselineSpec::Flat(f) => f,
            BaselineSpec::Nested(buckets) => {
                let found = buckets.iter().find(|(hw, _)| hw == hardware).or_else(|| {
                    buckets
                        .iter()
                        .find(|(hw, _)| hw.eq_ignore_ascii_case(hardware))
                });
                match found {
                    Some((_, f)) => f,
                    None => {
                        let labels: Vec<&str> = buckets.iter().map(|(hw, _)| hw.as_str()).collect();
                        return Thresholds {
                            note: Some(format!(
                                "hardware-nested baseline has no bucket for `{hardware}` (buckets: {}): no inline thresholds",
                                labels.join(", ")
                            )),
                            ..Thresholds::default()
                        };
                    }
                }
            }
        };
        let mut out = Thresholds::default();
        for (metric, shape) in &flat.metrics {
            let Some(direction) = direction_of(metric) else {
                continue; // parsed metrics have a direction
            };
            match value_at(shape, step) {
                Some(base) => out.items.push(Threshold {
                    metric: metric.clone(),
                    value: with_tolerance(base, direction, flat.tolerance),
                    direction,
                    source: ThresholdSource::Inline,
                }),
                None => out.skipped.push(metric.clone()),
            }
        }
        if let Some(t) = flat.tolerance {
            let from = flat
                .source
                .as_deref()
                .map(|s| format!(", numbers from {s}"))
                .unwrap_or_default();
            out.note = Some(format!(
                "thresholds are the bucket's bases with regression_tolerance {t} applied{from}"
            ));
        }
        out
    }
}

/// `base × (1 − tol)` for higher-is-better metrics, `base × (1 + tol)` for lower-is-better
/// ones; `base` itself without a tolerance.
fn with_tolerance(base: f64, direction: Direction, tolerance: Option<f64>) -> f64 {
    match (tolerance, direction) {
        (None, _) => base,
        (Some(t), Direction::HigherIsBetter) => base * (1.0 - t),
        (Some(t), Direction::LowerIsBetter) => base * (1.0 + t),
    }
}

pub(super) fn value_at(shape: &MetricShape, step: &SweepStep) -> Option<f64> {
    match shape {
        MetricShape::Null => None,
        MetricShape::Scalar(x) => Some(*x),
        MetricShape::List(v) => v.get(step.index).copied().flatten(),
        MetricShape::Dict(d) => {
            let key = step.baseline_key();
            d.iter().find(|(k, _)| *k == key).and_then(|(_, v)| *v)
        }
    }
}

fn check_shape(
    ctx: &Ctx<'_>,
    key: &str,
    shape: &MetricShape,
    steps: &[SweepStep],
    errs: &mut Errs,
) {
    match shape {
        MetricShape::List(v) => {
            let needed = steps.iter().map(|s| s.index + 1).max().unwrap_or(0);
            if v.len() < needed {
                let count = |rate: bool| {
                    steps
                        .iter()
                        .filter(|s| matches!(s.kind, StepKind::RequestRate { .. }) == rate)
                        .count()
                };
                errs.push(ctx.err(
                    key,
                    format!(
                        "baseline list too short: {} value(s) but the entry has {} request-rate step(s) and {} concurrency step(s) (element [index within its sweep] is used)",
                        v.len(),
                        count(true),
                        count(false)
                    ),
                    "a list with at least one value per step of the longest sweep",
                ));
            }
        }
        MetricShape::Dict(d) => {
            let mut missing: Vec<String> = Vec::new();
            for s in steps {
                let k = s.baseline_key();
                if !d.iter().any(|(dk, _)| *dk == k) && !missing.contains(&k) {
                    missing.push(k);
                }
            }
            if !missing.is_empty() {
                let have: Vec<String> = d.iter().map(|(k, _)| format!("\"{k}\"")).collect();
                let missing: Vec<String> = missing.iter().map(|k| format!("\"{k}\"")).collect();
                errs.push(ctx.err(
                    key,
                    format!(
                        "baseline dict has no key for step(s) {} (keys present: {})",
                        missing.join(", "),
                        if have.is_empty() { "none".into() } else { have.join(", ") }
                    ),
                    "keys str(max_concurrency) for concurrency steps (\"16\") and Python str(request_rate) for request-rate steps (\"2.0\")",
                ));
            }
        }
        MetricShape::Null | MetricShape::Scalar(_) => {}
    }
}
