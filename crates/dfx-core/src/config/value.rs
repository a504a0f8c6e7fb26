//! Typed reads of raw JSON values: each pushes a [`ConfigError`](crate::diag::ConfigError) naming the key and what
//! is accepted when the value has the wrong type, and returns `None`.

use std::num::NonZeroU64;

use serde_json::{Map, Value};

use crate::bounds::MAX_NAME_CHARS;
use crate::diag::{ConfigError, Ctx, Errs, json_type};

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

/// An optional string that becomes part of a trial name: at most [`MAX_NAME_CHARS`]
/// characters.
pub(crate) fn opt_name(
    ctx: &Ctx<'_>,
    key: &str,
    v: Option<&Value>,
    errs: &mut Errs,
) -> Option<String> {
    let s = opt_str(ctx, key, v, errs)?;
    name_fits(ctx, key, s, errs)
}

/// `s` when it is at most [`MAX_NAME_CHARS`] characters; otherwise an error naming `key`.
pub(crate) fn name_fits(ctx: &Ctx<'_>, key: &str, s: String, errs: &mut Errs) -> Option<String> {
    let chars = s.chars().count();
    if chars <= MAX_NAME_CHARS {
        return Some(s);
    }
    errs.push(ctx.err(
        key,
        format!("{chars} characters is too long for a name"),
        &format!("a string of at most {MAX_NAME_CHARS} characters"),
    ));
    None
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
    opt_uint_in(ctx, key, v, (0, max), errs)
}

/// An optional count from 1 to `max`, as a type that cannot be zero: `None` when absent
/// or refused (the refusal pushed, `invalid value 0 (accepted: an integer from 1 to max)`).
pub(crate) fn opt_count(
    ctx: &Ctx<'_>,
    key: &str,
    v: Option<&Value>,
    max: u64,
    errs: &mut Errs,
) -> Option<NonZeroU64> {
    opt_uint_in(ctx, key, v, (1, max), errs).and_then(NonZeroU64::new)
}

/// An optional integer from `lo` to `hi`.
pub(crate) fn opt_uint_in(
    ctx: &Ctx<'_>,
    key: &str,
    v: Option<&Value>,
    (lo, hi): (u64, u64),
    errs: &mut Errs,
) -> Option<u64> {
    let v = v?;
    match v.as_u64() {
        Some(n) if (lo..=hi).contains(&n) => Some(n),
        _ => {
            let problem = if v.is_number() {
                format!("invalid value {v}")
            } else {
                format!("wrong type: got {}", json_type(v))
            };
            errs.push(ctx.err(key, problem, &format!("an integer from {lo} to {hi}")));
            None
        }
    }
}

/// An optional duration in seconds, more than 0 and at most `max`; pushes the error and
/// gives `None` otherwise.
pub(crate) fn check_seconds(
    ctx: &Ctx<'_>,
    key: &str,
    v: Option<&Value>,
    max: f64,
    errs: &mut Errs,
) -> Option<f64> {
    let v = v?;
    let secs = v.as_f64().filter(|d| *d > 0.0 && *d <= max);
    if secs.is_none() {
        errs.push(ctx.err(
            key,
            format!("invalid value {v}"),
            &format!("seconds > 0 and at most {max}"),
        ));
    }
    secs
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_at_most_max_name_chars_characters() {
        let file = std::path::Path::new("x.json");
        let ctx = Ctx::new(file).case(0).entry(1);
        let mut errs = Vec::new();
        let fits = "é".repeat(MAX_NAME_CHARS);
        assert_eq!(name_fits(&ctx, "name", fits.clone(), &mut errs), Some(fits));
        assert!(errs.is_empty());
        let long = Value::String("n".repeat(MAX_NAME_CHARS + 1));
        assert_eq!(opt_name(&ctx, "name", Some(&long), &mut errs), None);
        let msg = errs[0].to_string();
        assert!(
            msg.contains("key `name`") && msg.contains("257 characters"),
            "{msg}"
        );
    }
}
