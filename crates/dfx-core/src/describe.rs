//! A compact, stable text listing of a plan (`--list --verbose`, snapshot tests): per
//! trial its name, where it came from, its server, its bench step and its thresholds with
//! their source.

use std::fmt::Write;

use crate::baseline::{ThresholdSource, Thresholds};
use crate::plan::{Plan, Trial};
use crate::server::{ServeArgs, ServerSpec, ServerType};
use crate::step::{StepKind, python_float_str};
use crate::verdict::fmt_num;

/// The whole plan, one block per trial, then the load warnings.
pub fn describe_plan(plan: &Plan) -> String {
    let ignored = plan
        .trials
        .iter()
        .filter(|t| t.unsupported.is_some())
        .count();
    let mut out = format!("{} trial(s), {ignored} ignored\n", plan.trials.len());
    for t in &plan.trials {
        out.push_str(&describe_trial(t));
    }
    if !plan.warnings.is_empty() {
        out.push_str("warnings:\n");
        for w in &plan.warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    out
}

/// One trial's block (first line: the trial name).
pub(crate) fn describe_trial(t: &Trial) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", t.name);
    let _ = writeln!(
        out,
        "    from: {} case [{}] benchmark_params[{}]; marks: {}{}",
        t.source.file.display(),
        t.source.case_index,
        t.source.raw_entry_index,
        if t.marks.is_empty() {
            "-".to_string()
        } else {
            t.marks.join(", ")
        },
        if t.hardware_marks.is_empty() {
            String::new()
        } else {
            format!(" (hardware: {})", t.hardware_marks.join(", "))
        }
    );
    let _ = writeln!(out, "    server: {}", describe_server(&t.server));
    let _ = writeln!(out, "    bench: {}", describe_bench(t));
    let _ = writeln!(
        out,
        "    thresholds: {}",
        describe_thresholds(&t.thresholds)
    );
    if let Some(reason) = &t.unsupported {
        let _ = writeln!(out, "    ignored: {reason}");
    }
    out
}

/// `vllm-omni <model> deploy=… serve_args=… extra=[…]` (only what is set).
pub(crate) fn describe_server(s: &ServerSpec) -> String {
    let mut parts = vec![
        match s.server_type {
            ServerType::VllmOmni => "vllm-omni".to_string(),
            ServerType::SglangOmni => "sglang-omni".to_string(),
        },
        s.model.clone(),
    ];
    if let Some(d) = &s.deploy {
        parts.push(format!(
            "deploy={}{}",
            d.name,
            if d.edited { " (edited)" } else { "" }
        ));
    }
    if let Some(o) = &s.stage_overrides {
        parts.push(format!("stage_overrides={o}"));
    }
    match &s.serve_args {
        ServeArgs::Map(m) if !m.is_empty() => parts.push(format!(
            "serve_args={}",
            serde_json::Value::Object(m.clone())
        )),
        ServeArgs::List(l) if !l.is_empty() => parts.push(format!("serve_args=[{}]", l.join(" "))),
        _ => {}
    }
    if !s.extra_cli_args.is_empty() {
        parts.push(format!("extra=[{}]", s.extra_cli_args.join(" ")));
    }
    if !s.use_omni {
        parts.push("use_omni=false".into());
    }
    if !s.env.is_empty() {
        let keys: Vec<&str> = s.env.keys().map(String::as_str).collect();
        parts.push(format!("env={}", keys.join(",")));
    }
    if let Some(t) = s.ready_timeout {
        parts.push(format!("ready_timeout={}s", fmt_num(t.as_secs_f64())));
    }
    parts.join(" ")
}

fn describe_bench(t: &Trial) -> String {
    let e = &t.entry;
    if let Some(c) = e.runner.contract() {
        let names = &c.scenarios;
        return format!("contract, {} scenario(s): {}", names.len(), names.join(" "));
    }
    let mut parts: Vec<String> = Vec::new();
    for v in [&e.dataset_name, &e.backend, &e.endpoint]
        .into_iter()
        .flatten()
    {
        parts.push(v.clone());
    }
    if let Some(p) = &e.dataset_path {
        parts.push(format!("path={p}"));
    }
    let step = match t.step.kind {
        StepKind::Concurrency { max_concurrency } => format!("concurrency {max_concurrency}"),
        StepKind::RequestRate { request_rate } => {
            format!("rate {} req/s", python_float_str(request_rate))
        }
    };
    parts.push(format!(
        "| {step}, {} prompts (step {})",
        t.step.num_prompts, t.step.index
    ));
    parts.join(" ")
}

/// `metric <= value [source]` items, then skipped metrics and the note.
pub(crate) fn describe_thresholds(th: &Thresholds) -> String {
    let mut parts: Vec<String> = th
        .items
        .iter()
        .map(|i| {
            let src = match &i.source {
                ThresholdSource::Inline => "inline".to_string(),
                ThresholdSource::Store { file } => file.display().to_string(),
                ThresholdSource::ResultFile => "result.json".to_string(),
            };
            format!(
                "{} {} {} [{src}]",
                i.metric,
                i.direction.symbol(),
                fmt_num(i.value)
            )
        })
        .collect();
    if !th.skipped.is_empty() {
        parts.push(format!("skipped (null): {}", th.skipped.join(", ")));
    }
    if let Some(n) = &th.note {
        parts.push(format!("note: {n}"));
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join("; ")
    }
}
