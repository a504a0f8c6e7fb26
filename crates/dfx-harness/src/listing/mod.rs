//! `--list-verbose`: libtest's `<name>: test` line for every selected trial, each followed
//! by indented details (step, server group, bench, thresholds with direction and source,
//! marks, and why a trial is ignored). Plain `--list` stays libtest's own output so tools
//! that parse it keep working.

use std::fmt::Write as _;

use dfx_core::baseline::{Direction, ThresholdSource};
use dfx_core::plan::{Dialect, StepKind, python_float_str};
use dfx_core::runner_keys::RunnerKeys;
use dfx_core::server::ServerType;

use crate::select::{BenchSet, Disposition, PlannedTrial};

/// What the listing needs besides the trials.
pub(crate) struct ListContext<'a> {
    pub benches: &'a BenchSet,
    /// Launcher name (`vllm-omni`, `sim`, `fake`, `attach`).
    pub launcher: &'a str,
    pub hardware: &'a str,
    pub assert_baseline: bool,
    /// `--partition`: the shard being listed.
    pub shard: Option<&'a crate::partition::ShardRecord>,
}

/// Renders the verbose listing of `selected` (indices into `planned`).
pub(crate) fn render_verbose(
    planned: &[PlannedTrial],
    selected: &[usize],
    ctx: &ListContext<'_>,
) -> String {
    let mut out = String::new();
    let groups = planned.last().map_or(0, |p| p.server_group);
    let shard = ctx.shard.map_or_else(String::new, |r| {
        format!(
            "; shard {} ({} of {} selected server groups)",
            r.spec, r.server_groups_in_shard, r.server_groups
        )
    });
    let _ = writeln!(
        out,
        "# {} of {} trials selected; {} server configuration(s); hardware {}; server {}{shard}",
        selected.len(),
        planned.len(),
        groups,
        ctx.hardware,
        ctx.launcher
    );
    for &i in selected {
        render_one(&mut out, &planned[i], ctx);
    }
    out
}

/// What one trial runs: the sweep step, or what a runner or a capacity search does instead.
fn step_line(t: &dfx_core::plan::Trial) -> String {
    let load = match t.step.kind {
        StepKind::Concurrency { max_concurrency } => format!("concurrency {max_concurrency}"),
        StepKind::RequestRate { request_rate } => {
            format!("request rate {}/s", python_float_str(request_rate))
        }
    };
    let n = t.step.num_prompts;
    match &t.entry.runner {
        RunnerKeys::Contract(k) => {
            let mut names: Vec<&str> = k.scenarios.iter().take(4).copied().collect();
            if k.scenarios.len() > 4 {
                names.push("…");
            }
            format!(
                "contract: {} scenario(s) ({}), one request at a time, replies checked, \
                 no load measured; timeout {} s a request",
                k.scenarios.len(),
                names.join(", "),
                python_float_str(k.timeout_s)
            )
        }
        RunnerKeys::Stability(k) => format!(
            "soak of {} s (before --duration-scale) at {load}, random texts of {}–{} words",
            python_float_str(k.duration_s),
            k.words.0,
            k.words.1
        ),
        RunnerKeys::NativeDuplex(k) => {
            let count = |v: Option<u64>| v.map_or_else(|| "?".to_string(), |v| v.to_string());
            format!(
                "{} session(s) × {} turn(s); {} warmup and {} measured trial(s)",
                count(k.sessions),
                count(k.turns),
                count(k.warmups),
                count(k.repeats)
            )
        }
        RunnerKeys::None => match &t.entry.capacity {
            Some(c) => format!(
                "capacity search from {}/s ({}–{}/s), {n} prompts a probe, at most {} probes",
                python_float_str(c.start_rate),
                python_float_str(c.min_rate),
                python_float_str(c.max_rate),
                c.max_probes
            ),
            None => format!("{load}, {n} prompts (sweep index {})", t.step.index),
        },
    }
}

fn render_one(out: &mut String, p: &PlannedTrial, ctx: &ListContext<'_>) {
    let t = &p.trial;
    let _ = writeln!(out, "{}: test", t.name);
    let _ = writeln!(out, "    step       {}", step_line(t));
    let server_type = match t.server.server_type {
        ServerType::VllmOmni => "vllm-omni",
        ServerType::SglangOmni => "sglang-omni",
    };
    let deploy = t
        .server
        .deploy
        .as_ref()
        .map(|d| {
            format!(
                " deploy={}{}",
                d.name,
                if d.edited { " (edited)" } else { "" }
            )
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "    server     #{} {server_type} {}{deploy} (launcher {})",
        p.server_group, t.server.model, ctx.launcher
    );
    if let Some(j) = &t.server.judge {
        let devices: Vec<String> = j.device_indices.iter().map(usize::to_string).collect();
        let _ = writeln!(
            out,
            "    judge      {} (use_omni {}, devices [{}] of CUDA_VISIBLE_DEVICES, {})",
            j.server.model,
            j.server.use_omni,
            devices.join(","),
            if j.required {
                "required"
            } else {
                "not required"
            }
        );
    }
    let runner = match t.entry.dialect {
        Dialect::Omni => None,
        Dialect::Diffusion => Some("diffusion"),
        Dialect::NativeDuplex => Some("native-duplex"),
        Dialect::Stability => Some("stability"),
        Dialect::Contract => Some("contract"),
    };
    if let Some(r) = runner {
        let _ = writeln!(out, "    runner     {r}");
    }
    match &p.disposition {
        Disposition::Run { slot } => {
            let _ = writeln!(out, "    bench      {}", ctx.benches.label(*slot));
        }
        Disposition::Skip { reason } if ctx.assert_baseline => {
            let _ = writeln!(out, "    FAILS      (--assert-baseline) {reason}");
        }
        Disposition::Skip { reason } => {
            let _ = writeln!(out, "    ignored    {reason}");
        }
    }
    for th in &t.thresholds.items {
        let op = match th.direction {
            Direction::LowerIsBetter => "<=",
            Direction::HigherIsBetter => ">=",
        };
        let source = match &th.source {
            ThresholdSource::Inline => "inline".to_string(),
            ThresholdSource::Store { file } => format!(
                "store {}",
                file.file_name().map_or_else(
                    || file.display().to_string(),
                    |f| f.to_string_lossy().into_owned()
                )
            ),
            ThresholdSource::ResultFile => "result.json".to_string(),
        };
        let _ = writeln!(
            out,
            "    threshold  {} {op} {} ({source})",
            th.metric, th.value
        );
    }
    for m in &t.thresholds.skipped {
        let _ = writeln!(out, "    threshold  {m}: none (null baseline)");
    }
    if let Some(note) = &t.thresholds.note {
        let none = if t.thresholds.items.is_empty() {
            "none: "
        } else {
            ""
        };
        let _ = writeln!(out, "    threshold  {none}{note}");
    }
    if t.thresholds.items.is_empty()
        && t.thresholds.skipped.is_empty()
        && t.thresholds.note.is_none()
    {
        let _ = writeln!(out, "    threshold  none");
    }
    if !t.marks.is_empty() {
        let _ = writeln!(out, "    marks      {}", t.marks.join(", "));
    }
}

#[cfg(test)]
mod tests;
