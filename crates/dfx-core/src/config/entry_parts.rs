//! Parts of an entry that every entry kind (sweep, contract, stability, native duplex)
//! shares: the draft an entry becomes, and the keys read the same way for all of them
//! (`percentile-metrics` / `metric-percentiles`, `connection`, the result gates, and the
//! request keys of sweep and stability entries).

use serde_json::{Map, Value};

use super::known_keys::entry::{BURSTINESS, NUM_WARMUPS, SEED};
use super::known_keys::entry::{EXPECTED_DUPLEX_TURNS, MIN_IA_QTF1};
use super::raw::RawOmniEntry;
use super::value::{opt_bool, opt_f64_in, opt_name, opt_object, opt_str, opt_uint};
use crate::baseline::shape::BaselineSpec;
use crate::diag::{Ctx, Errs, json_type};
use crate::goodput::GoodputSpec;
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

/// The keys a sweep entry and a stability entry read alike, typed and bounded (a JSON
/// `null` is absent, as serde reads [`RawOmniEntry`]): names, request keys, percentiles,
/// goodput, warmups, arrivals, seed and connections.
pub(crate) struct CommonKeys {
    pub dataset_name: Option<String>,
    pub task: Option<String>,
    pub eval_phase: Option<String>,
    pub percentiles: PercentileKeys,
    pub backend: Option<String>,
    pub endpoint: Option<String>,
    pub dataset_path: Option<String>,
    pub seed_tts_locale: Option<String>,
    pub goodput: Option<GoodputSpec>,
    pub extra_body: Option<Map<String, Value>>,
    pub num_warmups: Option<u32>,
    pub burstiness: Option<f64>,
    pub seed: Option<u64>,
    pub name: Option<String>,
    pub connection: Option<ConnectionMode>,
}

impl CommonKeys {
    /// Reads them from the entry's `raw` keys in this order, each problem pushed to `errs`
    /// naming its key (`seed_tts_wer_eval` is only checked: the benches read it from the
    /// raw entry). The dashed spelling of a percentile key wins over the other.
    pub(crate) fn read(ctx: &Ctx<'_>, raw: &RawOmniEntry, errs: &mut Errs) -> Self {
        let text =
            |key: &str, v: &Option<Value>, errs: &mut Errs| opt_str(ctx, key, v.as_ref(), errs);
        let name =
            |key: &str, v: &Option<Value>, errs: &mut Errs| opt_name(ctx, key, v.as_ref(), errs);
        let dataset_name = name("dataset_name", &raw.dataset_name, errs);
        let task = name("task", &raw.task, errs);
        let eval_phase = name("eval_phase", &raw.eval_phase, errs);
        let metrics = match &raw.percentile_metrics_dashed {
            Some(v) => text("percentile-metrics", &Some(v.clone()), errs),
            None => text("percentile_metrics", &raw.percentile_metrics, errs),
        };
        let percentiles = match &raw.metric_percentiles_dashed {
            Some(v) => text("metric-percentiles", &Some(v.clone()), errs)
                .map(|p| ("metric-percentiles", p)),
            None => text("metric_percentiles", &raw.metric_percentiles, errs)
                .map(|p| ("metric_percentiles", p)),
        };
        let percentiles = percentile_keys(ctx, metrics, percentiles, errs);
        let wer_eval = raw.seed_tts_wer_eval.as_ref();
        opt_bool(ctx, "seed_tts_wer_eval", wer_eval, errs);
        let warmups_max = const { NUM_WARMUPS.int_max() };
        let warmups = raw.num_warmups.as_ref();
        CommonKeys {
            dataset_name,
            task,
            eval_phase,
            percentiles,
            backend: text("backend", &raw.backend, errs),
            endpoint: text("endpoint", &raw.endpoint, errs),
            dataset_path: text("dataset_path", &raw.dataset_path, errs),
            seed_tts_locale: text("seed_tts_locale", &raw.seed_tts_locale, errs),
            goodput: crate::goodput::goodput_key(ctx, raw.goodput.as_ref(), errs),
            extra_body: opt_object(ctx, "extra_body", raw.extra_body.as_ref(), errs),
            num_warmups: opt_uint(ctx, NUM_WARMUPS.name, warmups, warmups_max, errs)
                .and_then(|n| u32::try_from(n).ok()),
            burstiness: opt_f64_in(
                ctx,
                BURSTINESS.name,
                raw.burstiness.as_ref(),
                const { BURSTINESS.num_range() },
                errs,
            ),
            seed: opt_uint(
                ctx,
                SEED.name,
                raw.seed.as_ref(),
                const { SEED.int_max() },
                errs,
            ),
            name: name("name", &raw.name, errs),
            connection: connection_key(ctx, raw.connection.as_ref(), errs),
        }
    }

    /// Sets them on `e` (a stability entry's draft; a sweep entry is built from them).
    pub(crate) fn apply(self, e: &mut BenchEntry) {
        e.dataset_name = self.dataset_name;
        e.task = self.task;
        e.eval_phase = self.eval_phase;
        e.percentiles = self.percentiles;
        e.backend = self.backend;
        e.endpoint = self.endpoint;
        e.dataset_path = self.dataset_path;
        e.seed_tts_locale = self.seed_tts_locale;
        e.goodput = self.goodput;
        e.extra_body = self.extra_body;
        e.num_warmups = self.num_warmups;
        e.burstiness = self.burstiness;
        e.seed = self.seed;
        e.name = self.name;
        e.connection = self.connection;
    }
}
