//! Lenient booleans and truthiness, one place for every rule the workspace needs:
//! [`parse_bool`] reads on/off words (environment knobs, fault flags, query parameters)
//! under a [`BoolRule`] that says what the empty string and the one-letter forms mean;
//! [`python_truthy`] and `is_set` read JSON config values. The number readers
//! ([`number_of`], `opt_number`, `opt_u64`, `opt_u32`) read run folders whose
//! numbers vary in form (`"inf"` rates, numbers written as strings).

use serde::{Deserialize, Deserializer, de::Error};
use serde_json::Value;

/// How [`parse_bool`] reads a value besides the words `1`/`true`/`yes`/`on` and
/// `0`/`false`/`no`/`off` (trimmed, case-insensitive), which every rule accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoolRule {
    /// What the empty string means; `None`: it is not a boolean.
    pub empty: Option<bool>,
    /// Whether the one-letter forms `y`/`t` and `n`/`f` are accepted.
    pub letters: bool,
}

impl BoolRule {
    /// Environment knobs of the test fakes: empty is off, one-letter forms accepted.
    pub const ENV: BoolRule = BoolRule {
        empty: Some(false),
        letters: true,
    };
    /// A `name[=value]` switch (the simulator's faults): a bare name, i.e. an empty
    /// value, turns it on; no one-letter forms.
    pub const SWITCH: BoolRule = BoolRule {
        empty: Some(true),
        letters: false,
    };
    /// The eight words only: empty and one-letter forms are not booleans.
    pub const WORDS: BoolRule = BoolRule {
        empty: None,
        letters: false,
    };
}

/// `value` as a boolean under `rule`; `None` when it is not one.
pub fn parse_bool(value: &str, rule: BoolRule) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        "" => rule.empty,
        "y" | "t" if rule.letters => Some(true),
        "n" | "f" if rule.letters => Some(false),
        _ => None,
    }
}

/// Whether `value` is one of the true words of [`BoolRule::WORDS`]; missing, empty, false
/// and anything else are off (query parameters, opt-in test switches).
pub fn is_on(value: Option<&str>) -> bool {
    value.and_then(|v| parse_bool(v, BoolRule::WORDS)) == Some(true)
}

/// Python truthiness of a JSON value (`bool(params.get(key))`): missing, `null`, `false`,
/// `0`, `""`, `[]` and `{}` are false, everything else true.
pub fn python_truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// Whether a config key is switched on by being there: present and neither `null` nor
/// `false` (so `0` and `""` count as on), as the OmniInteract keys are read.
pub(crate) fn is_set(value: Option<&Value>) -> bool {
    !matches!(value, None | Some(Value::Null) | Some(Value::Bool(false)))
}

// Numbers of run folders whose JSON form varies: `"inf"` rates, numbers written as
// strings or integral floats.

/// A number, `"inf"` (→ infinity), a numeric string, `""` or null/absent (→ `None`).
pub(crate) fn opt_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Value::deserialize(d)?;
    number_of(&v).map_err(D::Error::custom)
}

/// A whole number ≥ 0 written as an integer, an integral float or a numeric string;
/// null/absent → `None`.
pub(crate) fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
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
pub(crate) fn opt_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match opt_u64(d)? {
        None => Ok(None),
        Some(n) => u32::try_from(n)
            .map(Some)
            .map_err(|_| D::Error::custom(format!("{n} is larger than {}", u32::MAX))),
    }
}

/// A value [`number_of`] cannot read as a number.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotANumber {
    /// A string that is neither a number, `""` nor `"inf"`.
    #[error("expected a number or \"inf\", got {0:?}")]
    Text(String),
    /// A boolean, list or object.
    #[error("expected a number or \"inf\", got {0}")]
    Other(Value),
}

/// The number `v` holds: `None` for null or `""`, infinity for `"inf"`.
pub fn number_of(v: &Value) -> Result<Option<f64>, NotANumber> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(n.as_f64()),
        Value::String(s) if s.eq_ignore_ascii_case("inf") => Ok(Some(f64::INFINITY)),
        Value::String(s) if s.is_empty() => Ok(None),
        Value::String(s) => s
            .parse::<f64>()
            .map(Some)
            .map_err(|_| NotANumber::Text(s.clone())),
        other => Err(NotANumber::Other(other.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_rule_reads_the_eight_words() {
        for rule in [BoolRule::ENV, BoolRule::SWITCH, BoolRule::WORDS] {
            for w in ["1", "true", "YES", " on "] {
                assert_eq!(parse_bool(w, rule), Some(true), "{w} {rule:?}");
            }
            for w in ["0", "False", "no", "OFF"] {
                assert_eq!(parse_bool(w, rule), Some(false), "{w} {rule:?}");
            }
            assert_eq!(parse_bool("maybe", rule), None);
            assert_eq!(parse_bool("2", rule), None);
        }
    }

    #[test]
    fn the_rules_differ_on_empty_and_letters() {
        assert_eq!(parse_bool("", BoolRule::ENV), Some(false));
        assert_eq!(parse_bool("  ", BoolRule::SWITCH), Some(true));
        assert_eq!(parse_bool("", BoolRule::WORDS), None);
        assert_eq!(parse_bool("y", BoolRule::ENV), Some(true));
        assert_eq!(parse_bool("T", BoolRule::ENV), Some(true));
        assert_eq!(parse_bool("n", BoolRule::ENV), Some(false));
        assert_eq!(parse_bool("f", BoolRule::ENV), Some(false));
        for l in ["y", "t", "n", "f"] {
            assert_eq!(parse_bool(l, BoolRule::SWITCH), None, "{l}");
            assert_eq!(parse_bool(l, BoolRule::WORDS), None, "{l}");
        }
    }

    #[test]
    fn is_on_is_true_words_only() {
        assert!(is_on(Some("1")));
        assert!(is_on(Some(" Yes")));
        for v in [None, Some(""), Some("0"), Some("y"), Some("junk")] {
            assert!(!is_on(v), "{v:?}");
        }
    }

    #[test]
    fn python_truthiness() {
        for v in [
            json!(true),
            json!(1),
            json!(-0.5),
            json!("x"),
            json!([0]),
            json!({"a": 0}),
        ] {
            assert!(python_truthy(Some(&v)), "{v}");
        }
        for v in [
            json!(false),
            json!(0),
            json!(0.0),
            json!(""),
            json!([]),
            json!({}),
            json!(null),
        ] {
            assert!(!python_truthy(Some(&v)), "{v}");
        }
        assert!(!python_truthy(None));
    }

    #[test]
    fn set_means_present_and_not_null_or_false() {
        for v in [json!(true), json!(0), json!(""), json!([])] {
            assert!(is_set(Some(&v)), "{v}");
        }
        assert!(!is_set(Some(&json!(false))));
        assert!(!is_set(Some(&json!(null))));
        assert!(!is_set(None));
    }

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
