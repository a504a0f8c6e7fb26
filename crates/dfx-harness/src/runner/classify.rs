//! A failed trial's [`FailureClass`] and its one-line detail, from its [`TrialFailure`]s:
//! each failure has a class, the most causal one wins (`FailureClass::ALL`'s order), its
//! detail names the cause (the server log's, when a pattern of [`LOG_CAUSES`] matches),
//! the top request errors with counts, or the breached metrics.

use dfx_core::bench::STALLED_PREFIX;
use dfx_core::result::ResultDoc;
use dfx_core::server::ServerError;
use std::collections::BTreeMap;

use dfx_core::verdict::{
    Breach, FailureClass, MetricNoise, NoiseSource, breach_detail, classify_breaches,
};
use serde_json::Value;

use super::failure::{NotRun, TrialFailure};
use crate::pool::AcquireError;

/// Causes named when the server log shows them: `(text, lowercase, cause)`, first match
/// wins, scanned over the log tail.
const LOG_CAUSES: &[(&str, &str)] = &[
    ("out of memory", "out of memory"),
    ("outofmemoryerror", "out of memory"),
    ("address already in use", "port in use"),
    ("repository not found", "model or weights missing"),
    ("not a valid model identifier", "model or weights missing"),
    (
        "does not appear to have a file named",
        "model or weights missing",
    ),
    (
        "no such file or directory",
        "a file is missing (model or weights?)",
    ),
    ("gated repo", "model access denied (gated repo)"),
    ("no module named", "a python module is missing"),
    ("no cuda gpus are available", "no GPU available"),
];

/// Longest detail line.
const MAX_DETAIL: usize = 240;

/// The cause a server log tail shows, with `(server log)`, when a pattern matches.
pub(crate) fn log_cause(log_tail: &str) -> Option<String> {
    let lower = log_tail.to_ascii_lowercase();
    LOG_CAUSES
        .iter()
        .find(|(pattern, _)| lower.contains(pattern))
        .map(|(_, cause)| format!("{cause} (server log)"))
}

/// `kind` then the log's cause when it shows one.
fn with_cause(kind: String, log_tail: &str) -> String {
    match log_cause(log_tail) {
        Some(cause) => format!("{kind}: {cause}"),
        None => kind,
    }
}

/// The class and detail of a server that could not be had for a trial.
pub(crate) fn start_failure(e: &AcquireError) -> (FailureClass, String) {
    let detail = match e {
        AcquireError::Interrupted => {
            return (
                FailureClass::Interrupted,
                "interrupted before its server started".into(),
            );
        }
        AcquireError::Start(s) => server_start_detail(s),
        AcquireError::FailedBefore(msg) => with_cause(
            "not retried: failed to start for an earlier trial".into(),
            msg,
        ),
        AcquireError::Judge(msg) => with_cause("the judge server failed".into(), msg),
        AcquireError::Folder { .. } => first_line(&e.to_string()),
    };
    (FailureClass::ServerStart, detail)
}

fn server_start_detail(e: &ServerError) -> String {
    match e {
        ServerError::PortInUse { port, .. } => format!("port in use ({port} already answers)"),
        ServerError::Spawn { command, .. } => format!("could not spawn `{command}`"),
        ServerError::ExitedBeforeReady {
            status, log_tail, ..
        } => with_cause(format!("exited at start with {status}"), log_tail),
        ServerError::NotReady {
            waited, log_tail, ..
        } => with_cause(
            format!("never ready in {:.0} s", waited.as_secs_f64()),
            log_tail,
        ),
        other => first_line(&other.to_string()),
    }
}

/// What a class needs beyond the failures: the result, the bench's errors, the noise.
pub(crate) struct Evidence<'a> {
    pub doc: &'a ResultDoc,
    /// The bench's first distinct request errors (a stall's line first).
    pub errors: &'a [String],
    /// Noise per metric (see [`dfx_core::verdict::classify_breaches`] and [`cell_noise`]).
    pub noise: &'a dyn Fn(&str) -> Option<MetricNoise>,
}

/// The class and detail of a trial with these failures (`None` when there are none).
pub(crate) fn classify(
    failures: &[TrialFailure],
    ev: &Evidence<'_>,
) -> Option<(FailureClass, String)> {
    let mut breaches: Vec<Breach> = Vec::new();
    let mut best: Option<(FailureClass, String)> = None;
    for f in failures {
        let (class, detail) = match one(f, ev) {
            One::Class(c, d) => (c, d),
            One::Breach(b) => {
                breaches.push(b.clone());
                (
                    classify_breaches(std::slice::from_ref(b), ev.noise),
                    String::new(),
                )
            }
        };
        if best.as_ref().is_none_or(|(c, _)| class < *c) {
            best = Some((class, detail));
        }
    }
    let (class, detail) = best?;
    if matches!(
        class,
        FailureClass::Breach | FailureClass::BreachWithinNoise
    ) {
        let class = classify_breaches(&breaches, ev.noise);
        return Some((class, clip(&breach_detail(&breaches, ev.noise))));
    }
    Some((class, clip(&detail)))
}

