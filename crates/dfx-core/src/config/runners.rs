//! Entries of upstream's other runners (2026), which carry no sweep keys: the
//! `native-duplex` runner (`"benchmark_runner": "native-duplex"` on the case: realtime
//! duplex sessions, `sessions` × `turns`, repeated) and the stability runner (soak entries
//! with `duration_sec`: batches of `num_prompts_per_batch` until the duration is over;
//! read in [`super::stability`]).
//! Each entry becomes one trial whose step stands for its load (`c<sessions>` /
//! `c<max_concurrency>` / `qps<rate>`). Both go to the benches: the native bench runs
//! native-duplex entries (`dfx_bench::native::duplex`) and soaks `openai-audio-speech`
//! stability entries; the external bench refuses both with [`NATIVE_DUPLEX_EXTERNAL`] /
//! its own reason.

use std::num::{NonZeroU32, NonZeroU64};

use serde_json::{Map, Value};

use super::entry_parts::EntryDraft;
use super::known_keys::KeySpec;
use super::known_keys::runners::{
    CONTRACT_TIMEOUT, DUPLEX_REPEATS, DUPLEX_SESSIONS, DUPLEX_TIMEOUT, DUPLEX_TURNS, DUPLEX_WARMUPS,
};
use super::value::{check_seconds, opt_bool, opt_count, opt_str, opt_str_list};
use crate::baseline::shape::parse_baseline;
use crate::bounds;
use crate::diag::{Ctx, Errs, json_type};
use crate::plan::{BenchEntry, Dialect, StepKind, SweepStep, python_float_str};
use crate::runner_keys::{
    ContractKeys, DEFAULT_CONTRACT_TIMEOUT_S, DEFAULT_DUPLEX_TIMEOUT_S, DuplexKeys, RunnerKeys,
};

/// Why the external bench (`vllm bench serve --omni`) does not run native-duplex entries.
pub const NATIVE_DUPLEX_EXTERNAL: &str = "native-duplex entries run upstream under \
run_native_duplex_benchmark.py (realtime duplex sessions × turns, repeated), not under \
`vllm bench serve --omni`; the native bench runs them (--bench native or auto)";

/// Why the external bench does not run contract entries.
pub const CONTRACT_EXTERNAL: &str = "contract entries are dfx-perf's own API contract \
scenarios (error replies, reference audio, disconnects, voice uploads), not a load for \
`vllm bench serve --omni`; the native bench runs them (--bench native or auto)";

/// Longest `timeout_s` of a contract entry (per request), seconds.
pub const MAX_CONTRACT_TIMEOUT_S: f64 = 600.0;

/// The runner a case's entries belong to (`benchmark_runner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaseRunner {
    /// Absent: upstream's `run_benchmark` (the omni and diffusion dialects).
    Upstream,
    /// `"native-duplex"`: upstream's native-duplex runner.
    NativeDuplex,
    /// `"contract"`: dfx-perf's own contract runner.
    Contract,
}

/// The names a case may write in `benchmark_runner`, with their runner.
const RUNNERS: [(&str, CaseRunner); 2] = [
    ("native-duplex", CaseRunner::NativeDuplex),
    ("contract", CaseRunner::Contract),
];

/// The runner a case names (`benchmark_runner`). Any value but a name of [`RUNNERS`] is
/// an error naming the closest runners, and `None`: the case's entries are then not read,
/// as the wrong runner's keys would only bury the typo under unknown-key errors.
pub(crate) fn case_runner(
    ctx: &Ctx<'_>,
    case_other: &Map<String, Value>,
    errs: &mut Errs,
) -> Option<CaseRunner> {
    let key = "benchmark_runner";
    let Some(v) = case_other.get(key) else {
        return Some(CaseRunner::Upstream);
    };
    let accepted = "\"native-duplex\" or \"contract\" (absent: upstream's run_benchmark)";
    let Some(name) = v.as_str() else {
        errs.push(ctx.err(key, format!("wrong type: got {}", json_type(v)), accepted));
        return None;
    };
    if let Some((_, runner)) = RUNNERS.iter().find(|(n, _)| *n == name) {
        return Some(*runner);
    }
    let hint = crate::suggest::hint(name, RUNNERS.iter().map(|(n, _)| *n), accepted);
    errs.push(ctx.err(key, format!("unknown runner {v}"), &hint));
    None
}

