//! Comparison output: a terminal table, `compare.md` and `compare.html` (change bars per
//! metric, inline SVG).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use dfx_core::fsutil::write_atomic;

use super::{Comparison, Row, Verdict, setup, side_text};
use crate::ReportError;
use crate::chart::{BarKind, ChangeBar, change_chart_svg};
use crate::fmt::{self, html, md_cell};
use crate::report::html::{page_end, page_start};

/// The files [`write_comparison`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComparePaths {
    /// `<out_dir>/compare.md`.
    pub markdown: PathBuf,
    /// `<out_dir>/compare.html`.
    pub html: PathBuf,
}

/// Writes `compare.md` and `compare.html` into `out_dir` (created if needed).
pub fn write_comparison(c: &Comparison, out_dir: &Path) -> Result<ComparePaths, ReportError> {
    let paths = ComparePaths {
        markdown: out_dir.join("compare.md"),
        html: out_dir.join("compare.html"),
    };
    for (path, text) in [
        (&paths.markdown, render_markdown(c)),
        (&paths.html, render_html(c)),
    ] {
        write_atomic(path, text.as_bytes()).map_err(|e| ReportError::io(path, e))?;
    }
    Ok(paths)
}

fn ratio_text(r: &Row) -> String {
    r.ratio
        .map(|x| format!("{x:.3}"))
        .unwrap_or_else(|| "-".into())
}

fn change_text(r: &Row) -> String {
    let Some(c) = r.change else { return "-".into() };
    let word = match r.direction {
        Some(_) if c > 0.0 => " worse",
        Some(_) if c < 0.0 => " better",
        _ => "",
    };
    let range = r
        .change_range
        .map(|(lo, hi)| format!(" [{} … {}]", fmt::pct(lo), fmt::pct(hi)))
        .unwrap_or_default();
    format!("{}{word}{range}", fmt::pct(c))
}

fn sides(ids: &[super::RunRef]) -> String {
    ids.iter()
        .map(|r| r.run_id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Counts by verdict: `1 regression, 0 improvements, 6 no change, 0 unconfirmed`.
pub(super) fn tally(c: &Comparison) -> String {
    let n = |f: &dyn Fn(&Verdict) -> bool| c.rows.iter().filter(|r| f(&r.verdict)).count();
    format!(
        "{} regression(s), {} improvement(s), {} changed (direction unknown), {} no change, {} unconfirmed, {} not compared",
        n(&|v| *v == Verdict::Regression),
        n(&|v| *v == Verdict::Improvement),
        n(&|v| *v == Verdict::Changed),
        n(&|v| matches!(v, Verdict::WithinNoise | Verdict::BelowTolerance)),
        n(&|v| matches!(v, Verdict::Unconfirmed { .. })),
        n(&|v| matches!(v, Verdict::NotMeasured { .. })),
    )
}

fn rule_text(c: &Comparison) -> String {
    format!(
        "A change is called only with 2+ runs per side, when the ranges [min–max] of A and B \
         do not overlap and the medians differ by more than {:.1} %. With one run per side the \
         ratio is shown but labelled unconfirmed: run both sides again (e.g. 3 times each) to \
         get a verdict.",
        c.tolerance * 100.0
    )
}

/// The terminal table.
pub fn render_text(c: &Comparison) -> String {
    let header = ["trial", "metric", "A", "B", "B/A", "change", "verdict"];
    let rows: Vec<[String; 7]> = c
        .rows
        .iter()
        .map(|r| {
            [
                r.trial.clone(),
                r.metric.clone(),
                side_text(&r.a),
                side_text(&r.b),
                ratio_text(r),
                change_text(r),
                r.verdict.label(),
            ]
        })
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "A: {}\nB: {}\nhardware: {}",
        sides(&c.a),
        sides(&c.b),
        c.hardware
    );
    let _ = writeln!(out, "{}", setup_heading(c));
    for d in &c.setup {
        let _ = writeln!(out, "  {}", fmt::visible(&setup::line(d)));
    }
    out.push_str(&fmt::text_table(header, &rows));
    let _ = writeln!(out, "\n{}", tally(c));
    if c.all_unconfirmed() {
        let _ = writeln!(out, "{}", rule_text(c));
    }
    for n in &c.notes {
        let _ = writeln!(out, "note: {}", fmt::visible(n));
    }
    out
}

/// `compare.md`.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    out.push_str("# dfx-perf comparison\n\n| | |\n|---|---|\n");
    let _ = writeln!(out, "| A | {} |", md_cell(&sides(&c.a)));
    let _ = writeln!(out, "| B | {} |", md_cell(&sides(&c.b)));
    let _ = writeln!(out, "| hardware | {} |", md_cell(&c.hardware));
    let _ = writeln!(out, "| tolerance | {:.1} % |", c.tolerance * 100.0);
    let _ = writeln!(out, "| result | {} |", tally(c));
    let _ = writeln!(out, "\n{}\n", setup_heading(c));
    for d in &c.setup {
        let _ = writeln!(out, "- {}", md_cell(&setup::line(d)));
    }
    if !c.setup.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "{}\n", rule_text(c));
    out.push_str("A and B: median [min–max] n=runs. Change: positive is worse.\n\n");
    out.push_str(
        "| trial | metric | A | B | B/A | change | verdict |\n|---|---|---:|---:|---:|---:|---|\n",
    );
    for r in &c.rows {
        let verdict = match r.verdict {
            Verdict::Regression => format!("**{}**", r.verdict.label()),
            _ => r.verdict.label(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            md_cell(&r.trial),
            md_cell(&r.metric),
            side_text(&r.a),
            side_text(&r.b),
            ratio_text(r),
            change_text(r),
            md_cell(&verdict)
        );
    }
    if !c.notes.is_empty() {
        out.push_str("\n## Notes\n\n");
        for n in &c.notes {
            let _ = writeln!(out, "- {}", md_cell(n));
        }
    }
    out
}

