//! The report pages in a real browser: `report.html` and `compare.html` render their
//! charts in headless Chromium and `junit.xml` passes Chromium's XML parser.
//!
//! A libtest-mimic target, so that a machine without Chromium reports these tests as
//! *ignored* with the reason and the install command (never as passed, never as failed);
//! with `DFX_REQUIRE_BROWSER=1` (set by `.ci/run`) a missing browser fails them instead.

mod common;

use std::path::{Path, PathBuf};

use common::{Fault, RunBuilder, browser};
use dfx_report::compare::{CompareOptions, compare_dirs, write_comparison};
use dfx_report::write_run_reports;
use libtest_mimic::{Arguments, Completion, Failed, Trial};

type Check = fn(&Path) -> Result<(), Failed>;

const CHECKS: [(&str, Check); 3] = [
    (
        "html_charts_render_in_headless_chromium",
        html_charts_render,
    ),
    ("junit_also_parses_in_chromium", junit_parses),
    (
        "compare_html_renders_its_charts_in_chromium",
        compare_html_renders,
    ),
];

fn main() {
    let args = Arguments::from_args();
    let trials = CHECKS
        .iter()
        .map(|&(name, check)| {
            Trial::ignorable_test(name, move || match browser::chromium() {
                Ok(path) => check(&path).map(|()| Completion::Completed),
                Err(why) if browser::required() => Err(format!(
                    "{why} ({} is set, so a missing browser is a failure)",
                    browser::REQUIRE_ENV
                )
                .into()),
                Err(why) => Ok(Completion::ignored_with(why)),
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// `Err` with `msg` unless `ok`.
fn ensure(ok: bool, msg: impl FnOnce() -> String) -> Result<(), Failed> {
    if ok { Ok(()) } else { Err(msg().into()) }
}

/// The nightly fixture of `tests/report.rs`: a 12 % slowdown, failed requests on one trial
/// and a fallback result on another, judged with `--assert-baseline`.
fn nightly(results: &Path) -> PathBuf {
    RunBuilder::new("20260302-010000-SIM")
        .slowdown(0.12)
        .assert_baseline()
        .fault(
            "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c16",
            Fault::FailedRequests(3),
        )
        .fault(
            "test_qwen3_tts_customvoice::default_voice_stress_seed-tts-text::qps2.0",
            Fault::Fallback,
        )
        .write(results)
}

fn chart_count(html: &str) -> usize {
    html.matches("<figure class=\"chart\" data-chart=\"")
        .count()
}

fn no_leftovers(dump: &browser::Dump) -> Result<(), Failed> {
    ensure(dump.leftovers.is_empty(), || {
        format!("chromium processes left: {:?}", dump.leftovers)
    })
}

fn html_charts_render(chromium: &Path) -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let dir = nightly(tmp.path());
    let paths = write_run_reports(&dir)?;
    let dump = browser::dump_dom(chromium, &paths.html);
    no_leftovers(&dump)?;
    let dom = &dump.dom;
    ensure(
        dom.contains("<h1>dfx-perf run <code>20260302-010000-SIM</code></h1>"),
        || format!("page did not load:\n{}", dump.stderr),
    )?;
    // every chart is an inline SVG in the rendered DOM, with a line and points
    let svgs: Vec<&str> = dom.split("<svg ").skip(1).collect();
    ensure(svgs.len() == chart_count(dom), || {
        format!("{} svgs for {} charts", svgs.len(), chart_count(dom))
    })?;
    ensure(svgs.len() >= 6, || {
        format!("only {} charts rendered", svgs.len())
    })?;
    for svg in &svgs {
        let svg = &svg[..svg.find("</svg>").ok_or("unterminated svg")?];
        ensure(svg.contains("class=\"chart\""), || {
            "svg without class".into()
        })?;
        ensure(svg.contains("<circle"), || {
            format!("chart without points: {}", &svg[..svg.len().min(200)])
        })?;
    }
    ensure(dom.contains("<polyline"), || "no line drawn".into())?;
    // red points mark the breached steps of the slowed-down run
    ensure(dom.contains("fill=\"#C81414\""), || {
        "no breached point drawn".into()
    })
}

fn junit_parses(chromium: &Path) -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let dir = nightly(tmp.path());
    let paths = write_run_reports(&dir)?;
    let dump = browser::dump_dom(chromium, &paths.junit);
    no_leftovers(&dump)?;
    ensure(!dump.dom.is_empty(), || format!("no DOM: {}", dump.stderr))?;
    ensure(!dump.dom.contains("parsererror"), || {
        format!("chromium's XML parser rejected junit.xml:\n{}", dump.dom)
    })?;
    ensure(dump.dom.contains("testsuites"), || "no <testsuites>".into())
}

fn compare_html_renders(chromium: &Path) -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let runs = |seeds: &[u64], slowdown: f64| -> Vec<PathBuf> {
        seeds
            .iter()
            .map(|s| {
                RunBuilder::new(&format!("20260302-0{s}0000-SIM"))
                    .seed(*s)
                    .slowdown(slowdown)
                    .write(tmp.path())
            })
            .collect()
    };
    let (a, b) = (runs(&[1, 2], 0.0), runs(&[4, 5], 0.15));
    let c = compare_dirs(&a, &b, &CompareOptions::default())?;
    let paths = write_comparison(&c, &tmp.path().join("cmp"))?;
    let dump = browser::dump_dom(chromium, &paths.html);
    no_leftovers(&dump)?;
    ensure(dump.dom.contains("<h1>dfx-perf comparison</h1>"), || {
        format!("page did not load:\n{}", dump.stderr)
    })?;
    let metrics: std::collections::BTreeSet<&str> =
        c.rows.iter().map(|r| r.metric.as_str()).collect();
    let charts = dump.dom.matches("<svg class=\"chart\"").count();
    ensure(charts == metrics.len(), || {
        format!("{charts} charts for {} metrics", metrics.len())
    })?;
    // one bar per trial in each chart, drawn in the regression colour
    ensure(dump.dom.matches("<rect").count() >= c.rows.len(), || {
        "fewer bars than rows".into()
    })?;
    ensure(dump.dom.contains("fill=\"#C81414\""), || {
        "no regression bar".into()
    })
}