/// Whether an entry is a stability soak entry.
pub(crate) fn is_stability_entry(obj: &Map<String, Value>) -> bool {
    obj.contains_key("duration_sec") || obj.contains_key("num_prompts_per_batch")
}

pub(super) fn draft(
    raw_index: usize,
    obj: &Map<String, Value>,
    dialect: Dialect,
    step: SweepStep,
) -> EntryDraft {
    let s = |k: &str| obj.get(k).and_then(Value::as_str).map(String::from);
    EntryDraft {
        raw_index,
        entry: BenchEntry {
            index: 0,
            suffix: String::new(),
            dialect,
            dataset_name: s("dataset_name"),
            backend: s("backend"),
            endpoint: s("endpoint"),
            dataset_path: s("dataset_path"),
            seed_tts_locale: None,
            // A stability entry's are set by `stability_entry`; the native-duplex runner
            // reports its own medians, no percentiles.
            percentiles: Default::default(),
            goodput: None,
            extra_body: obj.get("extra_body").and_then(Value::as_object).cloned(),
            num_warmups: None,
            repeats: None,
            capacity: None,
            burstiness: None,
            seed: obj.get("seed").and_then(Value::as_u64),
            task: s("task"),
            eval_phase: s("eval_phase"),
            name: s("name"),
            trust_remote_code: false,
            raw: obj.clone(),
            case: Default::default(),
            connection: None,
            load: Default::default(),
            runner: RunnerKeys::None,
            gates: Default::default(),
        },
        steps: vec![step],
        baseline: None,
        suffix_parts: [s("task"), s("eval_phase"), s("dataset_name")],
    }
}

pub(super) fn step(kind: StepKind, num_prompts: NonZeroU64) -> SweepStep {
    let label = match kind {
        StepKind::Concurrency { max_concurrency } => format!("c{max_concurrency}"),
        StepKind::RequestRate { request_rate } => format!("qps{}", python_float_str(request_rate)),
    };
    SweepStep {
        kind,
        index: 0,
        num_prompts,
        label,
    }
}

/// A native-duplex entry: `name` (required), `sessions`, `turns` (positive), `warmups`,
/// `repeats` (≥ 2 upstream), `workload`, `realtime_input`, `timeout_s` (seconds > 0),
/// `profile_stages` (a list of strings), `baseline` (with `regression_tolerance` buckets).
pub(crate) fn native_duplex_entry(
    ctx: &Ctx<'_>,
    raw_index: usize,
    obj: &Map<String, Value>,
    errs: &mut Errs,
) -> Option<EntryDraft> {
    let n = errs.len();
    if opt_str(ctx, "name", obj.get("name"), errs).is_none_or(|s| s.trim().is_empty()) {
        errs.push(ctx.err(
            "name",
            "a native-duplex entry needs a name",
            "a non-empty string",
        ));
    }
    opt_str(ctx, "workload", obj.get("workload"), errs);
    opt_bool(ctx, "realtime_input", obj.get("realtime_input"), errs);
    let count = |row: KeySpec, max: u64, errs: &mut Errs| {
        opt_count(ctx, row.name, obj.get(row.name), max, errs)
    };
    let sessions = count(DUPLEX_SESSIONS, const { DUPLEX_SESSIONS.int_max() }, errs);
    let turns = count(DUPLEX_TURNS, const { DUPLEX_TURNS.int_max() }, errs);
    count(DUPLEX_WARMUPS, const { DUPLEX_WARMUPS.int_max() }, errs);
    if let Some(r) = count(DUPLEX_REPEATS, const { DUPLEX_REPEATS.int_max() }, errs)
        && r.get() < const { DUPLEX_REPEATS.int_min() }
    {
        errs.push(ctx.err(
            "repeats",
            format!("invalid value {r}"),
            "at least 2 (upstream's rule)",
        ));
    }
    let timeout_max = const { DUPLEX_TIMEOUT.positive_max() };
    let timeout_s = check_seconds(ctx, "timeout_s", obj.get("timeout_s"), timeout_max, errs)
        .unwrap_or(DEFAULT_DUPLEX_TIMEOUT_S);
    let profile_stages = opt_str_list(ctx, "profile_stages", obj.get("profile_stages"), errs)
        .is_some_and(|stages| !stages.is_empty());
    // A missing `sessions` or `turns` still loads: the native bench refuses the entry and
    // says which key it needs (`DuplexKeys`); the trial's step then stands for one
    // session of one turn (`c1`, one request).
    let sessions = sessions.and_then(|s| NonZeroU32::try_from(s).ok());
    let requests = sessions
        .map_or(NonZeroU64::MIN, NonZeroU64::from)
        .saturating_mul(turns.unwrap_or(NonZeroU64::MIN));
    let mut d = draft(
        raw_index,
        obj,
        Dialect::NativeDuplex,
        step(
            StepKind::Concurrency {
                max_concurrency: sessions.unwrap_or(NonZeroU32::MIN),
            },
            requests.min(bounds::MAX_PROMPTS_NZ),
        ),
    );
    d.baseline = obj
        .get("baseline")
        .and_then(|b| parse_baseline(ctx, b, errs));
    d.entry.runner = RunnerKeys::NativeDuplex(DuplexKeys::read(obj, timeout_s, profile_stages));
    (errs.len() == n).then_some(d)
}

