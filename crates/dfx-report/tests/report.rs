//! Run reports: markdown content (snapshot), JUnit validity, a self-contained HTML page,
//! crashed runs, and recorded fixtures (the pages in a real browser: `tests/browser.rs`).

mod common;

use std::path::Path;

use common::{Fault, RunBuilder, junit};
use dfx_report::{load_run, write_run_reports};

const FAILING_REQUESTS: &str = "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c16";
const FALLBACK: &str = "test_qwen3_tts_customvoice::default_voice_stress_seed-tts-text::qps2.0";
const SLOW_TRIAL: &str = "test_qwen3_tts_base::voice_clone_latency_seed-tts::c1";

/// A nightly with a 12 % slowdown (some breaches), failed requests on one trial and a
/// fallback result on another, judged with `--assert-baseline`.
fn nightly(results: &Path) -> std::path::PathBuf {
    RunBuilder::new("20260302-010000-SIM")
        .slowdown(0.12)
        .assert_baseline()
        .fault(FAILING_REQUESTS, Fault::FailedRequests(3))
        .fault(FALLBACK, Fault::Fallback)
        .write(results)
}

#[test]
fn markdown_report_lists_every_trial_with_thresholds_and_breaches() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = nightly(tmp.path());
    let paths = write_run_reports(&dir).unwrap();
    let md = std::fs::read_to_string(&paths.markdown).unwrap();
    // one row per trial, breached metrics marked
    let run = load_run(&dir).unwrap();
    for t in &run.trials {
        assert!(md.contains(&format!("`{}`", t.name)), "{} missing", t.name);
    }
    let slow_row = md.lines().find(|l| l.contains(SLOW_TRIAL)).unwrap();
    assert!(slow_row.contains("**FAILED**"), "{slow_row}");
    assert!(
        slow_row.contains("**BREACH** median_audio_ttfp_ms"),
        "{slow_row}"
    );
    insta::assert_snapshot!("nightly_report_md", md);
}

#[test]
fn junit_is_valid_xml_with_one_case_per_trial() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = nightly(tmp.path());
    let paths = write_run_reports(&dir).unwrap();
    let text = std::fs::read_to_string(&paths.junit).unwrap();
    let j = junit::parse(&text);
    let run = load_run(&dir).unwrap();
    assert_eq!(j.cases.len(), run.trials.len());
    assert_eq!(j.root("tests"), Some(run.trials.len().to_string().as_str()));
    let failed = run
        .trials
        .iter()
        .filter(|t| t.outcome == dfx_report::run::Outcome::Failed)
        .count();
    assert_eq!(j.root("failures"), Some(failed.to_string().as_str()));
    assert_eq!(
        j.cases.iter().filter(|c| c.failure.is_some()).count(),
        failed
    );

    // the failure message survives escaping exactly (markup, quotes, ampersand), and the
    // control character XML cannot carry is replaced, not dropped silently
    let c = j.case(FAILING_REQUESTS);
    assert_eq!(c.classname, "test_qwen3_tts_base");
    let (message, body) = c.failure.clone().unwrap();
    assert!(
        message.contains(
            "HTTP 500 <html><body>Internal \"Server\" Error & 'oops'</body></html>\u{FFFD}"
        ),
        "{message}"
    );
    // the message is `<class>: <detail>`; the body holds every failure line
    let detail = message
        .strip_prefix("server_errors: ")
        .expect("class first");
    assert!(body.contains(detail), "{body}");
    // metrics as properties
    let ttfp: f64 = c.prop("median_audio_ttfp_ms").unwrap().parse().unwrap();
    let expected = run
        .trial(FAILING_REQUESTS)
        .unwrap()
        .metric("median_audio_ttfp_ms")
        .unwrap();
    assert_eq!(ttfp, expected);
    assert_eq!(c.prop("threshold.audio_throughput"), Some("40.3552"));
    // breaches explained in the failure of a slowed-down trial
    let slow = j.case(SLOW_TRIAL).failure.clone().unwrap();
    assert!(
        slow.1.contains("breach: median_audio_ttfp_ms"),
        "{}",
        slow.1
    );
    // the ignored trial is skipped with its reason
    let ign = j.case("test_diffusion_t2i::case0::c1");
    assert!(
        ign.skipped
            .as_deref()
            .unwrap()
            .contains("diffusion dialect")
    );
}

