//! `dfx-perf history report`: one self-contained HTML page (an SVG trend chart per trial
//! × metric, thresholds as a band, change points marked, failed runs marked apart) and a
//! markdown summary for a CI comment, from the stored runs and [`crate::check`].

use std::fmt::Write;

use dfx_core::baseline::Direction;
use dfx_report::fmt::{self, html, md_cell};
use dfx_report::trend::{TrendChange, TrendChart, TrendGap, TrendRun, trend_chart_svg};

use crate::check::{self, CheckReport, Finding, Verdict};
use crate::detect::Gap;
use crate::model::RunRecord;

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

/// Renders both documents for `sections`; `extra` metrics are charted besides the
/// defaults and the thresholded ones.
pub fn render(sections: &[Section<'_>], extra: &[String]) -> Rendered {
    let mut page = String::new();
    dfx_report::report::page_start(&mut page, "dfx-perf history");
    page.push_str("<h1>dfx-perf history</h1>\n");
    let mut md = String::from("# dfx-perf history\n");
    for s in sections {
        html_section(&mut page, s, extra);
        md_section(&mut md, s.check);
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

fn verdict_word(v: &Verdict) -> &'static str {
    match v {
        Verdict::Regression => "REGRESSION",
        Verdict::Improvement => "improvement",
        Verdict::ExplainedByAudioLength(_) => "explained",
    }
}

fn change_text(f: &Finding) -> String {
    let c = &f.change;
    let why = match &f.verdict {
        Verdict::ExplainedByAudioLength(w) => format!(" — {w}"),
        _ => String::new(),
    };
    format!(
        "{} → {} ({:+.1} % worse){why}",
        fmt::num(c.before),
        fmt::num(c.after),
        c.worse_by * 100.0
    )
}

fn md_section(md: &mut String, r: &CheckReport) {
    let regressions = r.regressions().count();
    let _ = writeln!(
        md,
        "\n## {}\n\n{} run(s), `{}` … `{}`: **{regressions} regression(s)**, {} other change(s), {} failed run(s)\n",
        md_cell(&r.hardware),
        r.runs.len(),
        r.runs.first().map_or("-", String::as_str),
        r.runs.last().map_or("-", String::as_str),
        r.findings.len() - regressions,
        r.failed_runs.len()
    );
    if !r.findings.is_empty() {
        md.push_str("| | trial | metric | at run | change |\n|---|---|---|---|---|\n");
        for f in &r.findings {
            let _ = writeln!(
                md,
                "| {} | `{}` | `{}` | {} (`{}`) | {} |",
                verdict_word(&f.verdict),
                md_cell(&f.trial),
                f.metric,
                f.run_index + 1,
                md_cell(&f.run_id),
                md_cell(&change_text(f))
            );
        }
    }
    for f in &r.failed_runs {
        let _ = writeln!(
            md,
            "- failed run `{}`: every trial failed, not a slowdown ({})",
            md_cell(&f.run_id),
            md_cell(&fmt::visible(&f.reason))
        );
    }
    for id in &r.interrupted_runs {
        let _ = writeln!(md, "- interrupted run `{}`", md_cell(id));
    }
}

fn html_section(page: &mut String, s: &Section<'_>, extra: &[String]) {
    let r = s.check;
    let _ = writeln!(
        page,
        "<h2>{}</h2>\n<p>{} run(s), <code>{}</code> … <code>{}</code>; {} regression(s), {} failed run(s).</p>",
        html(&r.hardware),
        r.runs.len(),
        html(r.runs.first().map_or("-", String::as_str)),
        html(r.runs.last().map_or("-", String::as_str)),
        r.regressions().count(),
        r.failed_runs.len()
    );
    page.push_str("<ol class=\"runs\">");
    for (i, id) in r.runs.iter().enumerate() {
        let failed = r.failed_runs.iter().any(|f| &f.run_id == id);
        let _ = write!(
            page,
            "<li value=\"{}\"{}><code>{}</code>{}</li>",
            i + 1,
            if failed { " class=\"failed-run\"" } else { "" },
            html(id),
            if failed { " — failed run" } else { "" }
        );
    }
    page.push_str("</ol>\n");
    if !r.findings.is_empty() {
        page.push_str("<table class=\"findings\"><tr><th></th><th>trial</th><th>metric</th><th>at run</th><th>change</th></tr>\n");
        for f in &r.findings {
            let class = match f.verdict {
                Verdict::Regression => "v-worse",
                Verdict::Improvement => "v-better",
                Verdict::ExplainedByAudioLength(_) => "v-unconfirmed",
            };
            let _ = writeln!(
                page,
                "<tr><td class=\"{class}\">{}</td><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                verdict_word(&f.verdict),
                html(&f.trial),
                html(&f.metric),
                f.run_index + 1,
                html(&change_text(f))
            );
        }
        page.push_str("</table>\n");
    }
    page.push_str("<div class=\"grid\">\n");
    for chart in charts(s, extra) {
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
    page.push_str("</div>\n");
}

/// One chart per trial × metric with at least one clean value.
fn charts(s: &Section<'_>, extra: &[String]) -> Vec<TrendChart> {
    let mut trials: Vec<&str> = Vec::new();
    for run in s.runs {
        for t in &run.trials {
            if !trials.contains(&t.name.as_str()) {
                trials.push(&t.name);
            }
        }
    }
    let mut out = Vec::new();
    for trial in trials {
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
                .map(|(p, run)| TrendRun {
                    value: p.value.clone().map_err(|g| match g {
                        Gap::RunFailed(_) | Gap::TrialFailed(_) => TrendGap::Failed,
                        Gap::Interrupted | Gap::Missing => TrendGap::Other,
                    }),
                    threshold: run.trial(trial).and_then(|t| {
                        t.thresholds
                            .iter()
                            .find(|th| th.metric == metric)
                            .map(|th| th.value)
                    }),
                })
                .collect();
            let changes = s
                .check
                .findings
                .iter()
                .filter(|f| f.trial == trial && f.metric == metric)
                .map(|f| {
                    let kind = match f.verdict {
                        Verdict::Regression => TrendChange::Regression,
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
                lower_is_better: dir == Direction::LowerIsBetter,
                runs,
                changes,
            });
        }
    }
    out
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
