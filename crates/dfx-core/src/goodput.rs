//! The entry key `goodput`: service level objectives a request must meet to count as
//! good, parsed once when the plan is built. The grammar is `vllm bench serve
//! --goodput`'s (`vllm/benchmarks/serve.py`, `parse_goodput` and `check_goodput_args`):
//! `KEY:VALUE` pairs, a string of pairs separated by spaces (`"ttft:100 tpot:50"`) or a
//! list of them (`["ttft:100", "tpot:50"]`), values in milliseconds. vllm knows `ttft`,
//! `tpot` and `e2el`; the native bench adds dfx-perf's speech SLOs `audio_ttfp` (ms),
//! `audio_rtf` (a ratio) and `continuity` (the largest playback underrun tolerated, ms).
//!
//! Stricter than vllm, deliberately: a value must be a positive finite number (vllm takes
//! 0, `inf` and `nan`), and a name given twice is an error (vllm keeps the last).

use serde::Serialize;
use serde_json::Value;

use crate::diag::{Ctx, Errs, json_type};
use crate::suggest;

/// One SLO name of the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Slo {
    /// Time to first token (ms); speech: to the first audio bytes.
    Ttft,
    /// Time per output token after the first (ms); 0 for one output token or none, as vllm.
    Tpot,
    /// End-to-end latency (ms).
    E2el,
    /// Time to the first audio packet (ms).
    AudioTtfp,
    /// Real-time factor: generation time / audio duration (ratio).
    AudioRtf,
    /// Largest playback underrun of the stream (ms), the continuity metric's deficit.
    Continuity,
}

impl Slo {
    /// Every name, vllm's three first.
    pub const ALL: [Slo; 6] = [
        Slo::Ttft,
        Slo::Tpot,
        Slo::E2el,
        Slo::AudioTtfp,
        Slo::AudioRtf,
        Slo::Continuity,
    ];

    /// The name as written in `goodput`.
    pub fn name(self) -> &'static str {
        match self {
            Slo::Ttft => "ttft",
            Slo::Tpot => "tpot",
            Slo::E2el => "e2el",
            Slo::AudioTtfp => "audio_ttfp",
            Slo::AudioRtf => "audio_rtf",
            Slo::Continuity => "continuity",
        }
    }

    /// Whether `vllm bench serve --goodput` knows the name (its `VALID_NAMES`).
    pub fn is_vllm(self) -> bool {
        matches!(self, Slo::Ttft | Slo::Tpot | Slo::E2el)
    }

    fn of(name: &str) -> Option<Slo> {
        Slo::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// One objective: the request's value of `slo` must be at most `bound`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SloBound {
    /// Which figure.
    pub slo: Slo,
    /// Its ceiling, in the SLO's unit (ms; `audio_rtf`: a ratio).
    pub bound: f64,
}

impl SloBound {
    /// Whether `value` meets the objective: `value <= bound`, bound included, as vllm's
    /// `calculate_metrics` compares (`s >= r` for SLO `s` and request value `r`).
    pub fn met(&self, value: f64) -> bool {
        value <= self.bound
    }
}

/// An entry's `goodput`: its objectives in the order written (at most one per name).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoodputSpec {
    slos: Vec<SloBound>,
}

