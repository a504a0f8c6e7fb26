//! Typed reads of raw JSON values: each pushes a [`ConfigError`] naming the key and what
//! is accepted when the value has the wrong type, and returns `None`.

use serde_json::{Map, Value};

use super::error::{ConfigError, Ctx, json_type};

/// Collects errors while a check runs.
pub(crate) type Errs = Vec<ConfigError>;

fn wrong(ctx: &Ctx<'_>, key: &str, v: &Value, accepted: &str) -> ConfigError {
    ctx.err(key, format!("wrong type: got {}", json_type(v)), accepted)
}

/// An optional string.
pub(crate) fn opt_str(
    ctx: &Ctx<'_>,
    key: &str,
    v: Option<&Value>,
    errs: &mut Errs,
) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        other => {
            errs.push(wrong(ctx, key, other, "a string"));
            None
        }
    }
}

/// An optional boolean.
pub(crate) fn opt_bool(
    ctx: &Ctx<'_>,
    key: &str,
    v: Option<&Value>,
    errs: &mut Errs,
) -> Option<bool> {
    match v? {
        Value::Bool(b) => Some(*b),
        other => {
            errs.push(wrong(ctx, key, other, "true or false"));
            None
        }
    }
}

/// An optional non-negative integer that fits `max`.
pub(crate) fn opt_uint(
    ctx: &Ctx<'_>,
    key: &str,
    v: Option<&Value>,
    max: u64,
    errs: &mut Errs,
) -> Option<u64> {
    let v = v?;
    match v.as_u64() {
        Some(n) if n <= max => Some(n),
        _ => {
            let problem = if v.is_number() {
                format!("invalid value {v}")
            } else {
                format!("wrong type: got {}", json_type(v))
            };
            errs.push(ctx.err(key, problem, &format!("an integer from 0 to {max}")));
            None
        }
    }
}

/// An optional object.
pub(crate) fn opt_object(
    ctx: &Ctx<'_>,
    key: &str,
    v: Option<&Value>,
    errs: &mut Errs,
) -> Option<Map<String, Value>> {
    match v? {
        Value::Object(m) => Some(m.clone()),
        other => {
            errs.push(wrong(ctx, key, other, "an object"));
            None
        }
    }
}

/// An optional list of strings.
pub(crate) fn opt_str_list(
    ctx: &Ctx<'_>,
    key: &str,
    v: Option<&Value>,
    errs: &mut Errs,
) -> Option<Vec<String>> {
    match v? {
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    other => errs.push(wrong(ctx, &format!("{key}[{i}]"), other, "a string")),
                }
            }
            Some(out)
        }
        other => {
            errs.push(wrong(ctx, key, other, "a list of strings"));
            None
        }
    }
}

/// An optional finite number from `lo` to `hi` (inclusive).
pub(crate) fn opt_f64_in(
    ctx: &Ctx<'_>,
    key: &str,
    v: Option<&Value>,
    (lo, hi): (f64, f64),
    errs: &mut Errs,
) -> Option<f64> {
    let v = v?;
    match v.as_f64() {
        Some(x) if (lo..=hi).contains(&x) => Some(x),
        _ => {
            let problem = if v.is_number() {
                format!("invalid value {v}")
            } else {
                format!("wrong type: got {}", json_type(v))
            };
            errs.push(ctx.err(key, problem, &format!("a number from {lo} to {hi}")));
            None
        }
    }
}