/// `Setup: the same on both sides.` or `Setup differences (3): …`.
fn setup_heading(c: &Comparison) -> String {
    if c.setup.is_empty() {
        "Setup: the same on both sides (hardware, simulator, bench, server, flags).".into()
    } else {
        format!(
            "Setup differences ({}): the verdicts below measure these too.",
            c.setup.len()
        )
    }
}

fn setup_html(out: &mut String, c: &Comparison) {
    let _ = writeln!(
        out,
        "<h2 id=\"setup\">Setup</h2>\n<p>{}</p>",
        html(&setup_heading(c))
    );
    if c.setup.is_empty() {
        return;
    }
    out.push_str("<table class=\"setup\"><tr><th>what</th><th>A</th><th>B</th></tr>\n");
    for d in &c.setup {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            html(&d.aspect),
            html(&d.a.join(" / ")),
            html(&d.b.join(" / "))
        );
    }
    out.push_str("</table>\n");
}

fn bar_kind(v: &Verdict) -> BarKind {
    match v {
        Verdict::Regression | Verdict::Changed => BarKind::Worse,
        Verdict::Improvement => BarKind::Better,
        Verdict::Unconfirmed { .. } => BarKind::Unconfirmed,
        _ => BarKind::Unchanged,
    }
}

fn verdict_class(v: &Verdict) -> &'static str {
    match v {
        Verdict::Regression | Verdict::Changed => "v-worse",
        Verdict::Improvement => "v-better",
        Verdict::Unconfirmed { .. } => "v-unconfirmed",
        _ => "",
    }
}