/// Why a `goodput` value cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GoodputError {
    /// Neither a string nor a list of strings.
    #[error("wrong type: got {0}")]
    WrongType(&'static str),
    /// No pair at all.
    #[error("no SLO given")]
    Empty,
    /// A part that is not `KEY:VALUE`.
    #[error("{0:?} is not a KEY:VALUE pair")]
    NotAPair(String),
    /// A name the grammar does not know.
    #[error("unknown SLO name `{name}` ({hint})")]
    UnknownName {
        /// The name as written.
        name: String,
        /// The closest names, or all of them.
        hint: String,
    },
    /// A value that is not a positive finite number.
    #[error("SLO `{name}`: value {value:?} is not a positive finite number")]
    BadValue {
        /// The SLO name.
        name: &'static str,
        /// The value as written.
        value: String,
    },
    /// A name given twice.
    #[error("SLO `{0}` is given twice")]
    Duplicate(&'static str),
}

/// What `goodput` accepts, for config errors.
pub const ACCEPTED: &str = "\"KEY:VALUE\" pairs, a string separated by spaces (\"ttft:100 \
tpot:50\") or a list of strings; KEY one of ttft, tpot, e2el (ms, vllm's), audio_ttfp (ms), \
audio_rtf (ratio), continuity (largest underrun, ms); VALUE a positive number";

impl GoodputSpec {
    /// Parses the key's value (see the module doc).
    pub fn parse(v: &Value) -> Result<Self, GoodputError> {
        let parts: Vec<&str> = match v {
            Value::String(s) => s.split_whitespace().collect(),
            Value::Array(items) => {
                let mut parts = Vec::new();
                for item in items {
                    let s = item
                        .as_str()
                        .ok_or(GoodputError::WrongType("a list item"))?;
                    parts.extend(s.split_whitespace());
                }
                parts
            }
            other => return Err(GoodputError::WrongType(json_type(other))),
        };
        if parts.is_empty() {
            return Err(GoodputError::Empty);
        }
        let mut slos: Vec<SloBound> = Vec::new();
        for part in parts {
            let b = parse_pair(part)?;
            if slos.iter().any(|s| s.slo == b.slo) {
                return Err(GoodputError::Duplicate(b.slo.name()));
            }
            slos.push(b);
        }
        Ok(GoodputSpec { slos })
    }

    /// The objectives, in the order written.
    pub fn slos(&self) -> &[SloBound] {
        &self.slos
    }

    /// The first objective `vllm bench serve` would not know (a dfx-perf speech SLO).
    pub fn first_non_vllm(&self) -> Option<Slo> {
        self.slos.iter().map(|s| s.slo).find(|s| !s.is_vllm())
    }

    /// The bound of `slo`, when given.
    pub fn bound(&self, slo: Slo) -> Option<f64> {
        self.slos.iter().find(|s| s.slo == slo).map(|s| s.bound)
    }
}

/// `KEY:VALUE` (exactly one `:`, as vllm's `split(":")` unpacking demands).
fn parse_pair(part: &str) -> Result<SloBound, GoodputError> {
    let mut it = part.split(':');
    let (Some(name), Some(value), None) = (it.next(), it.next(), it.next()) else {
        return Err(GoodputError::NotAPair(part.to_string()));
    };
    let slo = Slo::of(name).ok_or_else(|| GoodputError::UnknownName {
        name: name.to_string(),
        hint: suggest::hint(
            name,
            Slo::ALL.iter().map(|s| s.name()),
            "accepted: ttft, tpot, e2el, audio_ttfp, audio_rtf, continuity",
        ),
    })?;
    let bound = value
        .parse::<f64>()
        .ok()
        .filter(|b| b.is_finite() && *b > 0.0)
        .ok_or_else(|| GoodputError::BadValue {
            name: slo.name(),
            value: value.to_string(),
        })?;
    Ok(SloBound { slo, bound })
}

/// The entry key `goodput` (absent or `null`: none); an error names the key and what it
/// accepts.
pub(crate) fn goodput_key(
    ctx: &Ctx<'_>,
    v: Option<&Value>,
    errs: &mut Errs,
) -> Option<GoodputSpec> {
    let v = v.filter(|v| !v.is_null())?;
    GoodputSpec::parse(v)
        .map_err(|e| errs.push(ctx.err("goodput", e.to_string(), ACCEPTED)))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Vec<(Slo, f64)>, GoodputError> {
        GoodputSpec::parse(&v).map(|g| g.slos().iter().map(|s| (s.slo, s.bound)).collect())
    }

    #[test]
    fn string_and_list_read_alike() {
        let want = vec![(Slo::Ttft, 100.0), (Slo::Tpot, 50.0)];
        assert_eq!(parse(json!("ttft:100 tpot:50")).unwrap(), want);
        assert_eq!(parse(json!(["ttft:100", "tpot:50"])).unwrap(), want);
        let speech = parse(json!(
            "audio_ttfp:250 audio_rtf:0.5 continuity:100 e2el:2e3"
        ));
        assert_eq!(
            speech.unwrap(),
            vec![
                (Slo::AudioTtfp, 250.0),
                (Slo::AudioRtf, 0.5),
                (Slo::Continuity, 100.0),
                (Slo::E2el, 2000.0)
            ]
        );
    }

    #[test]
    fn unknown_names_get_the_closest() {
        let e = parse(json!("audio_ttft:100")).unwrap_err();
        assert!(e.to_string().contains("closest: audio_ttfp"), "{e}");
        let e = parse(json!(["tpt:5"])).unwrap_err();
        assert!(matches!(e, GoodputError::UnknownName { .. }), "{e}");
    }

    #[test]
    fn values_must_be_positive_finite_numbers() {
        for bad in [
            "ttft:0", "ttft:-1", "ttft:inf", "ttft:NaN", "ttft:", "ttft:1ms",
        ] {
            let e = parse(json!(bad)).unwrap_err();
            assert!(
                matches!(e, GoodputError::BadValue { name: "ttft", .. }),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn malformed_values_are_refused() {
        assert_eq!(
            parse(json!("ttft")),
            Err(GoodputError::NotAPair("ttft".into()))
        );
        assert!(matches!(
            parse(json!("ttft:1:2")),
            Err(GoodputError::NotAPair(_))
        ));
        assert_eq!(parse(json!("  ")), Err(GoodputError::Empty));
        assert_eq!(parse(json!([])), Err(GoodputError::Empty));
        assert!(matches!(parse(json!(100)), Err(GoodputError::WrongType(_))));
        assert!(matches!(parse(json!([1])), Err(GoodputError::WrongType(_))));
        assert_eq!(
            parse(json!("e2el:1 e2el:2")),
            Err(GoodputError::Duplicate("e2el"))
        );
    }

    #[test]
    fn the_bound_itself_is_met() {
        let b = SloBound {
            slo: Slo::Ttft,
            bound: 100.0,
        };
        assert!(b.met(100.0));
        assert!(b.met(99.9));
        assert!(!b.met(100.000_001));
    }

    #[test]
    fn vllm_names_are_told_apart() {
        let g = GoodputSpec::parse(&json!("ttft:1 e2el:2")).unwrap();
        assert_eq!(g.first_non_vllm(), None);
        let g = GoodputSpec::parse(&json!("ttft:1 continuity:100")).unwrap();
        assert_eq!(g.first_non_vllm(), Some(Slo::Continuity));
        assert_eq!(g.bound(Slo::Continuity), Some(100.0));
        assert_eq!(g.bound(Slo::Tpot), None);
    }
}
