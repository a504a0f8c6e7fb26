//! `junit.xml` for CI test-report views: one `<testsuite>` per test, one `<testcase>`
//! per trial (classname = test name, name = full trial name), failures (`type` = the
//! trial's failure class, the message its detail), the measured metrics and thresholds
//! as properties.

use std::fmt::Write;

use super::threshold_views;
use crate::fmt::xml;
use crate::run::{Outcome, Run, TrialSummary};

/// Renders `junit.xml`.
pub fn render_junit(run: &Run) -> String {
    let mut tests: Vec<&str> = Vec::new();
    for t in &run.trials {
        if !tests.contains(&t.test_name.as_str()) {
            tests.push(&t.test_name);
        }
    }
    let (passed, failed, skipped) = super::counts(run);
    let total_time: f64 = run.trials.iter().map(trial_time).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"dfx-perf {}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\" time=\"{:.3}\">",
        xml(&run.run_id),
        passed + failed + skipped,
        total_time
    );
    for test in tests {
        let trials: Vec<&TrialSummary> =
            run.trials.iter().filter(|t| t.test_name == test).collect();
        suite(&mut out, run, test, &trials);
    }
    out.push_str("</testsuites>\n");
    out
}

/// The trial's wall time, else the bench duration, else 0.
fn trial_time(t: &TrialSummary) -> f64 {
    t.seconds
        .or_else(|| t.metric("duration"))
        .filter(|d| d.is_finite() && *d >= 0.0)
        .unwrap_or(0.0)
}

fn suite(out: &mut String, run: &Run, test: &str, trials: &[&TrialSummary]) {
    let n = |o| trials.iter().filter(|t| t.outcome == o).count();
    let time: f64 = trials.iter().map(|t| trial_time(t)).sum();
    let _ = write!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{time:.3}\"",
        xml(test),
        trials.len(),
        n(Outcome::Failed),
        n(Outcome::Ignored)
    );
    if let Some(ts) = &run.info.started {
        let _ = write!(out, " timestamp=\"{}\"", xml(ts));
    }
    if let Some(h) = &run.info.hostname {
        let _ = write!(out, " hostname=\"{}\"", xml(h));
    }
    out.push_str(">\n    <properties>\n");
    property(out, 6, "run_id", &run.run_id);
    property(out, 6, "hardware", &run.hardware_identity());
    if let Some(sha) = &run.info.git_sha {
        property(out, 6, "git_sha", sha);
    }
    out.push_str("    </properties>\n");
    for t in trials {
        case(out, t);
    }
    out.push_str("  </testsuite>\n");
}

fn property(out: &mut String, indent: usize, name: &str, value: &str) {
    let _ = writeln!(
        out,
        "{:indent$}<property name=\"{}\" value=\"{}\"/>",
        "",
        xml(name),
        xml(value)
    );
}

fn case(out: &mut String, t: &TrialSummary) {
    let _ = writeln!(
        out,
        "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\">",
        xml(&t.name),
        xml(&t.test_name),
        trial_time(t)
    );
    out.push_str("      <properties>\n");
    if let Some(src) = &t.result_source {
        property(out, 8, "result_source", src);
    }
    for (k, v) in &t.metrics {
        if let Some(x) = v.as_f64() {
            property(out, 8, k, &x.to_string());
        }
    }
    for th in &t.thresholds {
        property(
            out,
            8,
            &format!("threshold.{}", th.metric),
            &th.value.to_string(),
        );
    }
    out.push_str("      </properties>\n");
    match t.outcome {
        Outcome::Failed => {
            let mut lines = t.failures.clone();
            for v in threshold_views(t).iter().filter(|v| v.breached) {
                lines.push(format!("breach: {}", v.text()));
            }
            let first = lines.first().cloned().unwrap_or_else(|| "failed".into());
            // The failure's type is the trial's class (`failed` for run folders older
            // than the class); the message leads with its detail.
            let (kind, message) = match (&t.failure_class, &t.failure_detail) {
                (Some(c), Some(d)) => (c.as_str(), format!("{c}: {d}")),
                (Some(c), None) => (c.as_str(), first),
                (None, _) => ("failed", first),
            };
            let _ = writeln!(
                out,
                "      <failure message=\"{}\" type=\"{kind}\">{}</failure>",
                xml(&message),
                xml_text(&lines.join("\n"))
            );
        }
        Outcome::Ignored => {
            let why = t.ignored_text();
            let _ = writeln!(out, "      <skipped message=\"{}\"/>", xml(&why));
        }
        Outcome::Passed => {}
    }
    if !t.warnings.is_empty() && t.outcome != Outcome::Ignored {
        let _ = writeln!(
            out,
            "      <system-out>{}</system-out>",
            xml_text(&t.warnings.join("\n"))
        );
    }
    out.push_str("    </testcase>\n");
}

/// Element text: like [`xml`] but keeps real newlines (readable in CI views).
fn xml_text(s: &str) -> String {
    xml(s).replace("&#10;", "\n")
}
