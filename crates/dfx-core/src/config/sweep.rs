//! Sweep expansion, exactly the upstream rule (`docs/config.md` ("Sweep expansion")):
//! `to_list` each of `request_rate`, `max_concurrency`, `num_prompts`;
//! `L = max(len(rate), len(conc))`; one `num_prompts` value is repeated `L` times; a
//! length-1 sweep list is repeated to `len(num_prompts)`; any other length mismatch is an
//! error. Request-rate steps come first (`zip(rate, num_prompts)`, index `i`), then
//! concurrency steps (`zip(conc, num_prompts)`, index restarting at 0). Python's `zip`
//! truncation is kept: with 2 rates, 3 concurrencies and 1 prompt count there are 2 + 3
//! steps. An entry without any sweep key is an error (upstream silently ran nothing).

use std::collections::HashMap;
use std::num::{NonZeroU32, NonZeroU64};

use serde_json::Value;

use super::known_keys::entry::{MAX_CONCURRENCY_KEY, NUM_PROMPTS};
use crate::bounds::{MAX_RATE, MAX_SCHEDULE_SECONDS, MIN_RATE};

/// The largest `num_prompts` of a step: its key-table row's bound.
const MAX_PROMPTS: u64 = NUM_PROMPTS.int_max();
/// The largest `max_concurrency` of a step: its key-table row's bound.
const MAX_CONCURRENCY: u64 = MAX_CONCURRENCY_KEY.int_max();
use crate::diag::{ConfigError, Ctx, json_type};
use crate::load::LoadShape;
use crate::plan::{StepKind, SweepStep, python_float_str};

/// Why a sweep cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepError {
    /// Neither `request_rate` nor `max_concurrency` has a value.
    NoSweep,
    /// A sweep but no `num_prompts`.
    NoPrompts,
    /// `len(num_prompts)` fits neither rule.
    Mismatch {
        /// The `num_prompts` list's length.
        prompts: usize,
        /// The `request_rate` list's length.
        rates: usize,
        /// The `max_concurrency` list's length.
        concs: usize,
    },
}

/// Expands validated sweep lists into steps with their labels.
pub fn expand(
    rates: &[f64],
    concs: &[NonZeroU32],
    prompts: &[NonZeroU64],
) -> Result<Vec<SweepStep>, SweepError> {
    let l = rates.len().max(concs.len());
    if l == 0 {
        return Err(SweepError::NoSweep);
    }
    if prompts.is_empty() {
        return Err(SweepError::NoPrompts);
    }
    let (mut rates, mut concs, mut prompts) = (rates.to_vec(), concs.to_vec(), prompts.to_vec());
    if prompts.len() == 1 && l > 1 {
        prompts = vec![prompts[0]; l];
    } else if l == 1 && prompts.len() > 1 {
        if rates.len() == 1 {
            rates = vec![rates[0]; prompts.len()];
        }
        if concs.len() == 1 {
            concs = vec![concs[0]; prompts.len()];
        }
    } else if prompts.len() != l {
        return Err(SweepError::Mismatch {
            prompts: prompts.len(),
            rates: rates.len(),
            concs: concs.len(),
        });
    }
    let rate_steps = rates
        .iter()
        .zip(&prompts)
        .enumerate()
        .map(|(i, (&r, &n))| step(StepKind::RequestRate { request_rate: r }, i, n));
    let conc_steps = concs
        .iter()
        .zip(&prompts)
        .enumerate()
        .map(|(i, (&c, &n))| step(StepKind::Concurrency { max_concurrency: c }, i, n));
    let mut steps: Vec<SweepStep> = rate_steps.chain(conc_steps).collect();
    label_steps(&mut steps);
    Ok(steps)
}

fn step(kind: StepKind, index: usize, num_prompts: NonZeroU64) -> SweepStep {
    SweepStep {
        kind,
        index,
        num_prompts,
        label: String::new(),
    }
}

/// `c16` / `qps2.0`, with `_<index>` appended only to labels that would repeat.
fn label_steps(steps: &mut [SweepStep]) {
    let base: Vec<String> = steps
        .iter()
        .map(|s| match s.kind {
            StepKind::Concurrency { max_concurrency } => format!("c{max_concurrency}"),
            StepKind::RequestRate { request_rate } => {
                format!("qps{}", python_float_str(request_rate))
            }
        })
        .collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for b in &base {
        *counts.entry(b.as_str()).or_default() += 1;
    }
    for (s, b) in steps.iter_mut().zip(&base) {
        s.label = if counts[b.as_str()] > 1 {
            format!("{b}_{}", s.index)
        } else {
            b.clone()
        };
    }
}

