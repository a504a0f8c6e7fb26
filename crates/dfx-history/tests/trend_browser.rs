//! The history's trend report rendered in headless Chromium: a synthetic, dated history of
//! one step at three concurrencies (a 30 % slowdown from the seventh run, one failed run,
//! one run whose trials breached, one interrupted run) gives a timeline page: a table of
//! contents whose links resolve, steps in natural order (c4, c8, c16), runs by date with
//! their server version, failed runs counted by class, and charts that draw their line,
//! points, threshold band, change line, gap marks, dates on the x axis and a tooltip per
//! run.

#[path = "../../dfx-report/tests/common/browser.rs"]
mod browser;

use std::collections::BTreeMap;
use std::path::Path;

use dfx_history::check;
use dfx_history::detect::DetectOptions;
use dfx_history::model::{Fingerprint, RunRecord, Threshold, TrialOutcome, TrialRecord};
use dfx_history::report::{Section, render};
use libtest_mimic::{Arguments, Completion, Failed, Trial};

const TRIAL: &str = "test_tts::voice_clone::c4";

fn ensure(ok: bool, msg: impl FnOnce() -> String) -> Result<(), Failed> {
    if ok { Ok(()) } else { Err(msg().into()) }
}

fn history() -> Vec<RunRecord> {
    (0..12)
        .map(|i| {
            let slow = if i >= 6 { 1.3 } else { 1.0 };
            let jitter = 1.0 + 0.01 * ((i * 7 % 5) as f64 - 2.0);
            let failed = i == 3;
            let metrics: BTreeMap<String, f64> = [
                ("median_e2el_ms", 1000.0 * slow * jitter),
                ("median_audio_ttfp_ms", 200.0 * slow * jitter),
                ("median_audio_rtf", 0.2 * slow * jitter),
                ("audio_throughput", 50.0 / slow * jitter),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            let breached = i == 8;
            let trial = TrialRecord {
                name: TRIAL.into(),
                seq: 0,
                outcome: if failed || breached {
                    TrialOutcome::Failed
                } else {
                    TrialOutcome::Passed
                },
                interrupted: i == 9,
                unclean: failed.then(|| "8 of 8 requests failed".into()),
                failures: if failed {
                    vec!["8 of 8 requests failed".into()]
                } else {
                    vec![]
                },
                metrics,
                repeats: Default::default(),
                thresholds: vec![Threshold {
                    metric: "median_e2el_ms".into(),
                    value: 1250.0,
                    direction: "lower_is_better".into(),
                    source: "store".into(),
                }],
                failure_class: breached.then(|| "breach".into()),
                needs_data: false,
            };
            let steps = ["c16", "c4", "c8"].map(|step| TrialRecord {
                name: TRIAL.replace("c4", step),
                ..trial.clone()
            });
            RunRecord {
                run_id: format!("202601{:02}-010000-H100", i + 1),
                hardware_identity: "H100".into(),
                started: None,
                sort_key: format!("2026-01-{:02}T01:00:00.000000Z", i + 1),
                finished: Some("x".into()),
                interrupted: i == 9,
                fingerprint: Fingerprint {
                    git_sha: Some("0123456789abcdef".into()),
                    server_versions: [("vllm_omni".to_string(), format!("0.9.{i}"))].into(),
                    ..Fingerprint::default()
                },
                trials: steps.into(),
            }
        })
        .collect()
}

fn trend_report_renders(chromium: &Path) -> Result<(), Failed> {
    let runs = history();
    let report = check::check("H100", &runs, &DetectOptions::default(), &[]);
    ensure(
        report
            .regressions()
            .any(|f| f.metric == "median_e2el_ms" && f.run_index == 6),
        || {
            format!(
                "the detector should find the slowdown at run 7: {:?}",
                report.findings
            )
        },
    )?;
    let doc = render(
        &[Section {
            runs: &runs,
            check: &report,
        }],
        &[],
    );
    let tmp = tempfile::tempdir()?;
    let page = tmp.path().join("history.html");
    std::fs::write(&page, &doc.html)?;
    let dump = browser::dump_dom(chromium, &page);
    ensure(dump.leftovers.is_empty(), || {
        format!("chromium left {:?}", dump.leftovers)
    })?;
    let dom = &dump.dom;
    ensure(dom.contains("<h1>dfx-perf history</h1>"), || {
        format!("page did not load:\n{}", dump.stderr)
    })?;
    let svgs: Vec<&str> = dom.split("<svg ").skip(1).collect();
    // The four default metrics it measured (mean_e2el_ms is not in this history), per step.
    ensure(svgs.len() == 12, || {
        format!("{} charts, 4 metrics of 3 steps expected", svgs.len())
    })?;
    timeline(dom)?;
    let e2el = svgs
        .iter()
        .find(|s| s.contains(&format!("data-chart=\"H100::{TRIAL}::median_e2el_ms\"")))
        .ok_or("no median_e2el_ms chart")?;
    let e2el = &e2el[..e2el.find("</svg>").ok_or("unterminated svg")?];
    let tips = e2el.matches("class=\"tip\"").count();
    ensure(
        e2el.matches("<circle").count() == 10 + 1 + tips && tips == 12,
        || {
            "10 clean values expected as points (12 runs, one failed, one interrupted), one ring for the breached run, one tooltip per run".into()
        },
    )?;
    ensure(
        e2el.contains(">01-01<") && e2el.contains("run start (UTC"),
        || "dates on the x axis".into(),
    )?;
    ensure(
        e2el.contains("run 9 · 2026-01-09 01:00 UTC") && e2el.contains("failed: breach"),
        || "the tooltip of the breached run names its date and class".into(),
    )?;
    ensure(e2el.contains("<polyline"), || "no line".into())?;
    ensure(e2el.matches("<rect").count() >= 12, || {
        "threshold band per run".into()
    })?;
    ensure(e2el.contains("stroke=\"#C81414\""), || {
        "no red change line / failed mark".into()
    })?;
    ensure(e2el.contains("#969696"), || {
        "no grey mark for the interrupted run".into()
    })?;
    ensure(dom.contains("REGRESSION"), || "findings table".into())?;
    ensure(
        doc.markdown.contains("**") && doc.markdown.contains("| REGRESSION | `"),
        || doc.markdown.clone(),
    )
}

/// The table of contents links to ids that exist, steps in natural order, the runs table
/// dated with versions, failed runs counted (the breached one too) by class.
fn timeline(dom: &str) -> Result<(), Failed> {
    let toc = dom
        .split("<nav class=\"toc\">")
        .nth(1)
        .and_then(|t| t.split("</nav>").next())
        .ok_or("no table of contents")?;
    let links: Vec<&str> = toc
        .split("href=\"#")
        .skip(1)
        .filter_map(|l| l.split('"').next())
        .collect();
    ensure(links.len() == 4, || format!("toc links: {links:?}"))?;
    for id in &links {
        ensure(dom.contains(&format!("id=\"{id}\"")), || {
            format!("#{id} missing")
        })?;
    }
    let at = |step: &str| {
        toc.find(&format!("voice_clone::{step}<"))
            .unwrap_or(usize::MAX)
    };
    ensure(
        at("c4") < at("c8") && at("c8") < at("c16") && at("c16") != usize::MAX,
        || format!("natural step order: {toc}"),
    )?;
    ensure(toc.contains("2 failed run(s)"), || {
        format!("failed runs counted: {toc}")
    })?;
    ensure(
        dom.contains("2026-01-09 01:00") && dom.contains("vllm_omni 0.9.8, commit 0123456789"),
        || "runs table: date and version".into(),
    )?;
    ensure(dom.contains("3 of 3 failed: 3 breach"), || {
        "breached run by class".into()
    })
}

fn main() {
    let args = Arguments::from_args();
    let trial = Trial::ignorable_test("the_trend_report_renders_in_headless_chromium", || {
        match browser::chromium() {
            Ok(path) => trend_report_renders(&path).map(|()| Completion::Completed),
            Err(why) if browser::required() => Err(format!(
                "{why} ({} is set, so a missing browser is a failure)",
                browser::REQUIRE_ENV
            )
            .into()),
            Err(why) => Ok(Completion::ignored_with(why)),
        }
    });
    libtest_mimic::run(&args, vec![trial]).exit();
}
