//! Readers for values whose JSON form varies between run folders: `"inf"` rates, numbers
//! written as strings or floats, `null` for a non-finite float.

use serde::{Deserialize, Deserializer, de::Error};
use serde_json::Value;

/// A number, `"inf"` (→ infinity), a numeric string, `""` or null/absent (→ `None`).
pub fn opt_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Value::deserialize(d)?;
    number_of(&v).map_err(D::Error::custom)
}

/// A whole number ≥ 0 written as an integer, an integral float or a numeric string;
/// null/absent → `None`.
pub fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Value::deserialize(d)?;
    match number_of(&v).map_err(D::Error::custom)? {
        None => Ok(None),
        Some(x) if x.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&x) => Ok(Some(x as u64)),
        Some(x) => Err(D::Error::custom(format!(
            "expected a whole number >= 0, got {x}"
        ))),
    }
}

/// [`opt_u64`] narrowed to `u32`.
pub fn opt_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match opt_u64(d)? {
        None => Ok(None),
        Some(n) => u32::try_from(n)
            .map(Some)
            .map_err(|_| D::Error::custom(format!("{n} is larger than {}", u32::MAX))),
    }
}

/// The number `v` holds: `None` for null or `""`, infinity for `"inf"`.
pub fn number_of(v: &Value) -> Result<Option<f64>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_in_every_recorded_form() {
        assert_eq!(number_of(&json!("inf")).unwrap(), Some(f64::INFINITY));
        assert_eq!(number_of(&json!("2.5")).unwrap(), Some(2.5));
        assert_eq!(number_of(&json!(null)).unwrap(), None);
        assert_eq!(number_of(&json!("")).unwrap(), None);
        assert!(number_of(&json!("fast")).is_err());
        assert!(number_of(&json!([1])).is_err());
        let u = |v: Value| opt_u64(v).map_err(|e| e.to_string());
        assert_eq!(u(json!(8.0)).unwrap(), Some(8));
        assert_eq!(u(json!("16")).unwrap(), Some(16));
        assert!(u(json!(1.5)).is_err());
        assert!(u(json!(-1)).is_err());
        assert!(opt_u32(json!(5_000_000_000u64)).is_err());
    }
}
