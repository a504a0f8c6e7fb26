//! One `benchmark_params` element → a draft [`BenchEntry`] with its sweep steps and its
//! parsed baseline. The index and suffix are filled in once the whole test is known.

use std::num::{NonZeroU32, NonZeroU64};

use serde_json::{Map, Value};

use super::entry_parts::{CommonKeys, EntryDraft, result_gates};
use super::known_keys::entry::REPEATS;
use super::known_keys::{EntryKind, check_entry_keys};
use super::load_keys::load_spec;
use super::raw::{RawDiffusionEntry, RawOmniEntry, from_object, is_diffusion_entry};
use super::sweep::{SweepKeys, expand_entry, expand_unbounded};
use super::value::{name_fits, opt_bool, opt_name};
use super::{runners, stability};
use crate::baseline::shape::parse_baseline;
use crate::diag::{Ctx, Errs, json_type};
use crate::plan::{BenchEntry, CaseKeys, Dialect, StepKind, SweepStep};

/// Why diffusion-dialect trials cannot run when no diffusion bench is configured.
pub const DIFFUSION_UNSUPPORTED: &str = "diffusion dialect (image/video generation, kebab-case \
keys): runs only through upstream's diffusion benchmark script; point dfx-perf at it with \
--diffusion-script PATH (DFX_DIFFUSION_SCRIPT) or --vllm-omni-dir DIR (DFX_VLLM_OMNI_DIR)";

/// Note on the thresholds of a diffusion entry whose baseline could not be read.
pub const DIFFUSION_BASELINE_NOTE: &str =
    "diffusion dialect: its baseline could not be read and is not evaluated";

/// What an entry needs to know of its case.
pub(crate) struct CaseFacts<'a> {
    /// The case's `mark` tags (`diffusion` makes its entries diffusion dialect).
    pub tags: &'a [String],
    /// `"benchmark_runner": "native-duplex"` on the case.
    pub native_duplex: bool,
    /// `"benchmark_runner": "contract"` on the case.
    pub contract: bool,
    /// `server_params.trust_remote_code`.
    pub trust_remote_code: bool,
    /// Case-level keys copied into every entry.
    pub keys: CaseKeys,
}

/// Builds an entry; `None` for disabled entries and for entries with errors (pushed to
/// `errs`). Disabled entries are dropped before anything else is checked.
pub(crate) fn build_entry(
    ctx: &Ctx<'_>,
    raw_index: usize,
    v: &Value,
    case: &CaseFacts<'_>,
    errs: &mut Errs,
    warnings: &mut Vec<String>,
) -> Option<EntryDraft> {
    let ctx = ctx.entry(raw_index);
    let Value::Object(obj) = v else {
        errs.push(ctx.err(
            "",
            format!("benchmark entry must be an object, got {}", json_type(v)),
            "an object of benchmark settings",
        ));
        return None;
    };
    if !opt_bool(
        &ctx,
        "enabled",
        obj.get("enabled").filter(|v| !v.is_null()),
        errs,
    )
    .unwrap_or(true)
    {
        return None;
    }
    let n = errs.len();
    let kind = if case.native_duplex {
        Some(EntryKind::NativeDuplex)
    } else if case.contract {
        None // contract entries check their own keys
    } else if is_diffusion_entry(obj, case.tags) {
        Some(if runners::is_stability_entry(obj) {
            EntryKind::DiffusionSoak
        } else {
            EntryKind::Diffusion
        })
    } else {
        Some(EntryKind::Omni)
    };
    if let Some(kind) = kind {
        check_entry_keys(&ctx, obj, kind, errs);
    }
    let draft = if case.contract {
        runners::contract_entry(&ctx, raw_index, obj, errs)
    } else if case.native_duplex {
        runners::native_duplex_entry(&ctx, raw_index, obj, errs)
    } else if runners::is_stability_entry(obj) {
        stability::stability_entry(&ctx, raw_index, obj, errs, warnings)
    } else if is_diffusion_entry(obj, case.tags) {
        diffusion_entry(&ctx, raw_index, obj, &case.keys, errs, warnings)
    } else {
        omni_entry(&ctx, raw_index, obj, case, errs)
    };
    draft.filter(|_| errs.len() == n)
}

