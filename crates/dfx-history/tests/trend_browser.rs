//! The history's trend report rendered in headless Chromium: a synthetic history of one
//! trial (a 30 % slowdown from the sixth run, one failed run, one interrupted run) gives a
//! page whose charts draw their line, points, threshold band, change line and gap marks.

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
            RunRecord {
                run_id: format!("202601{:02}-010000-H100", i + 1),
                hardware_identity: "H100".into(),
                started: None,
                sort_key: format!("{i:04}"),
                finished: Some("x".into()),
                interrupted: i == 9,
                fingerprint: Fingerprint::default(),
                trials: vec![TrialRecord {
                    name: TRIAL.into(),
                    seq: 0,
                    outcome: if failed {
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
                    needs_data: false,
                }],
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
    // The four default metrics it measured (mean_e2el_ms is not in this history).
    ensure(svgs.len() == 4, || {
        format!("{} charts, 4 metrics expected", svgs.len())
    })?;
    let e2el = svgs
        .iter()
        .find(|s| s.contains(&format!("data-chart=\"H100::{TRIAL}::median_e2el_ms\"")))
        .ok_or("no median_e2el_ms chart")?;
    let e2el = &e2el[..e2el.find("</svg>").ok_or("unterminated svg")?];
    ensure(e2el.matches("<circle").count() == 10, || {
        "10 clean values expected as points (12 runs, one failed, one interrupted)".into()
    })?;
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
