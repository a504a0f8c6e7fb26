//! The argv of one diffusion step, exactly as upstream's `run_diffusion_benchmark.py`
//! builds it (docs/research/upstream-2026.md §3):
//!
//! `<python> -u <script> --host H --port P --model M --endpoint EP --dataset D --task T
//! --output-file F [--return-stage-metrics] <entry keys> <sweep flags>`
//!
//! - `--model` is the case's served model; `--dataset` / `--task` the entry's (defaults
//!   `random` / `t2i`); `--endpoint` the entry's resolved endpoint (case
//!   `benchmark_endpoint`, else by task).
//! - `--return-stage-metrics` only for `/v1/chat/completions` when the server's
//!   `serve_args` has a truthy `enable-diffusion-pipeline-profiler`.
//! - Every other entry key except `baseline`, `dataset`, `task`, `name` and the three
//!   sweep keys, in file order, as `--<key>` **verbatim** (no `_` → `-`): `null` skipped,
//!   `true` a bare flag, `false` omitted, objects and lists `json.dumps` compact with
//!   non-ASCII escaped, numbers Python's `str`, strings as written.
//! - Sweep flags last: `--num-prompts N --request-rate R` (rate step),
//!   `--num-prompts N --request-rate inf --max-concurrency C` (concurrency step),
//!   `--num-prompts N` alone when the entry has neither `request-rate` nor
//!   `max-concurrency`.

use std::collections::BTreeMap;

use dfx_core::bench::BenchContext;
use dfx_core::lenient::python_truthy;
use dfx_core::plan::StepKind;
use dfx_core::server::ServeArgs;
use serde_json::{Map, Value};

use super::Resolved;
use crate::external::{BenchCommand, flags, pyfmt};

/// Entry keys never passed as flags (besides the sweep keys).
pub const EXCLUDED_KEYS: &[&str] = &["baseline", "dataset", "task", "name"];
/// The sweep keys of the diffusion dialect, rendered last from the step.
pub(crate) const SWEEP_KEYS: &[&str] = &["request-rate", "num-prompts", "max-concurrency"];
/// The name of the output file in the trial folder.
pub const OUTPUT_FILE: &str = "diffusion_bench_result.json";

/// Why a diffusion step's command cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The driver cannot run (its script or Python is missing).
    #[error(transparent)]
    Program(#[from] dfx_core::bench::MissingProgram),
    /// The entry has no diffusion endpoint.
    #[error("the entry has no diffusion endpoint")]
    NoEndpoint,
    /// The trial folder has no absolute form.
    #[error("{0}")]
    OutDir(#[source] std::io::Error),
}

/// Builds the command of `ctx`'s step; the output file is `<trial dir>/`[`OUTPUT_FILE`]
/// (absolute, since the child runs in the checkout's `tests/`).
pub fn build(
    ctx: &BenchContext<'_>,
    r: &Resolved,
    extra_env: &BTreeMap<String, String>,
) -> Result<BenchCommand, CommandError> {
    let trial = ctx.trial;
    let entry = &trial.entry;
    let raw = &entry.raw;
    let endpoint = entry.endpoint.clone().ok_or(CommandError::NoEndpoint)?;
    let out_dir = std::path::absolute(&ctx.out_dir).map_err(CommandError::OutDir)?;
    let output = out_dir.join(OUTPUT_FILE);
    let text = |key: &str, default: &str| match raw.get(key) {
        None | Some(Value::Null) => default.to_string(),
        Some(v) => python_str(v),
    };
    let mut args: Vec<String> = vec!["-u".into(), r.script.display().to_string()];
    for (flag, value) in [
        ("--host", ctx.host.clone()),
        ("--port", ctx.port.to_string()),
        ("--model", trial.server.model.clone()),
        ("--endpoint", endpoint.clone()),
        ("--dataset", text("dataset", "random")),
        ("--task", text("task", "t2i")),
        ("--output-file", output.display().to_string()),
    ] {
        args.extend([flag.to_string(), value]);
    }
    if endpoint == "/v1/chat/completions" && profiler_on(&trial.server.serve_args) {
        args.push("--return-stage-metrics".into());
    }
    args.extend(entry_flags(raw));
    args.extend(sweep_flags(ctx));
    Ok(BenchCommand {
        program: r.python.clone(),
        args,
        env: extra_env.clone(),
        result_path: output,
        cwd: r.cwd.clone(),
    })
}

fn profiler_on(serve_args: &ServeArgs) -> bool {
    match serve_args {
        ServeArgs::Map(m) => python_truthy(m.get("enable-diffusion-pipeline-profiler")),
        ServeArgs::List(_) => false,
    }
}

/// Python's `str(v)` for a flag value (objects and lists: compact ASCII JSON).
fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => pyfmt::number_str(n),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Null => "None".into(),
        other => pyfmt::compact_json_ascii(other),
    }
}

/// The entry's own keys as flags, verbatim, in file order.
pub(crate) fn entry_flags(raw: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for (key, value) in raw {
        if EXCLUDED_KEYS.contains(&key.as_str()) || SWEEP_KEYS.contains(&key.as_str()) {
            continue;
        }
        let flag = format!("--{key}");
        match value {
            Value::Null | Value::Bool(false) => {}
            Value::Bool(true) => out.push(flag),
            other => out.extend([flag, python_str(other)]),
        }
    }
    out
}

/// The step's flags, last on the line.
fn sweep_flags(ctx: &BenchContext<'_>) -> Vec<String> {
    let raw = &ctx.trial.entry.raw;
    let step = &ctx.trial.step;
    let mut out = vec!["--num-prompts".to_string(), step.num_prompts.to_string()];
    let swept = ["request-rate", "max-concurrency"]
        .iter()
        .any(|k| raw.get(*k).is_some_and(|v| !v.is_null()));
    if !swept {
        return out;
    }
    match step.kind {
        StepKind::RequestRate { .. } => {
            out.extend(["--request-rate".into(), flags::flow_text(raw, step)]);
        }
        StepKind::Concurrency { max_concurrency } => out.extend([
            "--request-rate".into(),
            "inf".into(),
            "--max-concurrency".into(),
            max_concurrency.to_string(),
        ]),
    }
    out
}