fn omni_entry(
    ctx: &Ctx<'_>,
    raw_index: usize,
    obj: &Map<String, Value>,
    case: &CaseFacts<'_>,
    errs: &mut Errs,
) -> Option<EntryDraft> {
    let trust_remote_code = case.trust_remote_code;
    let raw: RawOmniEntry = from_object(obj)
        .map_err(|e| errs.push(ctx.err("", e.to_string(), "")))
        .ok()?;
    let capacity = super::capacity::capacity_key(ctx, raw.capacity.as_ref(), errs);
    let steps = match &capacity {
        Some(spec) => super::capacity::capacity_step(ctx, obj, spec, errs),
        None if raw.capacity.is_some() => Vec::new(),
        None => {
            let keys = SweepKeys {
                rate: ("request_rate", raw.request_rate.as_ref()),
                conc: ("max_concurrency", raw.max_concurrency.as_ref()),
                prompts: ("num_prompts", raw.num_prompts.as_ref()),
            };
            expand_unbounded(ctx, &keys)
                .map_err(|e| errs.extend(e))
                .unwrap_or_default()
        }
    };
    let load = load_spec(ctx, &raw, &steps, errs);
    if capacity.is_some() && load != crate::load::LoadSpec::default() {
        errs.push(ctx.err(
            "capacity",
            "a capacity search probes steady open-loop rates: load shape and cap keys do not apply",
            "`capacity` without ramp_start_rate, burst, soak_duration_s, cohorts, \
             open_loop_max_concurrency or saturation",
        ));
    }
    let c = CommonKeys::read(ctx, &raw, errs);
    let suffix_parts = [c.task.clone(), c.eval_phase.clone(), c.dataset_name.clone()];
    let entry = BenchEntry {
        index: 0,
        suffix: String::new(),
        dialect: Dialect::Omni,
        dataset_name: c.dataset_name,
        backend: c.backend,
        endpoint: c.endpoint,
        dataset_path: c.dataset_path,
        seed_tts_locale: c.seed_tts_locale,
        percentiles: c.percentiles,
        goodput: c.goodput,
        extra_body: c.extra_body,
        num_warmups: c.num_warmups,
        repeats: repeats_key(ctx, raw.repeats.as_ref(), errs),
        burstiness: c.burstiness,
        seed: c.seed,
        task: c.task,
        eval_phase: c.eval_phase,
        name: c.name,
        trust_remote_code,
        raw: obj.clone(),
        case: case.keys.clone(),
        connection: c.connection,
        capacity,
        load,
        runner: Default::default(),
        gates: result_gates(ctx, obj, errs),
    };
    let baseline = raw
        .baseline
        .as_ref()
        .and_then(|b| parse_baseline(ctx, b, errs));
    if let Some(b) = &baseline {
        b.check_steps(ctx, &steps, errs);
    }
    Some(EntryDraft {
        raw_index,
        entry,
        steps,
        baseline,
        suffix_parts,
    })
}

/// The entry key `repeats`: an integer from 1 to its row's bound
/// ([`crate::bounds::MAX_REPEATS`]).
fn repeats_key(ctx: &Ctx<'_>, v: Option<&Value>, errs: &mut Errs) -> Option<NonZeroU32> {
    let max = const { REPEATS.int_max() };
    let n = super::value::opt_count(ctx, REPEATS.name, v, max, errs)?;
    NonZeroU32::try_from(n).ok()
}

