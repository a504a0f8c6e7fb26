//! `dfx-perf history report`: one self-contained HTML page, a timeline per hardware
//! identity (runs by date with the server version or commit, failed runs counted by
//! class, findings one per run and trial, the noise per cell, an SVG trend chart per
//! trial × metric in natural step order, a table of contents) and a markdown summary for
//! a CI comment, from the stored runs and [`crate::check`].

mod timeline;

use std::fmt::Write;

use dfx_core::baseline::Direction;
use dfx_report::fmt::{self, html, md_cell};
use dfx_report::trend::{TrendChange, TrendChart, TrendGap, TrendRun, trend_chart_svg};

use crate::check::{self, CheckReport, Verdict};
use crate::detect::Gap;
use crate::findings::{self, TrialFinding};
use crate::model::{RunRecord, TrialOutcome};
use crate::noise::{self, CellNoise, NoiseOptions};

/// One hardware identity's runs (oldest first) and their check.
pub struct Section<'a> {
    /// The stored runs of this hardware identity, oldest first (the last `--last`).
    pub runs: &'a [RunRecord],
    /// [`check::check`]'s findings over `runs`.
    pub check: &'a CheckReport,
}

/// The page and the summary.
pub struct Rendered {
    /// The self-contained HTML page (written as `history.html`).
    pub html: String,
    /// The markdown summary for a CI comment (written as `history.md`).
    pub markdown: String,
}

const STYLE: &str = "<style>nav.toc ul{columns:2}tr.failed-run td{background:#fdecea}\
table.noise td.flag{color:#b00;font-weight:bold}</style>\n";