/// The three sweep keys of an entry, as written, with the names the dialect uses.
pub(crate) struct SweepKeys<'a> {
    pub rate: (&'a str, Option<&'a Value>),
    pub conc: (&'a str, Option<&'a Value>),
    pub prompts: (&'a str, Option<&'a Value>),
}

/// Validates the sweep values and expands them; every problem becomes an error, and so
/// does an open-loop step whose upstream schedule would be too long.
pub(crate) fn expand_entry(
    ctx: &Ctx<'_>,
    keys: &SweepKeys<'_>,
) -> Result<Vec<SweepStep>, Vec<ConfigError>> {
    let steps = expand_unbounded(ctx, keys)?;
    let long: Vec<ConfigError> = steps
        .iter()
        .filter_map(|s| schedule_too_long(ctx, keys.rate.0, s, &LoadShape::Steady))
        .collect();
    if long.is_empty() {
        Ok(steps)
    } else {
        Err(long)
    }
}

/// [`expand_entry`] without the schedule bound (the caller checks it with the entry's
/// load shape, [`schedule_too_long`]).
pub(crate) fn expand_unbounded(
    ctx: &Ctx<'_>,
    keys: &SweepKeys<'_>,
) -> Result<Vec<SweepStep>, Vec<ConfigError>> {
    let mut errs = Vec::new();
    let rates = to_list(ctx, keys.rate, &mut errs, rate, &rate_accepted(true));
    let concs = to_list(
        ctx,
        keys.conc,
        &mut errs,
        concurrency,
        &concurrency_accepted(true),
    );
    let prompts = to_list(
        ctx,
        keys.prompts,
        &mut errs,
        |x| positive_int(x, MAX_PROMPTS),
        &format!("integers from 1 to {MAX_PROMPTS}, or a list of them"),
    );
    if !errs.is_empty() {
        return Err(errs);
    }
    expand(&rates, &concs, &prompts).map_err(|e| vec![sweep_error(ctx, keys, e)])
}

/// An open-loop step whose arrivals, spread by `shape`, would span more than
/// [`MAX_SCHEDULE_SECONDS`] ([`LoadShape::expected_span`]); reported on `key`.
pub(crate) fn schedule_too_long(
    ctx: &Ctx<'_>,
    key: &str,
    s: &SweepStep,
    shape: &LoadShape,
) -> Option<ConfigError> {
    let StepKind::RequestRate { request_rate } = s.kind else {
        return None;
    };
    let span = shape.expected_span(s.num_prompts.get(), request_rate);
    (span > MAX_SCHEDULE_SECONDS).then(|| {
        ctx.err(
            key,
            format!(
                "step {}: {} requests at {} would take {span:.0} s to send",
                s.label,
                s.num_prompts,
                shape.describe(s.num_prompts.get(), request_rate)
            ),
            &format!(
                "a rate and count whose schedule spans at most {MAX_SCHEDULE_SECONDS} s \
                 ((num_prompts - 1) / request_rate)"
            ),
        )
    })
}

fn sweep_error(ctx: &Ctx<'_>, keys: &SweepKeys<'_>, e: SweepError) -> ConfigError {
    let (rate, conc, prompts) = (keys.rate.0, keys.conc.0, keys.prompts.0);
    match e {
        SweepError::NoSweep => ctx.err(
            &format!("{rate}/{conc}"),
            format!(
                "entry has no sweep: neither `{rate}` nor `{conc}` is set, so it would run nothing"
            ),
            &format!("`{conc}` (int or list) and/or `{rate}` (number or list)"),
        ),
        SweepError::NoPrompts => ctx.err(
            prompts,
            format!("`{prompts}` is missing; every sweep step needs a request count"),
            "a positive integer or a list with one value per sweep step",
        ),
        SweepError::Mismatch {
            prompts: np,
            rates,
            concs,
        } => ctx.err(
            prompts,
            format!(
                "sweep length mismatch: `{prompts}` has {np} value(s) but the sweep has {} \
                 (`{rate}` has {rates}, `{conc}` has {concs})",
                rates.max(concs)
            ),
            &format!(
                "one `{prompts}` value (used for every step), one per step, or a single-value \
                 sweep with several `{prompts}` values"
            ),
        ),
    }
}

