//! The parts of `report.html` that say what went wrong: what the whole run lacks (said
//! once), one section per failed trial (class, cause, breaches, files, log tails), and
//! the remaining warnings and notes.

use std::fmt::Write;

use super::file_links;
use crate::fmt::html;
use crate::report::evidence::Evidence;
use crate::report::threshold_views;
use crate::run::{Outcome, Run, TrialSummary};

/// The verdict's warning for a trial without thresholds (`no thresholds: <why>`); the
/// page says it once per run, not on every trial.
const NO_THRESHOLDS: &str = "no thresholds: ";

/// "needs data" and "no thresholds", once for the whole run.
pub(crate) fn run_notices(out: &mut String, run: &Run) {
    let needs: Vec<&TrialSummary> = run.trials.iter().filter(|t| t.needs_data()).collect();
    let mut notes: Vec<(String, usize)> = Vec::new();
    for w in run.trials.iter().flat_map(|t| &t.warnings) {
        if let Some(why) = w.strip_prefix(NO_THRESHOLDS) {
            match notes.iter_mut().find(|(n, _)| n == why) {
                Some((_, count)) => *count += 1,
                None => notes.push((why.to_string(), 1)),
            }
        }
    }
    if needs.is_empty() && notes.is_empty() {
        return;
    }
    out.push_str("<ul class=\"msgs notices\">");
    if !needs.is_empty() {
        let _ = write!(
            out,
            "<li><span class=\"needs\">needs data</span>: {} of {} trial(s) had no threshold for {} and were judged on completion only (<code>dfx-perf recalibrate --from-history</code> fills them once enough runs exist).</li>",
            needs.len(),
            run.trials.len(),
            html(&run.hardware_identity())
        );
    }
    for (why, count) in notes {
        let _ = write!(
            out,
            "<li>no thresholds ({count} trial(s)): {}</li>",
            html(&why)
        );
    }
    out.push_str("</ul>\n");
}

/// `Failures (3): 2 breach, 1 server_start`, then one section per failed trial.
pub(crate) fn failures_section(out: &mut String, run: &Run, evidence: &[Evidence]) {
    let failed: Vec<(&TrialSummary, &Evidence)> = run
        .trials
        .iter()
        .zip(evidence)
        .filter(|(t, _)| t.outcome == Outcome::Failed)
        .collect();
    if failed.is_empty() {
        return;
    }
    let mut classes: Vec<(&str, usize)> = Vec::new();
    for (_, ev) in &failed {
        let class = ev.failure_class.as_deref().unwrap_or("unclassified");
        match classes.iter_mut().find(|(c, _)| *c == class) {
            Some((_, n)) => *n += 1,
            None => classes.push((class, 1)),
        }
    }
    let by_class: Vec<String> = classes.iter().map(|(c, n)| format!("{n} {c}")).collect();
    let _ = writeln!(
        out,
        "<h2 id=\"failures\">Failures ({}): {}</h2>",
        failed.len(),
        html(&by_class.join(", "))
    );
    for (i, (t, ev)) in failed.into_iter().enumerate() {
        failure(out, i, t, ev);
    }
}

fn failure(out: &mut String, i: usize, t: &TrialSummary, ev: &Evidence) {
    let _ = write!(
        out,
        "<section class=\"failure\" id=\"failure-{i}\"><h3><code>{}</code> <span class=\"verdict failed\">{}</span>",
        html(&t.name),
        t.outcome.label()
    );
    if let Some(c) = &ev.failure_class {
        let _ = write!(out, " <span class=\"class\">{}</span>", html(c));
    }
    out.push_str("</h3>\n");
    if let Some(d) = &ev.failure_detail {
        let _ = writeln!(out, "<p class=\"detail\">{}</p>", html(d));
    }
    let mut lines: Vec<String> = t.failures.clone();
    if t.interrupted {
        lines.push("the run was interrupted while this trial ran".into());
    }
    // a breach the failures already name (under --assert-baseline) is not repeated
    for v in threshold_views(t).iter().filter(|v| v.breached) {
        if !t.failures.iter().any(|f| f.contains(&v.metric)) {
            lines.push(format!("breach: {}", v.text()));
        }
    }
    out.push_str("<ul class=\"msgs\">");
    for l in &lines {
        let _ = write!(out, "<li>{}</li>", html(l));
    }
    for w in t.warnings.iter().filter(|w| !w.starts_with(NO_THRESHOLDS)) {
        let _ = write!(out, "<li>warning: {}</li>", html(w));
    }
    out.push_str("</ul>\n");
    if !ev.links.is_empty() {
        out.push_str("<p>files: ");
        file_links(out, &ev.links);
        out.push_str("</p>\n");
    }
    for tail in &ev.tails {
        let _ = writeln!(
            out,
            "<details open><summary><code>{}</code> (last lines)</summary><pre class=\"tail\">{}</pre></details>",
            html(&tail.file),
            html(&tail.text)
        );
    }
    out.push_str("</section>\n");
}

/// Warnings of trials that did not fail, ignored trials, and the run's notes.
pub(crate) fn notes_section(out: &mut String, run: &Run) {
    let warned: Vec<(&TrialSummary, Vec<&String>)> = run
        .trials
        .iter()
        .filter(|t| t.outcome == Outcome::Passed)
        .map(|t| {
            let w = t
                .warnings
                .iter()
                .filter(|w| !w.starts_with(NO_THRESHOLDS))
                .collect();
            (t, w)
        })
        .filter(|(_, w): &(_, Vec<_>)| !w.is_empty())
        .collect();
    let ignored: Vec<&TrialSummary> = run
        .trials
        .iter()
        .filter(|t| t.outcome == Outcome::Ignored)
        .collect();
    if warned.is_empty() && ignored.is_empty() && run.notes.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"notes\">Warnings and notes</h2>\n<ul class=\"msgs\">");
    for n in &run.notes {
        let _ = write!(out, "<li>{}</li>", html(n));
    }
    for (t, warnings) in warned {
        for w in warnings {
            let _ = write!(
                out,
                "<li><code>{}</code>: warning: {}</li>",
                html(&t.name),
                html(w)
            );
        }
    }
    for t in ignored {
        let _ = write!(
            out,
            "<li><code>{}</code>: ignored: {}</li>",
            html(&t.name),
            html(&t.ignored_text())
        );
    }
    out.push_str("</ul>\n");
}