fn chart_ids(html: &str) -> Vec<String> {
    html.match_indices("<figure class=\"chart\" data-chart=\"")
        .map(|(i, m)| {
            let rest = &html[i + m.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

const EXPECTED_CHARTS: [&str; 8] = [
    "test_qwen3_tts_base::ttfp::concurrency",
    "test_qwen3_tts_base::e2el::concurrency",
    "test_qwen3_tts_base::rtf::concurrency",
    "test_qwen3_tts_base::audio_throughput::concurrency",
    "test_qwen3_tts_customvoice::ttfp::request_rate",
    "test_qwen3_tts_customvoice::e2el::request_rate",
    "test_qwen3_tts_customvoice::rtf::request_rate",
    "test_qwen3_tts_customvoice::audio_throughput::request_rate",
];

#[test]
fn html_report_is_self_contained_with_charts_and_thresholds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RunBuilder::new("20260302-020000-SIM").write(tmp.path());
    let paths = write_run_reports(&dir).unwrap();
    let html = std::fs::read_to_string(&paths.html).unwrap();
    assert_eq!(chart_ids(&html), EXPECTED_CHARTS);
    assert_self_contained(&html);
    // thresholds are drawn into the charts that have them (legend + crosses)
    let ttfp = chart_section(&html, "test_qwen3_tts_base::ttfp::concurrency");
    assert!(
        ttfp.contains("voice_clone_throughput_seed-tts threshold"),
        "{ttfp}"
    );
    // the stress entry's threshold is on mean E2EL: that chart plots mean, not median
    let e2el = chart_section(&html, "test_qwen3_tts_customvoice::e2el::request_rate");
    assert!(e2el.contains("mean_e2el_ms") && e2el.contains("threshold"));
}

fn chart_section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!("data-chart=\"{id}\"")).unwrap();
    let end = html[start..].find("</figure>").unwrap();
    &html[start..start + end]
}

fn assert_self_contained(html: &str) {
    for bad in [
        "<script", "<link", "src=", "url(", "@import", "<iframe", "<img",
    ] {
        assert!(
            !html.contains(bad),
            "report.html references something external: {bad}"
        );
    }
    // an attribute pointing at a URL would be fetched (text may mention URLs)
    let urls = html.matches("=\"http").count() + html.matches("='http").count();
    let ns = html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(urls, ns, "only SVG namespace attributes may hold a URL");
}

#[test]
fn crashed_run_without_summary_still_gets_a_report() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RunBuilder::new("20260302-030000-SIM")
        .fault(FALLBACK, Fault::Fallback)
        .without_summary()
        .write(tmp.path());
    let paths = write_run_reports(&dir).unwrap();
    let md = std::fs::read_to_string(&paths.markdown).unwrap();
    assert!(md.contains("summary.json is missing"), "{md}");
    assert!(md.contains(&format!("`{SLOW_TRIAL}`")));
    let fallback_row = md.lines().find(|l| l.contains(FALLBACK)).unwrap();
    assert!(fallback_row.contains("**FAILED**"), "{fallback_row}");
    junit::parse(&std::fs::read_to_string(&paths.junit).unwrap());
}

#[test]
fn not_a_run_folder_is_named_in_the_error() {
    let tmp = tempfile::tempdir().unwrap();
    let err = write_run_reports(tmp.path()).unwrap_err().to_string();
    assert!(err.contains(&tmp.path().display().to_string()), "{err}");
    assert!(err.contains("not a dfx-perf run folder"), "{err}");
    std::fs::write(
        tmp.path().join("summary.json"),
        "{\"trials\": [{\"name\": 3}]}",
    )
    .unwrap();
    let err = write_run_reports(tmp.path()).unwrap_err().to_string();
    assert!(
        err.contains("summary.json") && err.contains("invalid type"),
        "{err}"
    );
}

/// Every recorded fixture (tests/fixtures/runs/*) gets valid, self-contained reports.
#[test]
fn recorded_fixtures_render() {
    for fixture in common::recorded_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let copy = tmp.path().join(fixture.file_name().unwrap());
        common::copy_tree(&fixture, &copy);
        let paths =
            write_run_reports(&copy).unwrap_or_else(|e| panic!("{}: {e}", fixture.display()));
        let run = load_run(&copy).unwrap();
        let j = junit::parse(&std::fs::read_to_string(&paths.junit).unwrap());
        assert_eq!(j.cases.len(), run.trials.len(), "{}", fixture.display());
        assert_self_contained(&std::fs::read_to_string(&paths.html).unwrap());
    }
}

/// A run whose trials had no threshold for its hardware (the recorded SIMx4 run) says so
/// per trial and in the header and notes of report.md, and once in report.html: green on
/// completion alone is not a pass.
#[test]
fn trials_without_thresholds_are_marked_needs_data() {
    let fixture = common::recorded_runs()
        .into_iter()
        .find(|p| p.ends_with("sim-x4-passing"))
        .expect("recorded fixture sim-x4-passing");
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("sim-x4-passing");
    common::copy_tree(&fixture, &copy);
    let paths = write_run_reports(&copy).unwrap();
    let md = std::fs::read_to_string(&paths.markdown).unwrap();
    let run = load_run(&copy).unwrap();
    assert!(run.trials.iter().all(|t| t.needs_data()));
    for t in &run.trials {
        let row = md
            .lines()
            .find(|l| l.contains(&format!("`{}`", t.name)))
            .unwrap();
        assert!(row.ends_with(" needs data |"), "{row}");
    }
    assert!(md.contains("; 2 without thresholds (needs data) |"), "{md}");
    assert!(
        md.contains("- needs data: 2 trial(s) had no threshold for"),
        "{md}"
    );
    // the page says it once for the run, not on every row
    let html = std::fs::read_to_string(&paths.html).unwrap();
    assert_eq!(
        html.matches("<span class=\"needs\">needs data</span>")
            .count(),
        1
    );
    assert!(
        html.contains("needs data</span>: 2 of 2 trial(s)"),
        "{html}"
    );
    // A run with thresholds on every trial has no such marks.
    let other = nightly(tmp.path());
    let md = std::fs::read_to_string(write_run_reports(&other).unwrap().markdown).unwrap();
    assert!(!md.contains("needs data"), "{md}");
}
