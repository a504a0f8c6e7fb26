//! Typed keys of the entries without a sweep (contract, stability and native-duplex
//! entries), parsed and checked when the plan is built (`config/runners.rs`); the benches
//! read these, not the entry's JSON.

use serde::Serialize;
use serde_json::{Map, Value};

/// Per-request timeout of a contract entry without `timeout_s`, seconds.
pub(crate) const DEFAULT_CONTRACT_TIMEOUT_S: f64 = 30.0;

/// Soak duration of a stability entry without `duration_sec`, seconds.
pub const DEFAULT_SOAK_DURATION_S: f64 = 300.0;

/// Text length of a soak request without `random_input_len`, words.
pub(crate) const DEFAULT_SOAK_WORDS: u64 = 20;

/// Longest text of a soak request, words (a TTS request of 1000 tokens is already long);
/// longer `random_input_len` bounds are cut to it, shorter than 1 raised to 1.
pub const MAX_SOAK_WORDS: u64 = 4000;

/// Upstream's default `timeout_s` of a native-duplex wait, seconds.
pub(crate) const DEFAULT_DUPLEX_TIMEOUT_S: f64 = 180.0;

/// Longest native-duplex `timeout_s` the native bench runs, seconds.
pub(crate) const MAX_DUPLEX_TIMEOUT_S: f64 = 86_400.0;

/// What `random_input_len` of a stability entry accepts, for config errors.
pub(crate) const SOAK_WORDS_ACCEPTED: &str =
    "a number, [lo, hi], {\"min\": lo, \"max\": hi} or \"lo-hi\" (words)";

/// The runner keys of an entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(tag = "runner", rename_all = "snake_case")]
pub enum RunnerKeys {
    /// A sweep entry (omni or diffusion dialect): nothing here.
    #[default]
    None,
    /// A contract entry (`"benchmark_runner": "contract"`).
    Contract(ContractKeys),
    /// A stability (soak) entry.
    Stability(SoakKeys),
    /// A native-duplex entry (`"benchmark_runner": "native-duplex"`).
    NativeDuplex(DuplexKeys),
}

/// A contract entry's scenarios and timeout.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContractKeys {
    /// The scenarios it runs, in catalogue order ([`crate::contract::selected`]).
    pub scenarios: Vec<&'static str>,
    /// `timeout_s`: per request, seconds (default `DEFAULT_CONTRACT_TIMEOUT_S`).
    pub timeout_s: f64,
}

/// A stability entry's soak: how long, and how long its random texts are.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SoakKeys {
    /// `duration_sec` (default [`DEFAULT_SOAK_DURATION_S`]), before `--duration-scale`.
    pub duration_s: f64,
    /// `random_input_len` as an inclusive range of words, low first, within 1 to
    /// [`MAX_SOAK_WORDS`] (default `DEFAULT_SOAK_WORDS` both).
    pub words: (u64, u64),
}

/// A native-duplex entry's keys as the native bench runs them. Their types and bounds
/// are checked at load (`sessions`, `turns` positive, `warmups` positive, `repeats` at
/// least 2, `timeout_s` seconds, `realtime_input` a boolean, `profile_stages` a list of
/// strings); what only the native bench cannot run (a missing count, another `workload`,
/// a non-empty `profile_stages`) still loads and is its reason to refuse the entry
/// (`dfx_bench::native::duplex::supports`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DuplexKeys {
    /// `workload` (upstream's runner knows `native-duplex-audio` only).
    pub workload: Option<String>,
    /// `sessions`: concurrent sessions of a trial.
    pub sessions: Option<u64>,
    /// `turns`: spoken turns of a session.
    pub turns: Option<u64>,
    /// `warmups`: trials run and left out before the measured ones.
    pub warmups: Option<u64>,
    /// `repeats`: measured trials.
    pub repeats: Option<u64>,
    /// `realtime_input` (default true; the loader refuses a value that is not a boolean).
    pub realtime_input: bool,
    /// `timeout_s` of each wait, seconds (default `DEFAULT_DUPLEX_TIMEOUT_S`; checked at
    /// load: more than 0 and at most `MAX_DUPLEX_TIMEOUT_S`).
    pub timeout_s: f64,
    /// `profile_stages` is a non-empty list.
    pub profile_stages: bool,
}

impl DuplexKeys {
    /// Reads the keys of a native-duplex entry (its JSON object as written), with
    /// `timeout_s` and `profile_stages` as the loader checked them.
    pub fn read(raw: &Map<String, Value>, timeout_s: f64, profile_stages: bool) -> DuplexKeys {
        let count = |k: &str| raw.get(k).and_then(Value::as_u64);
        DuplexKeys {
            workload: raw
                .get("workload")
                .and_then(Value::as_str)
                .map(String::from),
            sessions: count("sessions"),
            turns: count("turns"),
            warmups: count("warmups"),
            repeats: count("repeats"),
            realtime_input: raw
                .get("realtime_input")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            timeout_s,
            profile_stages,
        }
    }
}

impl RunnerKeys {
    /// The contract keys, for a contract entry.
    pub fn contract(&self) -> Option<&ContractKeys> {
        match self {
            RunnerKeys::Contract(k) => Some(k),
            _ => None,
        }
    }

    /// The native-duplex keys, for a native-duplex entry.
    pub fn duplex(&self) -> Option<&DuplexKeys> {
        match self {
            RunnerKeys::NativeDuplex(k) => Some(k),
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
pub(crate) fn soak_words(v: &serde_json::Value) -> Option<(u64, u64)> {
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

    #[test]
    fn duplex_keys_as_the_native_bench_reads_them() {
        let raw = |v: Value| v.as_object().unwrap().clone();
        let k = DuplexKeys::read(
            &raw(
                json!({"workload": "native-duplex-audio", "sessions": 2, "turns": 3,
                "warmups": 1, "repeats": 2, "realtime_input": false}),
            ),
            5.5,
            true,
        );
        assert_eq!(k.workload.as_deref(), Some("native-duplex-audio"));
        assert_eq!(
            (k.sessions, k.turns, k.warmups, k.repeats),
            (Some(2), Some(3), Some(1), Some(2))
        );
        assert!(!k.realtime_input && k.profile_stages);
        assert_eq!(k.timeout_s, 5.5);
        let k = DuplexKeys::read(&raw(json!({"realtime_input": "no"})), 180.0, false);
        assert_eq!((k.workload, k.sessions), (None, None));
        assert!(k.realtime_input && !k.profile_stages);
    }
}
