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

/// Why `r` writes nothing, for the line after the table (`None` when it writes
/// something). `metrics_asked` is `--metrics`: without it only metrics that already have a
/// threshold (in the runs or the store) are calibrated, so runs without thresholds give an
/// empty table.
pub fn nothing_to_write(r: &Recalibration, metrics_asked: &[String]) -> Option<String> {
    if r.changes.iter().any(|c| c.writes()) {
        return None;
    }
    if r.changes.is_empty() {
        return Some(if metrics_asked.is_empty() {
            format!(
                "nothing to calibrate: no trial of these runs has a threshold for `{}` (inline \
                 in its config or in {}), and without --metrics only metrics that have one are \
                 calibrated; name new ones, e.g. --metrics median_audio_ttfp_ms,audio_throughput",
                r.hardware,
                r.store.display()
            )
        } else {
            format!(
                "nothing to calibrate: no trial of these runs measured {} (the notes say why, \
                 per trial)",
                metrics_asked.join(", ")
            )
        });
    }
    let n = |d: Decision| r.changes.iter().filter(|c| c.decision == d).count();
    Some(format!(
        "nothing to write: {} threshold(s) within --tolerance of the old one, {} looser than \
         the old one (kept; --allow-loosen writes them)",
        n(Decision::KeepWithinTolerance),
        n(Decision::KeepWouldLoosen)
    ))
}
