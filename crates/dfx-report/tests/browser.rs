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

const CHECKS: [(&str, Check); 5] = [
    (
        "html_charts_render_in_headless_chromium",
        html_charts_render,
    ),
    (
        "failing_report_links_its_files_shows_p99_and_fits_1280px",
        failing_report_answers_why,
    ),
    (
        "recorded_sim_run_report_links_resolve",
        recorded_sim_run_links,
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
    // concurrency: TTFP, E2EL, RTF, throughput; the request-rate entry has one clean
    // rate left (the other fell back), so it is a table row, not four one-point charts
    ensure(svgs.len() >= 4, || {
        format!("only {} charts rendered", svgs.len())
    })?;
    ensure(
        dom.contains("Request-rate steps (one rate per entry, so no chart)")
            && !dom.contains("::request_rate\""),
        || "single-point request-rate charts drawn".into(),
    )?;
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

/// Every `href` of a rendered page, resolved against `base` (`&amp;` and `%XX` undone).
fn hrefs(dom: &str, base: &Path) -> Result<Vec<(String, PathBuf)>, Failed> {
    let mut out = Vec::new();
    for part in dom.split("href=\"").skip(1) {
        let raw = &part[..part.find('"').ok_or("unterminated href")?];
        let href = raw.replace("&amp;", "&");
        ensure(
            !href.starts_with('/') && !href.contains(':') && !href.contains(".."),
            || format!("link `{href}` is not relative to the run folder"),
        )?;
        let mut bytes = Vec::new();
        let b = href.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' && i + 2 < b.len() {
                let hex = std::str::from_utf8(&b[i + 1..i + 3])?;
                bytes.push(u8::from_str_radix(hex, 16)?);
                i += 3;
            } else {
                bytes.push(b[i]);
                i += 1;
            }
        }
        let path = base.join(String::from_utf8(bytes)?);
        out.push((href, path));
    }
    Ok(out)
}

fn links_resolve(dom: &str, base: &Path, want: &[&str]) -> Result<usize, Failed> {
    let links = hrefs(dom, base)?;
    for (href, path) in &links {
        ensure(path.is_file(), || {
            format!(
                "link `{href}` points to {} which does not exist",
                path.display()
            )
        })?;
    }
    for w in want {
        ensure(links.iter().any(|(h, _)| h.ends_with(w)), || {
            format!("no link to a `{w}`")
        })?;
    }
    Ok(links.len())
}

/// `document.documentElement.scrollWidth` of `page` in a 1280 px wide window: the page
/// is copied beside itself with a script that writes the width into the DOM.
fn scroll_width(chromium: &Path, page: &Path) -> Result<u32, Failed> {
    let html = std::fs::read_to_string(page)?;
    let probe = page.with_file_name("width-probe.html");
    let script = "<script>document.body.setAttribute('data-scroll-width', \
                  String(document.documentElement.scrollWidth));</script></body>";
    std::fs::write(&probe, html.replace("</body>", script))?;
    let dump = browser::dump_dom_with(chromium, &probe, &["--window-size=1280,900"]);
    std::fs::remove_file(&probe)?;
    no_leftovers(&dump)?;
    let at = dump
        .dom
        .find("data-scroll-width=\"")
        .ok_or_else(|| format!("the probe did not run:\n{}", dump.stderr))?;
    let rest = &dump.dom[at + "data-scroll-width=\"".len()..];
    Ok(rest[..rest.find('"').ok_or("unterminated")?].parse()?)
}

fn failing_report_answers_why(chromium: &Path) -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let built = nightly(tmp.path());
    // links are relative: the folder still works after a move (an upload)
    let dir = tmp.path().join("moved");
    std::fs::rename(&built, &dir)?;
    let paths = write_run_reports(&dir)?;
    let dump = browser::dump_dom(chromium, &paths.html);
    no_leftovers(&dump)?;
    let dom = &dump.dom;
    let n = links_resolve(
        dom,
        &dir,
        &[
            "result.json",
            "verdict.json",
            "bench.log",
            "records.jsonl",
            "server.log",
        ],
    )?;
    ensure(n >= 20, || format!("only {n} links"))?;
    // failures first, with their class and cause, before the trials table
    let failures = dom.find("id=\"failures\"").ok_or("no failures section")?;
    let trials = dom.find("id=\"trials\"").ok_or("no trials table")?;
    ensure(failures < trials, || "failures come after the table".into())?;
    for class in ["client", "server_errors", "breach"] {
        ensure(
            dom.contains(&format!("<span class=\"class\">{class}</span>")),
            || format!("no failure class {class}"),
        )?;
    }
    // the failed bench's log tail inline
    ensure(
        dom.contains("<pre class=\"tail\">")
            && dom.contains("ConnectionRefusedError: [Errno 111] &lt;refused&gt;"),
        || "no log tail of the failed bench".into(),
    )?;
    for col in ["<th>p50</th>", "<th>p90</th>", "<th>p99</th>"] {
        ensure(dom.contains(col), || format!("no {col} column"))?;
    }
    // the terminal's gap format, sign = value relative to its threshold
    ensure(dom.contains(" &lt; ") && dom.contains("%)"), || {
        "no threshold line in the terminal's format".into()
    })?;
    let width = scroll_width(chromium, &paths.html)?;
    ensure(width <= 1280, || {
        format!("the page is {width} px wide in a 1280 px window")
    })?;
    // the probe itself can see a page that is too wide
    let wide = dir.join("wide.html");
    std::fs::write(
        &wide,
        "<!DOCTYPE html><html><body><div style=\"width:2000px\">x</div></body></html>",
    )?;
    let w = scroll_width(chromium, &wide)?;
    ensure(w >= 2000, || {
        format!("probe measured {w} px for a 2000 px page")
    })
}

fn recorded_sim_run_links(chromium: &Path) -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/sim-x5-artefacts");
    let dir = tmp.path().join("sim-x5-artefacts");
    common::copy_tree(&src, &dir);
    let paths = write_run_reports(&dir)?;
    let dump = browser::dump_dom(chromium, &paths.html);
    no_leftovers(&dump)?;
    // a real simulator run: repeats' and probes' logs, the server's log
    let n = links_resolve(
        &dump.dom,
        &dir,
        &[
            "repeat-1/bench.log",
            "probe-01/bench.log",
            "server.log",
            "records.jsonl",
        ],
    )?;
    ensure(n >= 10, || format!("only {n} links"))?;
    let width = scroll_width(chromium, &paths.html)?;
    ensure(width <= 1280, || format!("{width} px wide"))
}