/// Renders both documents for `sections`; `extra` metrics are charted besides the
/// defaults and the thresholded ones.
pub fn render(sections: &[Section<'_>], extra: &[String]) -> Rendered {
    let mut page = String::new();
    dfx_report::report::page_start(&mut page, "dfx-perf history");
    page.push_str(STYLE);
    page.push_str("<h1>dfx-perf history</h1>\n");
    let mut md = String::from("# dfx-perf history\n");
    toc(&mut page, sections);
    for (k, s) in sections.iter().enumerate() {
        let cells = noise::noise_table(s.runs, &NoiseOptions::default(), extra);
        html_section(&mut page, k, s, &cells, extra);
        md_section(&mut md, s.check, &cells);
    }
    if sections.is_empty() {
        page.push_str("<p>No runs stored.</p>\n");
        md.push_str("\nNo runs stored.\n");
    }
    dfx_report::report::page_end(&mut page);
    Rendered {
        html: page,
        markdown: md,
    }
}

fn section_id(k: usize) -> String {
    format!("hw{k}")
}

fn trial_id(k: usize, j: usize) -> String {
    format!("hw{k}-t{j}")
}

/// The table of contents: each hardware identity with its counts, its trials beneath.
fn toc(page: &mut String, sections: &[Section<'_>]) {
    if sections.is_empty() {
        return;
    }
    page.push_str("<nav class=\"toc\"><h2>Contents</h2>\n<ol>\n");
    for (k, s) in sections.iter().enumerate() {
        let r = s.check;
        let _ = write!(
            page,
            "<li><a href=\"#{}\">{}</a> — {}<ul>",
            section_id(k),
            html(&r.hardware),
            html(&counts_text(r))
        );
        for (j, trial) in check::trial_names(s.runs).iter().enumerate() {
            let _ = write!(
                page,
                "<li><a href=\"#{}\"><code>{}</code></a></li>",
                trial_id(k, j),
                html(trial)
            );
        }
        page.push_str("</ul></li>\n");
    }
    page.push_str("</ol></nav>\n");
}

/// `median_audio_ttfp_ms 6.41 → 8.26 (+28.9 % worse)`, one per metric.
fn metrics_text(f: &TrialFinding) -> String {
    f.metrics
        .iter()
        .map(|m| {
            let why = m
                .explanation
                .as_deref()
                .map_or(String::new(), |w| format!(" — {w}"));
            format!(
                "{} {} → {} ({:+.1} % worse{}){why}",
                m.metric,
                fmt::num(m.before),
                fmt::num(m.after),
                m.worse_by * 100.0,
                if m.verdict == f.verdict {
                    String::new()
                } else {
                    format!(", {}", m.verdict)
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `5 run(s), 1 regression(s), 0 suspected, 2 failed run(s)`, counted per run and trial.
fn counts_text(r: &CheckReport) -> String {
    let (regressions, suspected) = findings::counts(r);
    format!(
        "{} run(s), {regressions} regression(s), {suspected} suspected, {} failed run(s)",
        r.runs.len(),
        r.failed_runs.len()
    )
}

fn md_section(md: &mut String, r: &CheckReport, cells: &[CellNoise]) {
    let (regressions, suspected) = findings::counts(r);
    let _ = writeln!(
        md,
        "\n## {}\n\n`{}` … `{}`: **{regressions} regression(s)**, {suspected} suspected, {} failed run(s) (per run and trial)\n",
        md_cell(&r.hardware),
        r.runs.first().map_or("-", String::as_str),
        r.runs.last().map_or("-", String::as_str),
        r.failed_runs.len()
    );
    let grouped = findings::by_trial(r);
    if !grouped.is_empty() {
        md.push_str("| | trial | at run | metrics | noise from |\n|---|---|---|---|---|\n");
        for f in &grouped {
            let _ = writeln!(
                md,
                "| {} | `{}` | {} (`{}`) | {} | {} |",
                f.verdict.to_uppercase(),
                md_cell(&f.trial),
                f.run_index + 1,
                md_cell(&f.run_id),
                md_cell(&metrics_text(f)),
                md_cell(&f.noise_sources())
            );
        }
    }
    for f in &r.failed_runs {
        let _ = writeln!(
            md,
            "- failed run `{}`: {} ({})",
            md_cell(&f.run_id),
            md_cell(&timeline::failed_text(f)),
            md_cell(&fmt::visible(&f.reason))
        );
    }
    for id in &r.interrupted_runs {
        let _ = writeln!(md, "- interrupted run `{}`", md_cell(id));
    }
    let flagged: Vec<&CellNoise> = cells.iter().filter(|c| !c.flags.is_empty()).collect();
    for c in flagged {
        let flags: Vec<&str> = c.flags.iter().map(|f| f.as_str()).collect();
        let _ = writeln!(
            md,
            "- noise: `{}` {} — {} ({})",
            md_cell(&c.trial),
            c.metric,
            flags.join(", "),
            md_cell(c.fix.as_deref().unwrap_or(""))
        );
    }
}

fn html_section(
    page: &mut String,
    k: usize,
    s: &Section<'_>,
    cells: &[CellNoise],
    extra: &[String],
) {
    let r = s.check;
    let _ = writeln!(
        page,
        "<h2 id=\"{}\">{}</h2>\n<p>{} … {} (UTC): {} (per run and trial).</p>",
        section_id(k),
        html(&r.hardware),
        html(&s.runs.first().map_or_else(|| "-".into(), timeline::when)),
        html(&s.runs.last().map_or_else(|| "-".into(), timeline::when)),
        html(&counts_text(r))
    );
    timeline::runs_table(page, s.runs, r);
    findings_table(page, r);
    noise_section(page, cells);
    for (j, trial) in check::trial_names(s.runs).into_iter().enumerate() {
        let _ = writeln!(
            page,
            "<section class=\"trial\" id=\"{}\"><h3><code>{}</code></h3>\n<div class=\"grid\">",
            trial_id(k, j),
            html(trial)
        );
        for chart in charts(s, trial, extra) {
            match trend_chart_svg(&chart) {
                Ok(svg) => {
                    let _ = writeln!(page, "<figure class=\"chart\">{svg}</figure>");
                }
                Err(e) => {
                    let _ = writeln!(
                        page,
                        "<p class=\"chart-error\">{}</p>",
                        html(&e.to_string())
                    );
                }
            }
        }
        page.push_str("</div></section>\n");
    }
}

fn findings_table(page: &mut String, r: &CheckReport) {
    let grouped = findings::by_trial(r);
    if grouped.is_empty() {
        return;
    }
    page.push_str("<table class=\"findings\"><tr><th></th><th>trial</th><th>at run</th><th>metrics</th><th>noise from</th></tr>\n");
    for f in &grouped {
        let class = match f.verdict {
            "regression" | "suspected" => "v-worse",
            "improvement" => "v-better",
            _ => "v-unconfirmed",
        };
        let _ = writeln!(
            page,
            "<tr><td class=\"{class}\">{}</td><td><code>{}</code></td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            f.verdict.to_uppercase(),
            html(&f.trial),
            f.run_index + 1,
            html(&metrics_text(f)),
            html(&f.noise_sources())
        );
    }
    page.push_str("</table>\n");
}

/// The noise per cell, worst first (`dfx-perf history noise`).
fn noise_section(page: &mut String, cells: &[CellNoise]) {
    if cells.is_empty() {
        return;
    }
    let pct = |x: Option<f64>| x.map_or_else(|| "—".to_string(), |v| format!("{:.1} %", v * 100.0));
    let flagged = cells.iter().filter(|c| !c.flags.is_empty()).count();
    let _ = writeln!(
        page,
        "<details class=\"noise\"{}><summary>Noise per cell: {} cell(s), {flagged} flagged</summary>",
        if flagged > 0 { " open" } else { "" },
        cells.len()
    );
    page.push_str("<table class=\"noise\"><tr><th>trial</th><th>metric</th><th>runs</th><th>CV</th><th>MAD</th><th>noise (sd)</th><th>threshold</th><th>min detectable change</th><th>false alarms / run</th><th>flags</th></tr>\n");
    for c in cells {
        let flags: Vec<&str> = c.flags.iter().map(|f| f.as_str()).collect();
        let fix = c.fix.as_deref().map_or(String::new(), |f| format!(": {f}"));
        let _ = writeln!(
            page,
            "<tr><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1} %</td><td class=\"num\">{}</td><td class=\"num\">{:.1} % ({})</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"flag\">{}</td></tr>",
            html(&c.trial),
            html(&c.metric),
            c.runs,
            c.cv * 100.0,
            fmt::num(c.mad),
            c.noise.rel_sd * 100.0,
            match c.noise.source {
                noise::CellNoiseSource::History => "history",
                noise::CellNoiseSource::Repeats => "repeats",
            },
            c.threshold.map_or_else(|| "—".to_string(), fmt::num),
            pct(c.min_detectable_change),
            pct(c.false_alarm_rate),
            html(&format!("{}{fix}", flags.join(", ")))
        );
    }
    page.push_str("</table></details>\n");
}

/// One chart per metric of `trial` with at least one clean value.
fn charts(s: &Section<'_>, trial: &str, extra: &[String]) -> Vec<TrendChart> {
    let mut out = Vec::new();
    let labels = timeline::labels(s.runs);
    for metric in check::metrics_of(s.runs, trial, extra) {
        let Some(dir) = check::direction(s.runs, trial, &metric) else {
            continue;
        };
        let points = check::series(s.runs, trial, &metric);
        if !points.iter().any(|p| p.value.is_ok()) {
            continue;
        }
        let runs = points
            .iter()
            .zip(s.runs)
            .enumerate()
            .map(|(i, (p, run))| {
                let t = run.trial(trial);
                let failed = t
                    .filter(|t| t.outcome == TrialOutcome::Failed)
                    .map(|t| t.failure_class.as_deref().unwrap_or(check::UNCLASSIFIED));
                let value = match &p.value {
                    Ok(v) => format!("{metric} {}", fmt::num(*v)),
                    Err(g) => format!("{metric}: no value ({})", gap_text(g)),
                };
                TrendRun {
                    value: p.value.clone().map_err(|g| match g {
                        Gap::RunFailed(_) | Gap::TrialFailed(_) => TrendGap::Failed,
                        Gap::Interrupted | Gap::Missing => TrendGap::Other,
                    }),
                    threshold: t.and_then(|t| {
                        t.thresholds
                            .iter()
                            .find(|th| th.metric == metric)
                            .map(|th| th.value)
                    }),
                    label: labels[i].clone(),
                    tip: timeline::tip(run, i, &value, failed),
                    failed: failed.is_some(),
                }
            })
            .collect();
        let changes = s
            .check
            .findings
            .iter()
            .filter(|f| f.trial == trial && f.metric == metric)
            .map(|f| {
                let kind = match f.verdict {
                    Verdict::Regression | Verdict::Suspected => TrendChange::Regression,
                    Verdict::Improvement => TrendChange::Improvement,
                    Verdict::ExplainedByAudioLength(_) => TrendChange::Explained,
                };
                (f.run_index, kind)
            })
            .collect();
        out.push(TrendChart {
            id: format!("{}::{trial}::{metric}", s.check.hardware),
            title: format!("{trial} {metric}"),
            y_label: unit(&metric).into(),
            x_label: "run start (UTC date), oldest first; hover a point for its run".into(),
            lower_is_better: dir == Direction::LowerIsBetter,
            runs,
            changes,
        });
    }
    out
}

fn gap_text(g: &Gap) -> String {
    match g {
        Gap::RunFailed(why) => format!("every trial failed: {}", fmt::visible(why)),
        Gap::TrialFailed(why) => fmt::visible(why),
        Gap::Interrupted => "interrupted".into(),
        Gap::Missing => "not measured".into(),
    }
}

/// The y-axis label of a trend chart: the registry's unit, or its label for a unitless
/// key (`RTFx`); keys the registry does not know get the unit their name ends with.
fn unit(metric: &str) -> &'static str {
    match dfx_core::metrics::lookup(metric) {
        Some(known) if !known.unit().is_empty() => known.unit(),
        Some(known) => known.label(),
        None if metric.ends_with("_ms") => "ms",
        None if metric.ends_with("_s") => "s",
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::unit;

    #[test]
    fn chart_units_come_from_the_metric_registry() {
        assert_eq!(unit("p99_audio_ttfp_ms"), "ms");
        assert_eq!(unit("median_audio_rtf"), "RTF");
        assert_eq!(unit("audio_throughput"), "audio s / s");
        // The name ends in `_s`, but it is a rate: the old suffix rule said "s".
        assert_eq!(unit("max_output_tokens_per_s"), "tok/s");
        assert_eq!(unit("p50_something_new_ms"), "ms");
        assert_eq!(unit("something_else"), "");
    }
}
