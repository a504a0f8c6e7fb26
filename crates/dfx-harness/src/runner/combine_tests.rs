//! `combined_failures`: failures de-duplicated as values, the fallback's line and tail, the
//! breaches under `--assert-baseline`.

use dfx_core::baseline::Direction;
use dfx_core::result::template_fallback;
use dfx_core::verdict::{Breach, Verdict, template_failure};

use super::failure::{Fallback, NoResult, NotRun, TrialFailure, render};
use super::{Produced, combined_failures};

fn produced(failures: Vec<TrialFailure>, fallback: Option<Fallback>, judged: bool) -> Produced {
    Produced {
        doc: template_fallback("x"),
        failures,
        fallback,
        log_tail: "\n--- bench log tail ---\nlast line".into(),
        judged,
        errors: Vec::new(),
        bench: Some("fake"),
        server: None,
    }
}

fn verdict(failures: Vec<String>, breaches: Vec<Breach>) -> Verdict {
    let mut v = Verdict::failed(failures);
    v.passed = v.failures.is_empty();
    v.breaches = breaches;
    v
}

fn breach() -> Breach {
    Breach {
        metric: "median_audio_ttfp_ms".into(),
        value: 412.3,
        threshold: 350.0,
        gap: 412.3 / 350.0 - 1.0,
        direction: Direction::LowerIsBetter,
    }
}

#[test]
fn the_completion_failure_is_typed_as_incomplete() {
    let p = produced(Vec::new(), None, true);
    let v = verdict(vec!["incomplete: x".into(), "other".into()], vec![]);
    let out = combined_failures(&p, &v, false, 4, Some("incomplete: x"));
    assert_eq!(
        out,
        [
            TrialFailure::Incomplete("incomplete: x".into()),
            TrialFailure::Verdict("other".into())
        ]
    );
}

#[test]
fn equal_failures_are_kept_once() {
    let invalid = TrialFailure::InvalidLoad("lag".into());
    let p = produced(vec![invalid.clone()], None, true);
    let v = verdict(vec!["incomplete: x".into(), "incomplete: x".into()], vec![]);
    let out = combined_failures(&p, &v, false, 4, None);
    assert_eq!(
        out,
        [invalid, TrialFailure::Verdict("incomplete: x".into())]
    );
}

#[test]
fn the_judged_fallback_line_gets_the_log_tail() {
    let why = NoResult::Left {
        label: "fake".into(),
        exit: None,
    };
    let line = template_failure(4, &why.to_string());
    let p = produced(Vec::new(), Some(Fallback::NoResult(why)), true);
    let out = render(&combined_failures(
        &p,
        &verdict(vec![line.clone()], vec![]),
        false,
        4,
        None,
    ));
    assert_eq!(out, [format!("{line}\n--- bench log tail ---\nlast line")]);
    assert!(out[0].contains("bench `fake` left no result (no exit status)"));
}

#[test]
fn a_fallback_the_verdict_did_not_name_is_said_first() {
    let why = NoResult::NoRepeat { of: 3 };
    let p = produced(Vec::new(), Some(Fallback::NoResult(why)), true);
    let v = verdict(vec!["something else".into()], vec![]);
    let out = render(&combined_failures(&p, &v, false, 4, None));
    assert_eq!(
        out,
        [
            "no repeat of 3 left a result: wrote the template fallback\n--- bench log tail ---\nlast line",
            "something else"
        ]
    );
}

#[test]
fn a_trial_that_did_not_run_has_its_reason_only() {
    let why = NotRun::BenchMissing { label: "vllm" };
    let p = produced(Vec::new(), Some(Fallback::NotRun(why)), false);
    let v = Verdict {
        passed: false,
        ..verdict(vec![], vec![])
    };
    let out = render(&combined_failures(&p, &v, false, 4, None));
    assert_eq!(out, ["bench `vllm` is not available"]);
}

#[test]
fn asserted_breaches_are_there_once() {
    let b = breach();
    let p = produced(Vec::new(), None, true);
    let asserted = verdict(vec![b.line()], vec![b.clone()]);
    let out = combined_failures(&p, &asserted, true, 4, None);
    assert_eq!(out, [TrialFailure::Breach(b.clone())]);
    // A breach the verdict did not list as a failure is added under --assert-baseline.
    let unlisted = Verdict {
        passed: false,
        ..verdict(vec![], vec![b.clone()])
    };
    let out = render(&combined_failures(&p, &unlisted, true, 4, None));
    assert_eq!(out, [b.line()]);
    let out = render(&combined_failures(&p, &unlisted, false, 4, None));
    assert_eq!(out, ["the verdict failed the trial without a reason"]);
}
