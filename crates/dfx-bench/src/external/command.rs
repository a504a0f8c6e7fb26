//! The full `vllm bench serve --omni` command of one sweep step, built fresh every time
//! (upstream appended each step's flags to the previous step's list).

use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

use dfx_core::bench::BenchContext;
use dfx_core::lenient::python_truthy;
use serde_json::{Map, Value};

use super::{flags, pyfmt};

/// Environment variable read by vllm-omni's bench for the PCM sample rate of streamed
/// audio (default 24000 when unset).
pub const SAMPLE_RATE_ENV: &str = "VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE";

/// Environment variable `vllm bench` reads the API key from (sent as `Bearer <key>`).
pub const TOKEN_ENV: &str = "OPENAI_API_KEY";

/// What to run for one step. The token is not part of it: it is added to the child's
/// environment at spawn time only.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchCommand {
    /// The `vllm` executable (`--vllm-bin`, default `vllm`, resolved on `PATH`).
    pub program: PathBuf,
    /// Arguments after the program (`bench serve --omni …`).
    pub args: Vec<String>,
    /// Environment set on top of the inherited one.
    pub env: BTreeMap<String, String>,
    /// Where vllm writes its result (`--result-dir` joined with `--result-filename`).
    pub result_path: PathBuf,
    /// Working folder of the child; `None`: the suite's.
    pub cwd: Option<PathBuf>,
}

/// Settings-derived inputs of [`build`] that do not come from the context.
pub(super) struct CommandInputs<'a> {
    pub program: &'a Path,
    pub tokenizer: Option<&'a str>,
    pub seed: u64,
    pub sample_rate: Option<u32>,
    pub extra_env: &'a BTreeMap<String, String>,
    /// `YYYYmmdd-HHMMSS` for the result file name.
    pub stamp: &'a str,
}

/// Builds the command of `ctx`'s step:
/// `bench serve --omni --host H --port P --model M <entry flags> [--trust-remote-code]
/// <step flags> --num-warmups N --save-result --result-dir D --result-filename F
/// [--tokenizer T] --seed S`.
///
/// `--model`, `--tokenizer` and `--seed` are left out when the entry itself sets that key
/// (it is then among the entry flags and wins).
pub(super) fn build(ctx: &BenchContext<'_>, inputs: &CommandInputs<'_>) -> BenchCommand {
    let trial = ctx.trial;
    let shape = Shape {
        entry_flags: flags::entry_flags(&trial.entry.raw),
        step_flags: flags::step_flags(&trial.entry.raw, &trial.step),
        warmups: trial.entry.warmups(&trial.step),
        file_name: result_file_name(ctx, inputs.stamp),
    };
    build_shaped(ctx, inputs, shape)
}

/// The command of batch `batch` (0-based) of a stability soak: the stability runner's
/// entry flags, `n` prompts at the step's concurrency or rate, the warmups before the
/// first batch only, and a result file per batch (`…_b<batch>.json`).
pub(super) fn build_batch(
    ctx: &BenchContext<'_>,
    inputs: &CommandInputs<'_>,
    batch: usize,
    n: NonZeroU64,
) -> BenchCommand {
    let trial = ctx.trial;
    let mut step = trial.step.clone();
    step.num_prompts = n;
    let stem = result_file_name(ctx, inputs.stamp);
    let stem = stem.strip_suffix(".json").unwrap_or(&stem);
    let shape = Shape {
        entry_flags: flags::entry_flags_except(&trial.entry.raw, flags::STABILITY_EXCLUDED_KEYS),
        step_flags: flags::step_flags(&trial.entry.raw, &step),
        warmups: if batch == 0 {
            trial.entry.warmups(&step)
        } else {
            0
        },
        file_name: format!("{stem}_b{batch}.json"),
    };
    build_shaped(ctx, inputs, shape)
}

/// What differs between a sweep step's command and a soak batch's.
struct Shape {
    entry_flags: Vec<String>,
    step_flags: Vec<String>,
    warmups: u32,
    file_name: String,
}