/// Why one value of a sweep key (`request_rate`, `max_concurrency`, `num_prompts`) is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum StepValueError {
    /// A rate outside the accepted range.
    #[error("invalid value {0}: must be from {MIN_RATE} to {MAX_RATE}")]
    RateOutOfRange(Value),
    /// Zero or a negative number.
    #[error("invalid value {0}: must be greater than zero")]
    NotPositive(Value),
    /// A fractional count.
    #[error("invalid value {0}: must be a whole number")]
    NotWhole(Value),
    /// A count outside `1..=max`.
    #[error("invalid value {value}: must be from 1 to {max}")]
    CountOutOfRange {
        /// The value as written.
        value: Value,
        /// The largest accepted count.
        max: u64,
    },
    /// Not a number.
    #[error("wrong type: got {0}")]
    WrongType(&'static str),
}

/// One `request_rate` value, the one check of every dialect's rate key: a number from
/// [`MIN_RATE`] to [`MAX_RATE`].
pub(crate) fn rate(x: &Value) -> Result<f64, StepValueError> {
    match x.as_f64() {
        Some(r) if (MIN_RATE..=MAX_RATE).contains(&r) => Ok(r),
        Some(r) if r > 0.0 => Err(StepValueError::RateOutOfRange(x.clone())),
        Some(_) => Err(StepValueError::NotPositive(x.clone())),
        None => Err(StepValueError::WrongType(json_type(x))),
    }
}

/// What [`rate`] accepts; `lists` when the dialect also takes a list of values.
pub(crate) fn rate_accepted(lists: bool) -> String {
    let one = format!("numbers from {MIN_RATE} to {MAX_RATE} (requests per second)");
    or_lists(one, lists)
}

/// One `max_concurrency` value, the one check of every dialect's concurrency key: an
/// integer from 1 to [`MAX_CONCURRENCY`], carried as a type that cannot be zero.
pub(crate) fn concurrency(x: &Value) -> Result<NonZeroU32, StepValueError> {
    let n = positive_int(x, MAX_CONCURRENCY)?;
    NonZeroU32::try_from(n).map_err(|_| StepValueError::CountOutOfRange {
        value: x.clone(),
        max: MAX_CONCURRENCY,
    })
}

/// What [`concurrency`] accepts; `lists` when the dialect also takes a list of values.
pub(crate) fn concurrency_accepted(lists: bool) -> String {
    or_lists(format!("integers from 1 to {MAX_CONCURRENCY}"), lists)
}

fn or_lists(one: String, lists: bool) -> String {
    if lists {
        format!("{one}, or a list of them")
    } else {
        one
    }
}

fn positive_int(x: &Value, max: u64) -> Result<NonZeroU64, StepValueError> {
    match (x.as_u64().and_then(NonZeroU64::new), x.as_f64()) {
        (Some(n), _) if n.get() <= max => Ok(n),
        (_, Some(f)) if f.fract() != 0.0 => Err(StepValueError::NotWhole(x.clone())),
        (_, Some(_)) => Err(StepValueError::CountOutOfRange {
            value: x.clone(),
            max,
        }),
        _ => Err(StepValueError::WrongType(json_type(x))),
    }
}

