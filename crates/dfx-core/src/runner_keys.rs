//! Typed keys of the entries without a sweep whose runner needs more than the common
//! fields (contract and stability entries), parsed and checked when the plan is built
//! (`config/runners.rs`); the benches read these, not the entry's JSON.

use serde::Serialize;

/// Per-request timeout of a contract entry without `timeout_s`, seconds.
pub const DEFAULT_CONTRACT_TIMEOUT_S: f64 = 30.0;

/// Soak duration of a stability entry without `duration_sec`, seconds.
pub const DEFAULT_SOAK_DURATION_S: f64 = 300.0;

/// Text length of a soak request without `random_input_len`, words.
pub const DEFAULT_SOAK_WORDS: u64 = 20;

/// Longest text of a soak request, words (a TTS request of 1000 tokens is already long);
/// longer `random_input_len` bounds are cut to it, shorter than 1 raised to 1.
pub const MAX_SOAK_WORDS: u64 = 4000;

/// What `random_input_len` of a stability entry accepts, for config errors.
pub const SOAK_WORDS_ACCEPTED: &str =
    "a number, [lo, hi], {\"min\": lo, \"max\": hi} or \"lo-hi\" (words)";

/// The runner keys of an entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(tag = "runner", rename_all = "snake_case")]
pub enum RunnerKeys {
    /// A sweep entry (omni or diffusion dialect) or a native-duplex entry: nothing here.
    #[default]
    None,
    /// A contract entry (`"benchmark_runner": "contract"`).
    Contract(ContractKeys),
    /// A stability (soak) entry.
    Stability(SoakKeys),
}

/// A contract entry's scenarios and timeout.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContractKeys {
    /// The scenarios it runs, in catalogue order ([`crate::contract::selected`]).
    pub scenarios: Vec<&'static str>,
    /// `timeout_s`: per request, seconds (default [`DEFAULT_CONTRACT_TIMEOUT_S`]).
    pub timeout_s: f64,
}

/// A stability entry's soak: how long, and how long its random texts are.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SoakKeys {
    /// `duration_sec` (default [`DEFAULT_SOAK_DURATION_S`]), before `--duration-scale`.
    pub duration_s: f64,
    /// `random_input_len` as an inclusive range of words, low first, within 1 to
    /// [`MAX_SOAK_WORDS`] (default [`DEFAULT_SOAK_WORDS`] both).
    pub words: (u64, u64),
}

impl RunnerKeys {
    /// The contract keys, for a contract entry.
    pub fn contract(&self) -> Option<&ContractKeys> {
        match self {
            RunnerKeys::Contract(k) => Some(k),
            _ => None,
        }
    }

    /// The soak keys, for a stability entry.
    pub fn soak(&self) -> Option<&SoakKeys> {
        match self {
            RunnerKeys::Stability(k) => Some(k),
            _ => None,
        }
    }
}

/// `random_input_len` in upstream's forms (a number, `[lo, hi]`, `{"min", "max"}`,
/// `"lo-hi"` or `"n"`), as words within 1 to [`MAX_SOAK_WORDS`], reversed bounds
/// swapped; `None` when it has none of these forms.
pub fn soak_words(v: &serde_json::Value) -> Option<(u64, u64)> {
    use serde_json::Value;
    let pair = match v {
        Value::Number(n) => (n.as_u64()?, n.as_u64()?),
        Value::Array(a) if a.len() == 2 => (a[0].as_u64()?, a[1].as_u64()?),
        Value::Object(o) => (o.get("min")?.as_u64()?, o.get("max")?.as_u64()?),
        Value::String(s) => match s.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => (s.trim().parse().ok()?, s.trim().parse().ok()?),
        },
        _ => return None,
    };
    let (lo, hi) = (
        pair.0.clamp(1, MAX_SOAK_WORDS),
        pair.1.clamp(1, MAX_SOAK_WORDS),
    );
    Some((lo.min(hi), lo.max(hi)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn soak_words_in_upstream_forms() {
        for (v, want) in [
            (json!(5), (5, 5)),
            (json!([9, 3]), (3, 9)),
            (json!({"min": 0, "max": 1000}), (1, 1000)),
            (json!({"min": 0, "max": 99999}), (1, MAX_SOAK_WORDS)),
            (json!("10-20"), (10, 20)),
            (json!("7"), (7, 7)),
        ] {
            assert_eq!(soak_words(&v), Some(want), "{v}");
        }
        for bad in [
            json!("x"),
            json!([1]),
            json!(-3),
            json!(true),
            json!({"min": 1}),
        ] {
            assert_eq!(soak_words(&bad), None, "{bad}");
        }
    }
}