enum One<'a> {
    Class(FailureClass, String),
    Breach(&'a Breach),
}

fn one<'a>(f: &'a TrialFailure, ev: &Evidence<'_>) -> One<'a> {
    use FailureClass as C;
    let text = || first_line(&f.to_string());
    let (class, detail) = match f {
        TrialFailure::NotRun(NotRun::ServerStart { class, detail, .. }) => (*class, detail.clone()),
        TrialFailure::NotRun(_)
        | TrialFailure::Fallback { .. }
        | TrialFailure::FallbackUnjudged { .. }
        | TrialFailure::NoResult(_)
        | TrialFailure::BenchEnded { .. }
        | TrialFailure::InvalidLoad(_) => (C::Client, text()),
        TrialFailure::ServerDied(d) => (
            C::ServerExit,
            with_cause(
                format!("died during the trial with {}", d.status),
                &d.log_tail,
            ),
        ),
        TrialFailure::Quality(_) | TrialFailure::Capacity(_) | TrialFailure::Verdict(_) => {
            (C::Check, text())
        }
        TrialFailure::CreateDir { .. }
        | TrialFailure::WriteRepeat { .. }
        | TrialFailure::Unexplained => (C::Harness, text()),
        TrialFailure::Incomplete(_) => incomplete(ev),
        TrialFailure::Repeat { k, of, failure } => match one(failure, ev) {
            One::Class(c, d) => (c, format!("repeat {k}/{of}: {d}")),
            b @ One::Breach(_) => return b,
        },
        TrialFailure::Breach(b) => return One::Breach(b),
    };
    One::Class(class, detail)
}

/// Fewer requests completed than were sent: a stall when the stall rule ended the step,
/// else request errors, with the top error classes and their counts.
fn incomplete(ev: &Evidence<'_>) -> (FailureClass, String) {
    if let Some(stall) = ev.errors.first().filter(|e| e.starts_with(STALLED_PREFIX)) {
        let short = stall.split("; last:").next().unwrap_or(stall);
        return (FailureClass::Stalled, short.to_string());
    }
    let num = |k: &str| ev.doc.get(k).and_then(Value::as_f64);
    let mut counts: Vec<(String, u64)> = match ev.doc.get("error_counts") {
        Some(Value::Object(m)) => m
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
            .collect(),
        _ => Vec::new(),
    };
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut detail = match (num("failed"), num("num_prompts").or(num("completed"))) {
        (Some(failed), Some(n)) if failed > 0.0 => {
            format!("{failed} of {} requests failed", n.max(failed))
        }
        _ => "requests did not complete".to_string(),
    };
    let top: Vec<String> = counts
        .iter()
        .take(3)
        .map(|(class, n)| format!("{class} ×{n}"))
        .collect();
    if !top.is_empty() {
        detail.push_str(&format!(": {}", top.join(", ")));
    }
    if let Some(first) = ev.errors.first() {
        detail.push_str(&format!("; first: `{}`", clip_to(first, 100)));
    }
    (FailureClass::ServerErrors, detail)
}

/// Relative noise per metric from the trial's repeats: half the 95 % interval of the
/// median over the median (`doc.repeats.stats.<metric>`).
pub(crate) fn repeat_noise(doc: &ResultDoc, metric: &str) -> Option<f64> {
    let s = doc.get("repeats")?.get("stats")?.get(metric)?;
    let get = |k: &str| s.get(k).and_then(Value::as_f64);
    let (median, lo, hi) = (get("median")?, get("ci95_low")?, get("ci95_high")?);
    let noise = (hi - lo) / 2.0 / median.abs();
    (noise.is_finite() && get("n").is_none_or(|n| n >= 2.0)).then_some(noise)
}

/// The noise a breach of `metric` is judged against: the larger of the trial's repeats'
/// ([`repeat_noise`]) and the cell's history's (`history`, from
/// `dfx_history::noise::relative_noise`; empty without `--history`).
pub(crate) fn cell_noise(
    doc: &ResultDoc,
    history: &BTreeMap<String, MetricNoise>,
    metric: &str,
) -> Option<MetricNoise> {
    let repeats = repeat_noise(doc, metric).map(|rel| MetricNoise {
        rel,
        source: NoiseSource::Repeats,
    });
    MetricNoise::larger(repeats, history.get(metric).copied())
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

fn clip(s: &str) -> String {
    clip_to(s, MAX_DETAIL)
}

fn clip_to(s: &str, max: usize) -> String {
    let s = first_line(s);
    if s.chars().count() <= max {
        return s;
    }
    let cut: String = s.chars().take(max - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