/// Upstream `to_list`: null or absent → [], scalar → [x], list → its elements; each
/// element must pass `parse`.
fn to_list<T>(
    ctx: &Ctx<'_>,
    (key, v): (&str, Option<&Value>),
    errs: &mut Vec<ConfigError>,
    parse: impl Fn(&Value) -> Result<T, StepValueError>,
    accepted: &str,
) -> Vec<T> {
    let items: Vec<(String, &Value)> = match v {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, x)| (format!("{key}[{i}]"), x))
            .collect(),
        Some(x) => vec![(key.to_string(), x)],
    };
    let mut out = Vec::with_capacity(items.len());
    for (k, x) in items {
        match parse(x) {
            Ok(t) => out.push(t),
            Err(problem) => errs.push(ctx.err(&k, problem.to_string(), accepted)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brief(steps: &[SweepStep]) -> Vec<String> {
        steps
            .iter()
            .map(|s| format!("{}#{}x{}", s.label, s.index, s.num_prompts))
            .collect()
    }

    fn ok(r: &[f64], c: &[u32], n: &[u64]) -> Vec<String> {
        brief(&expand(r, &nz(c), &nz64(n)).unwrap())
    }

    fn nz64(n: &[u64]) -> Vec<NonZeroU64> {
        n.iter().map(|&n| NonZeroU64::new(n).unwrap()).collect()
    }

    fn nz(c: &[u32]) -> Vec<NonZeroU32> {
        c.iter().map(|&c| NonZeroU32::new(c).unwrap()).collect()
    }

    #[test]
    fn expansion_table() {
        // upstream test_tts.json throughput entry
        assert_eq!(
            ok(&[], &[8, 16, 64], &[80, 128, 128]),
            ["c8#0x80", "c16#1x128", "c64#2x128"]
        );
        // latency entry, stress entry (rate)
        assert_eq!(ok(&[], &[1], &[20]), ["c1#0x20"]);
        assert_eq!(ok(&[2.0], &[], &[100]), ["qps2.0#0x100"]);
        // one num_prompts repeated to L
        assert_eq!(ok(&[], &[1, 4], &[10]), ["c1#0x10", "c4#1x10"]);
        // length-1 sweep repeated to len(num_prompts)
        assert_eq!(ok(&[], &[4], &[10, 20]), ["c4_0#0x10", "c4_1#1x20"]);
        assert_eq!(
            ok(&[0.5], &[], &[10, 20]),
            ["qps0.5_0#0x10", "qps0.5_1#1x20"]
        );
        // both sweeps: rate steps first, concurrency index restarts at 0
        assert_eq!(
            ok(&[0.5, 1.0], &[2, 8], &[10, 40]),
            ["qps0.5#0x10", "qps1.0#1x40", "c2#0x10", "c8#1x40"]
        );
        // python zip truncation: 2 rates, 3 concurrencies, 1 count
        assert_eq!(
            ok(&[1.0, 2.0], &[1, 2, 3], &[5]),
            ["qps1.0#0x5", "qps2.0#1x5", "c1#0x5", "c2#1x5", "c3#2x5"]
        );
        // both single: both repeated
        assert_eq!(
            ok(&[1.0], &[2], &[3, 4]),
            ["qps1.0_0#0x3", "qps1.0_1#1x4", "c2_0#0x3", "c2_1#1x4"]
        );
        // a repeated concurrency value gets index suffixes, the others do not
        assert_eq!(
            ok(&[], &[1, 1, 8], &[5, 6, 7]),
            ["c1_0#0x5", "c1_1#1x6", "c8#2x7"]
        );
        assert_eq!(ok(&[0.1], &[], &[10]), ["qps0.1#0x10"]);
        assert_eq!(ok(&[10.0], &[], &[1]), ["qps10.0#0x1"]);
    }

    #[test]
    fn expansion_errors() {
        assert_eq!(expand(&[], &[], &nz64(&[10])), Err(SweepError::NoSweep));
        assert_eq!(expand(&[], &[], &[]), Err(SweepError::NoSweep));
        assert_eq!(expand(&[], &nz(&[1]), &[]), Err(SweepError::NoPrompts));
        assert_eq!(
            expand(&[], &nz(&[1, 2, 3]), &nz64(&[1, 2])),
            Err(SweepError::Mismatch {
                prompts: 2,
                rates: 0,
                concs: 3
            })
        );
        assert_eq!(
            expand(&[1.0, 2.0], &[], &nz64(&[1, 2, 3])),
            Err(SweepError::Mismatch {
                prompts: 3,
                rates: 2,
                concs: 0
            })
        );
    }

    #[test]
    fn entry_values_are_validated() {
        let file = std::path::PathBuf::from("f.json");
        let ctx = Ctx::new(&file).test(Some("t")).entry(2);
        let bad = |r: Value, c: Value, n: Value| {
            let keys = SweepKeys {
                rate: ("request_rate", Some(&r)),
                conc: ("max_concurrency", Some(&c)),
                prompts: ("num_prompts", Some(&n)),
            };
            expand_entry(&ctx, &keys)
                .unwrap_err()
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
        };
        let e = bad(
            Value::Null,
            serde_json::json!([0, 4]),
            serde_json::json!(10),
        );
        assert_eq!(e.len(), 1);
        assert!(
            e[0].contains("key `max_concurrency[0]`") && e[0].contains("invalid value 0"),
            "{e:?}"
        );
        let e = bad(serde_json::json!(-1.5), Value::Null, serde_json::json!(10));
        assert!(
            e[0].contains("key `request_rate`") && e[0].contains("-1.5"),
            "{e:?}"
        );
        let e = bad(
            serde_json::json!("inf"),
            serde_json::json!(1.5),
            serde_json::json!([true]),
        );
        assert_eq!(e.len(), 3, "{e:?}");
        let e = bad(Value::Null, serde_json::json!(4), serde_json::json!(0));
        assert!(e[0].contains("num_prompts"), "{e:?}");
    }
}
