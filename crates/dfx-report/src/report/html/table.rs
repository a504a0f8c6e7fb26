//! The trials table of `report.html`: verdict, trial with links to its files,
//! completion, TTFP and E2EL at p50 / p90 / p99 (the percentiles any trial measured),
//! RTF, throughput and every threshold in the terminal's format. The same rows stand in
//! for a chart where one would show a single point.

use std::fmt::Write;

use super::file_links;
use crate::fmt::{self, html};
use crate::metrics::{FAMILIES, Family};
use crate::report::evidence::Evidence;
use crate::report::{completion_text, threshold_views};
use crate::run::{Outcome, Run, TrialSummary};

/// Families shown at several percentiles, by group id.
const PERCENTILE_FAMILIES: &[&str] = &["ttfp", "e2el"];
/// The percentiles: column label and key prefix.
const PERCENTILES: &[(&str, &str)] = &[("p50", "median_"), ("p90", "p90_"), ("p99", "p99_")];

/// The numeric columns of one family: `(label, result key)` each.
struct FamilyColumns {
    family: &'static Family,
    columns: Vec<(&'static str, String)>,
}

/// Every trial, in plan order.
pub(crate) fn trials_table(out: &mut String, run: &Run, evidence: &[Evidence]) {
    out.push_str("<h2 id=\"trials\">Trials</h2>\n<p>Thresholds: value, how it compares with its threshold, the threshold and the gap (the value relative to the threshold), as the terminal prints them; <span class=\"breach\">BREACH</span> marks the wrong side.</p>\n");
    let all: Vec<usize> = (0..run.trials.len()).collect();
    table(out, run, evidence, &all);
}

/// The request-rate steps of a test that would each be a single point on a chart.
pub(crate) fn single_rate_table(
    out: &mut String,
    run: &Run,
    evidence: &[Evidence],
    names: &[String],
) {
    let rows: Vec<usize> = names
        .iter()
        .filter_map(|n| run.trials.iter().position(|t| &t.name == n))
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("<p>Request-rate steps (one rate per entry, so no chart):</p>\n");
    table(out, run, evidence, &rows);
}

fn table(out: &mut String, run: &Run, evidence: &[Evidence], rows: &[usize]) {
    let cols = columns(run, evidence);
    out.push_str("<table class=\"trials\">\n<tr><th rowspan=\"2\">verdict</th><th rowspan=\"2\">trial</th><th rowspan=\"2\">completed</th>");
    for fc in &cols {
        let title = match fc.family.unit() {
            "" => fc.family.title().to_string(),
            unit => format!("{} ({unit})", fc.family.title()),
        };
        if fc.columns.len() == 1 && fc.columns[0].0.is_empty() {
            let _ = write!(out, "<th rowspan=\"2\">{}</th>", html(&title));
        } else {
            let _ = write!(
                out,
                "<th colspan=\"{}\">{}</th>",
                fc.columns.len(),
                html(&title)
            );
        }
    }
    out.push_str("<th rowspan=\"2\">thresholds</th></tr>\n<tr>");
    for (label, _) in cols.iter().flat_map(|fc| &fc.columns) {
        if !label.is_empty() {
            let _ = write!(out, "<th>{label}</th>");
        }
    }
    out.push_str("</tr>\n");
    for &i in rows {
        trial_row(out, &run.trials[i], &evidence[i], &cols);
    }
    out.push_str("</table>\n");
}

/// Per family its columns: the percentiles some trial has for TTFP and E2EL (p50 at
/// least), the preferred key for the others.
fn columns(run: &Run, evidence: &[Evidence]) -> Vec<FamilyColumns> {
    FAMILIES
        .iter()
        .map(|family| {
            let first = family.keys[0];
            let stem = first.strip_prefix("median_");
            let columns = match stem.filter(|_| PERCENTILE_FAMILIES.contains(&family.id)) {
                Some(stem) => PERCENTILES
                    .iter()
                    .map(|(label, prefix)| (*label, format!("{prefix}{stem}")))
                    .filter(|(label, key)| {
                        *label == "p50"
                            || run
                                .trials
                                .iter()
                                .zip(evidence)
                                .any(|(t, ev)| ev.metric(t, key).is_some())
                    })
                    .collect(),
                None => vec![(stat_label(first), first.to_string())],
            };
            FamilyColumns { family, columns }
        })
        .collect()
}

fn stat_label(key: &str) -> &'static str {
    if key.starts_with("median_") {
        "p50"
    } else if key.starts_with("mean_") {
        "mean"
    } else {
        ""
    }
}

fn outcome_class(o: Outcome) -> &'static str {
    match o {
        Outcome::Passed => "passed",
        Outcome::Failed => "failed",
        Outcome::Ignored => "ignored",
    }
}

fn trial_row(out: &mut String, t: &TrialSummary, ev: &Evidence, cols: &[FamilyColumns]) {
    let class = outcome_class(t.outcome);
    let _ = write!(
        out,
        "<tr class=\"{class}\"><td class=\"verdict {class}\">{}",
        t.outcome.label()
    );
    if let Some(c) = &ev.failure_class {
        let _ = write!(out, "<br><span class=\"class\">{}</span>", html(c));
    }
    let _ = write!(
        out,
        "</td><td class=\"trial\"><code>{}</code><br>",
        html(&t.name)
    );
    file_links(out, &ev.links);
    let _ = write!(out, "</td><td class=\"num\">{}</td>", completion_text(t));
    for (_, key) in cols.iter().flat_map(|fc| &fc.columns) {
        let v = ev.metric(t, key);
        let _ = write!(
            out,
            "<td class=\"num\">{}</td>",
            v.map(fmt::num).unwrap_or_else(|| "-".into())
        );
    }
    let views = threshold_views(t);
    out.push_str("<td class=\"thr\">");
    if views.is_empty() {
        out.push('-');
    }
    for (i, v) in views.iter().enumerate() {
        if i > 0 {
            out.push_str("<br>");
        }
        if v.breached {
            let _ = write!(
                out,
                "<span class=\"breach\">BREACH {}</span>",
                html(&v.text())
            );
        } else {
            out.push_str(&html(&v.text()));
        }
    }
    out.push_str("</td></tr>\n");
}
