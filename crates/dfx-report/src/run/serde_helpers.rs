//! Lenient readers for values whose JSON type varies (`"inf"` rates, direction names).

use dfx_core::baseline::Direction;
use serde::{Deserialize, Deserializer, de::Error};
use serde_json::Value;

/// A number, `"inf"` (→ infinity), a numeric string, or null/absent (→ `None`).
pub fn opt_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Value::deserialize(d)?;
    number_of(&v).map_err(D::Error::custom)
}

pub(crate) fn number_of(v: &Value) -> Result<Option<f64>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(n.as_f64()),
        Value::String(s) if s.eq_ignore_ascii_case("inf") => Ok(Some(f64::INFINITY)),
        Value::String(s) if s.is_empty() => Ok(None),
        Value::String(s) => s
            .parse::<f64>()
            .map(Some)
            .map_err(|_| format!("expected a number or \"inf\", got {s:?}")),
        other => Err(format!("expected a number or \"inf\", got {other}")),
    }
}

/// `higher_is_better` / `lower_is_better`.
pub fn direction<'de, D: Deserializer<'de>>(d: D) -> Result<Direction, D::Error> {
    let s = String::deserialize(d)?;
    parse_direction(&s).ok_or_else(|| {
        D::Error::custom(format!(
            "unknown direction {s:?} (accepted: higher_is_better, lower_is_better)"
        ))
    })
}

/// Parses the serialised form of [`Direction`].
pub fn parse_direction(s: &str) -> Option<Direction> {
    match s {
        "higher_is_better" => Some(Direction::HigherIsBetter),
        "lower_is_better" => Some(Direction::LowerIsBetter),
        _ => None,
    }
}