fn build_shaped(ctx: &BenchContext<'_>, inputs: &CommandInputs<'_>, shape: Shape) -> BenchCommand {
    let trial = ctx.trial;
    let entry = &trial.entry;
    let raw = &entry.raw;
    let mut args: Vec<String> = vec!["bench".into(), "serve".into(), "--omni".into()];
    args.extend([
        "--host".into(),
        ctx.host.clone(),
        "--port".into(),
        ctx.port.to_string(),
    ]);
    if !sets(raw, "model") {
        args.extend(["--model".into(), trial.server.model.clone()]);
    }
    args.extend(shape.entry_flags);
    if entry.trust_remote_code || python_truthy(raw.get("trust_remote_code")) {
        args.push("--trust-remote-code".into());
    }
    args.extend(shape.step_flags);
    let file_name = shape.file_name;
    args.extend([
        "--num-warmups".into(),
        shape.warmups.to_string(),
        "--save-result".into(),
        "--result-dir".into(),
        ctx.out_dir.to_string_lossy().into_owned(),
        "--result-filename".into(),
        file_name.clone(),
    ]);
    if let Some(tok) = inputs.tokenizer.filter(|_| !sets(raw, "tokenizer")) {
        args.extend(["--tokenizer".into(), tok.to_string()]);
    }
    if !sets(raw, "seed") {
        args.extend(["--seed".into(), inputs.seed.to_string()]);
    }
    // The case's judge server (upstream: `--omniinteract-judge-base-url http://host:port`).
    if let Some(url) = &ctx.judge_url {
        args.extend(["--omniinteract-judge-base-url".into(), url.clone()]);
    }
    let mut env = BTreeMap::new();
    if let Some(rate) = inputs.sample_rate {
        env.insert(SAMPLE_RATE_ENV.to_string(), rate.to_string());
    }
    env.extend(inputs.extra_env.iter().map(|(k, v)| (k.clone(), v.clone())));
    BenchCommand {
        program: inputs.program.to_path_buf(),
        args,
        env,
        result_path: ctx.out_dir.join(file_name),
        cwd: None,
    }
}

/// Whether the entry sets `key` to something other than `null`/`false`.
fn sets(raw: &Map<String, Value>, key: &str) -> bool {
    !matches!(
        raw.get(key),
        None | Some(Value::Null) | Some(Value::Bool(false))
    )
}

/// Upstream's result file name of `ctx`'s step ([`upstream_file_name`]).
pub(super) fn result_file_name(ctx: &BenchContext<'_>, stamp: &str) -> String {
    upstream_file_name(ctx.trial, &ctx.hardware, stamp)
}

/// Upstream's result file name:
/// `result_{test_name}[_{name}][_{hw}]_{dataset_name}_{flow}_{num_prompts}_in{ri}_out{ro}_{stamp}.json`
/// with `hw` omitted for `H100`, `ri`/`ro` the entry's random input/output lengths or
/// `na`, `flow` the step's rate or concurrency as written. `name` (the entry's `name`,
/// when a non-empty string) follows the test name: upstream's newest runner puts it into
/// the name at a position not found in its sources; there the nightly tools' parser keeps
/// it as part of `test_name`, as it does the hardware token. Every part goes through
/// upstream's filename-token replacement (`/ \ : * ? " < > |` → `_`), which upstream
/// forgot for `test_name` and `dataset_name`.
pub fn upstream_file_name(trial: &dfx_core::plan::Trial, hardware: &str, stamp: &str) -> String {
    let raw = &trial.entry.raw;
    let hw = token_or_na(Some(hardware));
    let hw_part = if hw == "H100" {
        String::new()
    } else {
        format!("_{hw}")
    };
    let dataset = replace_bad(trial.entry.dataset_name.as_deref().unwrap_or(""));
    let name_part = match trial.entry.name.as_deref().map(str::trim) {
        Some(n) if !n.is_empty() => format!("_{}", token_or_na(Some(n))),
        _ => String::new(),
    };
    format!(
        "result_{test}{name_part}{hw_part}_{dataset}_{flow}_{n}_in{ri}_out{ro}_{stamp}.json",
        test = replace_bad(&trial.test_name),
        flow = replace_bad(&flags::flow_text(raw, &trial.step)),
        n = trial.step.num_prompts,
        ri = token_or_na(python_str(raw.get("random_input_len")).as_deref()),
        ro = token_or_na(python_str(raw.get("random_output_len")).as_deref()),
    )
}

/// Python's `str(value)` for the scalar values a length key may hold (`None` for null).
fn python_str(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(pyfmt::number_str(n)),
        Value::Bool(b) => Some(if *b { "True" } else { "False" }.into()),
        other => Some(pyfmt::compact_json(other)),
    }
}

/// Upstream's `_safe_filename_token`: bad characters replaced, trimmed, `na` when empty.
fn token_or_na(value: Option<&str>) -> String {
    let s = replace_bad(value.unwrap_or("").trim());
    if s.is_empty() { "na".into() } else { s }
}

fn replace_bad(s: &str) -> String {
    s.chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The current local time as upstream stamps result files (`datetime.now()`).
pub fn stamp_now() -> String {
    chrono::Local::now().format("%Y%m%d-%H%M%S").to_string()
}
