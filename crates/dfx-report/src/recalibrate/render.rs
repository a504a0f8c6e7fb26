//! The recalibration table: old → new per trial and metric, with the decision.

use std::fmt::Write;

use super::{Decision, Recalibration, margin_text};
use crate::fmt;

/// Renders the table printed by `dfx-perf recalibrate`.
pub fn render_table(r: &Recalibration) -> String {
    let header = [
        "trial",
        "metric",
        "runs",
        "median",
        "new (margin)",
        "old (source)",
        "change",
        "decision",
    ];
    let rows: Vec<[String; 8]> = r
        .changes
        .iter()
        .map(|c| {
            [
                c.trial.clone(),
                c.metric.clone(),
                c.values.len().to_string(),
                fmt::num(c.median),
                format!("{} ({})", c.proposed, margin_text(c.margin, c.direction)),
                c.old
                    .as_ref()
                    .map(|o| format!("{} ({})", o.value, o.source))
                    .unwrap_or_else(|| "-".into()),
                c.relative.map(fmt::pct).unwrap_or_else(|| "new".into()),
                c.decision.label().to_string(),
            ]
        })
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "hardware: {}\nruns: {}\nstore: {}",
        r.hardware,
        r.runs.join(", "),
        r.store.display()
    );
    out.push_str(&fmt::text_table(header, &rows));
    let n = |d: Decision| r.changes.iter().filter(|c| c.decision == d).count();
    let _ = writeln!(
        out,
        "\n{} to write: {} added, {} tightened, {} loosened; {} kept ({} within tolerance, {} would loosen)",
        r.changes.iter().filter(|c| c.writes()).count(),
        n(Decision::Add),
        n(Decision::Tighten),
        n(Decision::Loosen),
        n(Decision::KeepWithinTolerance) + n(Decision::KeepWouldLoosen),
        n(Decision::KeepWithinTolerance),
        n(Decision::KeepWouldLoosen),
    );
    for note in &r.notes {
        let _ = writeln!(out, "note: {}", fmt::visible(note));
    }
    out
}
