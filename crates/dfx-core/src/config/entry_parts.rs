//! Parts of an entry that every entry kind (sweep, contract, stability, native duplex)
//! shares: the draft an entry becomes, and the keys read the same way for all of them
//! (`percentile-metrics` / `metric-percentiles`, `connection`).

use serde_json::{Map, Value};

use super::known_keys::entry::{EXPECTED_DUPLEX_TURNS, MIN_IA_QTF1};
use super::value::{opt_f64_in, opt_uint};
use crate::baseline::shape::BaselineSpec;
use crate::diag::{Ctx, Errs, json_type};
use crate::plan::{BenchEntry, ConnectionMode, PercentileKeys, ResultGates, SweepStep};

/// An enabled entry, validated, waiting for its index and suffix.
#[derive(Debug, Clone)]
pub(crate) struct EntryDraft {
    pub raw_index: usize,
    /// `index`/`suffix` are placeholders until the test is assembled.
    pub entry: BenchEntry,
    pub steps: Vec<SweepStep>,
    pub baseline: Option<BaselineSpec>,
    /// Values joined into the suffix when `name` is empty: task, eval_phase, dataset.
    pub suffix_parts: [Option<String>; 3],
}

/// `percentile-metrics` and `metric-percentiles` (`key`, text) parsed into the plan's
/// [`PercentileKeys`]; a value that is not a list of percentiles is an error at `key`.
pub(crate) fn percentile_keys(
    ctx: &Ctx<'_>,
    metrics: Option<String>,
    percentiles: Option<(&str, String)>,
    errs: &mut Errs,
) -> PercentileKeys {
    let text = percentiles.as_ref().map(|(_, p)| p.as_str());
    PercentileKeys::parse(metrics.as_deref(), text).unwrap_or_else(|why| {
        let (key, text) = percentiles
            .as_ref()
            .map_or(("", ""), |(k, t)| (k, t.as_str()));
        errs.push(ctx.err(
            key,
            format!("invalid value {text:?}: {why}"),
            &crate::percentiles::accepted(),
        ));
        PercentileKeys::default()
    })
}

/// The entry key `connection`: `"fresh"` or `"pooled"`; anything else is refused with
/// the accepted values.
pub(crate) fn connection_key(
    ctx: &Ctx<'_>,
    v: Option<&Value>,
    errs: &mut Errs,
) -> Option<ConnectionMode> {
    let text = opt_str_or_refuse(ctx, v, errs)?;
    let mode = ConnectionMode::parse(&text);
    if mode.is_none() {
        errs.push(ctx.err(
            "connection",
            format!("invalid value {text:?}"),
            ConnectionMode::ACCEPTED,
        ));
    }
    mode
}

fn opt_str_or_refuse(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        other => {
            errs.push(ctx.err(
                "connection",
                format!("wrong type: got {}", json_type(other)),
                ConnectionMode::ACCEPTED,
            ));
            None
        }
    }
}

/// The entry's [`ResultGates`] (upstream's checks of its results), typed here so that a
/// mistyped value fails at load instead of skipping the check.
pub(crate) fn result_gates(
    ctx: &Ctx<'_>,
    obj: &Map<String, Value>,
    errs: &mut Errs,
) -> ResultGates {
    let (turns, ia_qtf1) = (EXPECTED_DUPLEX_TURNS.name, MIN_IA_QTF1.name);
    let turns_max = const { EXPECTED_DUPLEX_TURNS.int_max() };
    let ia_range = const { MIN_IA_QTF1.num_range() };
    ResultGates {
        expected_duplex_turns: opt_uint(ctx, turns, obj.get(turns), turns_max, errs),
        min_ia_qtf1: opt_f64_in(ctx, ia_qtf1, obj.get(ia_qtf1), ia_range, errs),
    }
}
