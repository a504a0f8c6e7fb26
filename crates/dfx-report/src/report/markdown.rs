//! `report.md`: run facts, one row per trial, then failures and notes.

use std::fmt::Write;

use super::{completion_text, header_rows, threshold_views};
use crate::fmt::{self, md_cell};
use crate::metrics::FAMILIES;
use crate::run::{Outcome, Run, TrialSummary};

/// Renders `report.md`.
pub fn render_markdown(run: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# dfx-perf run `{}`\n", run.run_id);
    out.push_str("| | |\n|---|---|\n");
    for (k, v) in header_rows(run) {
        let _ = writeln!(out, "| {k} | {} |", md_cell(&v));
    }
    out.push_str("\n## Trials\n\n");
    out.push_str(
        "Thresholds: value, how it compares with its threshold, the threshold and the gap \
         (the value relative to the threshold), as the terminal prints them. **BREACH** marks \
         a metric on the wrong side of its threshold.\n\n",
    );
    out.push_str("| verdict | trial | completed |");
    for f in FAMILIES {
        let _ = write!(out, " {} |", f.heading(f.keys[0]));
    }
    out.push_str(" thresholds |\n|---|---|---|");
    out.push_str(&"---:|".repeat(FAMILIES.len()));
    out.push_str("---|\n");
    for t in &run.trials {
        trial_row(&mut out, t);
    }
    failures_section(&mut out, run);
    notes_section(&mut out, run);
    out
}

fn trial_row(out: &mut String, t: &TrialSummary) {
    let verdict = match t.outcome {
        Outcome::Failed => "**FAILED**",
        o => o.label(),
    };
    let _ = write!(
        out,
        "| {verdict} | `{}` | {} |",
        md_cell(&t.name),
        completion_text(t)
    );
    for f in FAMILIES {
        let cell = if t.outcome == Outcome::Ignored || t.is_fallback() {
            "-".to_string()
        } else {
            t.metric(f.keys[0])
                .map(fmt::num)
                .unwrap_or_else(|| "-".into())
        };
        let _ = write!(out, " {cell} |");
    }
    let views = threshold_views(t);
    let cell = if t.needs_data() {
        "needs data".to_string()
    } else if views.is_empty() {
        "-".to_string()
    } else {
        views
            .iter()
            .map(|v| {
                let text = md_cell(&v.text());
                if v.breached {
                    format!("**BREACH** {text}")
                } else {
                    text
                }
            })
            .collect::<Vec<_>>()
            .join("<br>")
    };
    let _ = writeln!(out, " {cell} |");
}

fn failures_section(out: &mut String, run: &Run) {
    let failed: Vec<&TrialSummary> = run
        .trials
        .iter()
        .filter(|t| t.outcome != Outcome::Ignored)
        .filter(|t| t.outcome == Outcome::Failed || !t.warnings.is_empty())
        .collect();
    if failed.is_empty() {
        return;
    }
    out.push_str("\n## Failures and warnings\n");
    for t in failed {
        let _ = writeln!(out, "\n### `{}` ({})\n", t.name, t.outcome.label());
        for f in &t.failures {
            let _ = writeln!(out, "- failure: {}", one_line(f));
        }
        for v in threshold_views(t).iter().filter(|v| v.breached) {
            if !t.failures.iter().any(|f| f.contains(&v.metric)) {
                let _ = writeln!(out, "- breach: {}", v.text());
            }
        }
        for w in &t.warnings {
            let _ = writeln!(out, "- warning: {}", one_line(w));
        }
        if let Some(p) = &t.result {
            let _ = writeln!(out, "- result: `{p}`");
        }
    }
}

fn notes_section(out: &mut String, run: &Run) {
    let ignored: Vec<&TrialSummary> = run
        .trials
        .iter()
        .filter(|t| t.outcome == Outcome::Ignored)
        .collect();
    let needs: Vec<&str> = run
        .trials
        .iter()
        .filter(|t| t.needs_data())
        .map(|t| t.name.as_str())
        .collect();
    if ignored.is_empty() && run.notes.is_empty() && needs.is_empty() {
        return;
    }
    out.push_str("\n## Notes\n\n");
    for n in &run.notes {
        let _ = writeln!(out, "- {}", one_line(n));
    }
    if !needs.is_empty() {
        let _ = writeln!(
            out,
            "- needs data: {} trial(s) had no threshold for {} and were judged on completion only (`dfx-perf recalibrate --from-history` fills them once enough runs exist): {}",
            needs.len(),
            run.hardware_identity(),
            needs
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for t in ignored {
        let why = one_line(&t.ignored_text());
        let _ = writeln!(out, "- ignored `{}`: {why}", t.name);
    }
}

/// Markdown list items must stay on one line; `<` would start HTML.
fn one_line(s: &str) -> String {
    fmt::visible(s)
        .replace(['\n', '\r'], " ")
        .replace('<', "&lt;")
}