/// Diffusion entries are read leniently (they run only when the diffusion driver is
/// configured): a sweep that cannot be expanded becomes one `c1` step and a warning, a
/// baseline that cannot be read a warning and no thresholds, a task without a default
/// endpoint (and no case `benchmark_endpoint`) a warning and no endpoint (the driver then
/// refuses the entry with that reason).
fn diffusion_entry(
    ctx: &Ctx<'_>,
    raw_index: usize,
    obj: &Map<String, Value>,
    case_keys: &CaseKeys,
    errs: &mut Errs,
    warnings: &mut Vec<String>,
) -> Option<EntryDraft> {
    let raw: RawDiffusionEntry = from_object(obj)
        .map_err(|e| errs.push(ctx.err("", e.to_string(), "")))
        .ok()?;
    let loose = |v: &Option<Value>| match v {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let name = opt_name(ctx, "name", raw.name.as_ref(), errs);
    let task = loose(&raw.task).and_then(|t| name_fits(ctx, "task", t, errs));
    let dataset = loose(&raw.dataset).and_then(|d| name_fits(ctx, "dataset", d, errs));
    let keys = SweepKeys {
        rate: ("request-rate", raw.request_rate.as_ref()),
        conc: ("max-concurrency", raw.max_concurrency.as_ref()),
        prompts: ("num-prompts", raw.num_prompts.as_ref()),
    };
    let steps = expand_entry(ctx, &keys).unwrap_or_else(|e| {
        for err in e {
            warnings.push(format!("{err} (diffusion entry listed with one `c1` step)"));
        }
        let first = |v: Option<&Value>| match v {
            Some(Value::Array(a)) => a.first().and_then(Value::as_u64),
            Some(x) => x.as_u64(),
            None => None,
        };
        vec![SweepStep {
            kind: StepKind::Concurrency {
                max_concurrency: NonZeroU32::MIN,
            },
            index: 0,
            num_prompts: first(raw.num_prompts.as_ref())
                .and_then(NonZeroU64::new)
                .unwrap_or(NonZeroU64::MIN),
            label: "c1".into(),
        }]
    });
    let endpoint =
        match diffusion_endpoint(case_keys.benchmark_endpoint.as_deref(), task.as_deref()) {
            Ok(ep) => Some(ep),
            Err(why) => {
                warnings.push(ctx.err("task", why.to_string(), "").to_string());
                None
            }
        };
    let mut baseline_errs = Errs::new();
    let baseline = raw
        .baseline
        .as_ref()
        .and_then(|b| parse_baseline(ctx, b, &mut baseline_errs));
    let baseline = if baseline_errs.is_empty() {
        baseline
    } else {
        warnings.extend(
            baseline_errs
                .iter()
                .map(|e| format!("{e} ({DIFFUSION_BASELINE_NOTE})")),
        );
        None
    };
    let entry = BenchEntry {
        index: 0,
        suffix: String::new(),
        dialect: Dialect::Diffusion,
        dataset_name: dataset.clone(),
        backend: None,
        endpoint,
        dataset_path: None,
        seed_tts_locale: None,
        percentiles: Default::default(),
        goodput: None,
        extra_body: None,
        num_warmups: None,
        repeats: None,
        capacity: None,
        burstiness: None,
        seed: raw.seed.as_ref().and_then(Value::as_u64),
        task: task.clone(),
        eval_phase: None,
        name,
        trust_remote_code: false,
        raw: obj.clone(),
        case: case_keys.clone(),
        connection: None,
        load: Default::default(),
        runner: Default::default(),
        gates: Default::default(),
    };
    Some(EntryDraft {
        raw_index,
        entry,
        steps,
        baseline,
        suffix_parts: [task, None, dataset],
    })
}

/// A diffusion task without a default endpoint (the case must set `benchmark_endpoint`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "task `{0}` has no default diffusion endpoint (t2v, i2v, ti2v, v2v → /v1/videos; \
     t2i, i2i, ti2i → /v1/chat/completions); set the case's `benchmark_endpoint`"
)]
pub struct NoDefaultEndpoint(pub String);

/// Upstream's diffusion endpoint: the case's `benchmark_endpoint` normalised
/// (`vllm-omni` → `/v1/chat/completions`, `openai` → `/v1/images/generations`, a leading
/// `/` added), else by task (default `t2i`): `t2v`/`i2v`/`ti2v`/`v2v` → `/v1/videos`,
/// `t2i`/`i2i`/`ti2i` → `/v1/chat/completions`; any other task is an error.
pub fn diffusion_endpoint(
    case_endpoint: Option<&str>,
    task: Option<&str>,
) -> Result<String, NoDefaultEndpoint> {
    if let Some(ep) = case_endpoint.map(str::trim).filter(|e| !e.is_empty()) {
        return Ok(match ep {
            "vllm-omni" => "/v1/chat/completions".into(),
            "openai" => "/v1/images/generations".into(),
            e if e.starts_with('/') => e.into(),
            e => format!("/{e}"),
        });
    }
    match task.unwrap_or("t2i") {
        "t2v" | "i2v" | "ti2v" | "v2v" => Ok("/v1/videos".into()),
        "t2i" | "i2i" | "ti2i" => Ok("/v1/chat/completions".into()),
        other => Err(NoDefaultEndpoint(other.into())),
    }
}