/// `compare.html`: the table plus one change chart per metric.
pub fn render_html(c: &Comparison) -> String {
    let mut out = String::new();
    page_start(
        &mut out,
        &format!("dfx-perf comparison {} vs {}", sides(&c.a), sides(&c.b)),
    );
    out.push_str("<h1>dfx-perf comparison</h1>\n<table class=\"facts\">\n");
    for (k, v) in [
        ("A", sides(&c.a)),
        ("B", sides(&c.b)),
        ("hardware", c.hardware.clone()),
        ("tolerance", format!("{:.1} %", c.tolerance * 100.0)),
        ("result", tally(c)),
    ] {
        let _ = writeln!(out, "<tr><td>{k}</td><td>{}</td></tr>", html(&v));
    }
    out.push_str("</table>\n");
    setup_html(&mut out, c);
    let _ = writeln!(out, "<p>{}</p>", html(&rule_text(c)));
    charts(&mut out, c);
    out.push_str(
        "<h2>Table</h2>\n<p>A and B: median [min–max] n=runs. Change: positive is worse.</p>\n",
    );
    out.push_str("<table><tr><th>trial</th><th>metric</th><th>A</th><th>B</th><th>B/A</th><th>change</th><th>verdict</th></tr>\n");
    for r in &c.rows {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"verdict {}\">{}</td></tr>",
            html(&r.trial),
            html(&r.metric),
            html(&side_text(&r.a)),
            html(&side_text(&r.b)),
            ratio_text(r),
            html(&change_text(r)),
            verdict_class(&r.verdict),
            html(&r.verdict.label())
        );
    }
    out.push_str("</table>\n");
    if !c.notes.is_empty() {
        out.push_str("<h2>Notes</h2>\n<ul class=\"msgs\">");
        for n in &c.notes {
            let _ = write!(out, "<li>{}</li>", html(n));
        }
        out.push_str("</ul>\n");
    }
    page_end(&mut out);
    out
}

fn charts(out: &mut String, c: &Comparison) {
    let mut metrics: Vec<&str> = Vec::new();
    for r in &c.rows {
        if !metrics.contains(&r.metric.as_str()) {
            metrics.push(&r.metric);
        }
    }
    out.push_str("<h2>Changes</h2>\n<p>Bars: change of the median, B against A (positive = worse); whiskers: the range the repeats allow; dashed: ± tolerance. Red: regression, green: improvement, grey: no change, orange: unconfirmed.</p>\n<div class=\"grid\">\n");
    for m in metrics {
        let rows: Vec<&Row> = c
            .rows
            .iter()
            .filter(|r| r.metric == m && r.change.is_some())
            .collect();
        let short: Vec<String> = rows.iter().map(|r| short_trial(&r.trial)).collect();
        let unique = short.iter().collect::<std::collections::HashSet<_>>().len() == short.len();
        let bars: Vec<ChangeBar> = rows
            .iter()
            .zip(short)
            .map(|(r, s)| ChangeBar {
                label: if unique { s } else { clip(&r.trial) },
                change: r.change.unwrap_or(0.0),
                range: r.change_range,
                kind: bar_kind(&r.verdict),
            })
            .collect();
        if bars.is_empty() {
            continue;
        }
        let id = format!("compare::{m}");
        let _ = write!(out, "<figure class=\"chart\" data-chart=\"{}\">", html(&id));
        match change_chart_svg(&id, m, &bars, c.tolerance) {
            Ok(svg) => out.push_str(&svg),
            Err(e) => {
                let _ = write!(out, "<p class=\"chart-error\">{}</p>", html(&e.to_string()));
            }
        }
        let _ = writeln!(
            out,
            "<figcaption>{}: B against A</figcaption></figure>",
            html(m)
        );
    }
    out.push_str("</div>\n");
}

/// `suffix::step` (the test name is long and repeated); the full name is in the table.
fn short_trial(name: &str) -> String {
    let parts: Vec<&str> = name.splitn(3, "::").collect();
    let s = if parts.len() == 3 {
        format!("{}::{}", parts[1], parts[2])
    } else {
        name.to_string()
    };
    clip(&s)
}

/// Keeps the last 48 characters (the step is at the end).
fn clip(s: &str) -> String {
    if s.chars().count() > 48 {
        let tail: String = s
            .chars()
            .rev()
            .take(47)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("…{tail}")
    } else {
        s.to_string()
    }
}