/// A contract entry: `name`, `scenarios` (names of [`crate::contract::SCENARIOS`], no
/// duplicates; absent = all), `voice_lifecycle` (boolean, `false` drops that scenario),
/// `timeout_s` (per request, default 30). One trial whose `num_prompts` is the number of
/// scenarios it runs.
pub(crate) fn contract_entry(
    ctx: &Ctx<'_>,
    raw_index: usize,
    obj: &Map<String, Value>,
    errs: &mut Errs,
) -> Option<EntryDraft> {
    let n = errs.len();
    opt_str(ctx, "name", obj.get("name"), errs);
    let lifecycle =
        super::value::opt_bool(ctx, "voice_lifecycle", obj.get("voice_lifecycle"), errs);
    check_scenarios(ctx, obj.get("scenarios"), lifecycle, errs);
    let timeout = obj.get(CONTRACT_TIMEOUT.name);
    let max = const { CONTRACT_TIMEOUT.positive_max() };
    let timeout_s = super::value::check_seconds(ctx, CONTRACT_TIMEOUT.name, timeout, max, errs)
        .unwrap_or(DEFAULT_CONTRACT_TIMEOUT_S);
    super::known_keys::check_keys(
        ctx,
        ("", "contract entry"),
        obj,
        super::known_keys::runners::CONTRACT,
        errs,
    );
    if errs.len() != n {
        return None;
    }
    let scenarios: Vec<&'static str> = crate::contract::selected(obj)
        .iter()
        .map(|s| s.name)
        .collect();
    let Some(count) = NonZeroU64::new(scenarios.len() as u64) else {
        errs.push(ctx.err(
            "voice_lifecycle",
            "the entry selects no scenario",
            "at least one scenario",
        ));
        return None;
    };
    let mut st = step(
        StepKind::Concurrency {
            max_concurrency: NonZeroU32::MIN,
        },
        count,
    );
    st.label = "contract".into();
    let mut d = draft(raw_index, obj, Dialect::Contract, st);
    d.entry.runner = RunnerKeys::Contract(ContractKeys {
        scenarios,
        timeout_s,
    });
    Some(d)
}

/// `scenarios`: a non-empty array of known names, each once, not `voice_lifecycle` when
/// `voice_lifecycle` is false.
fn check_scenarios(ctx: &Ctx<'_>, v: Option<&Value>, lifecycle: Option<bool>, errs: &mut Errs) {
    use crate::contract::{VOICE_LIFECYCLE, accepted_names, scenario};
    let accepted = format!(
        "an array of scenario names, each once, from: {}",
        accepted_names()
    );
    let items = match v {
        None => return,
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(other) => {
            errs.push(ctx.err("scenarios", format!("invalid value {other}"), &accepted));
            return;
        }
    };
    let mut seen: Vec<&str> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let key = format!("scenarios[{i}]");
        let problem = match item.as_str() {
            None => format!("wrong type: got {item}"),
            Some(name) if scenario(name).is_none() => format!("unknown scenario {name:?}"),
            Some(name) if seen.contains(&name) => format!("scenario {name:?} listed twice"),
            Some(name) if name == VOICE_LIFECYCLE && lifecycle == Some(false) => {
                "`voice_lifecycle` is listed while `voice_lifecycle` is false".into()
            }
            Some(name) => {
                seen.push(name);
                continue;
            }
        };
        errs.push(ctx.err(&key, problem, &accepted));
    }
}
