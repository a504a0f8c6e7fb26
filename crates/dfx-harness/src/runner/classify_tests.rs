use std::path::PathBuf;
use std::time::Duration;

use dfx_core::baseline::Direction;
use dfx_core::result::ResultDoc;
use dfx_core::server::{ExitStatus, ServerError};
use serde_json::json;

use super::*;
use crate::pool::ServerDied;

fn doc(v: serde_json::Value) -> ResultDoc {
    serde_json::from_value(v).unwrap()
}

fn none(_: &str) -> Option<MetricNoise> {
    None
}

fn breach(gap: f64) -> Breach {
    Breach {
        metric: "median_e2el_ms".into(),
        value: 100.0 * (1.0 + gap),
        threshold: 100.0,
        gap,
        direction: Direction::LowerIsBetter,
    }
}

#[test]
fn the_server_log_names_the_start_cause() {
    let oom = ServerError::ExitedBeforeReady {
        status: ExitStatus::Code(1),
        log: PathBuf::from("s/server.log"),
        log_tail: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate".into(),
    };
    let (class, detail) = start_failure(&AcquireError::Start(oom));
    assert_eq!(class, FailureClass::ServerStart);
    assert_eq!(
        detail,
        "exited at start with exit status 1: out of memory (server log)"
    );
    let timeout = ServerError::NotReady {
        waited: Duration::from_secs(600),
        log: PathBuf::from("s/server.log"),
        log_tail: "OSError: Qwen/x is not a local folder and is not a valid model identifier"
            .into(),
    };
    let (_, detail) = start_failure(&AcquireError::Start(timeout));
    assert_eq!(
        detail,
        "never ready in 600 s: model or weights missing (server log)"
    );
    let port = ServerError::PortInUse {
        host: "127.0.0.1".into(),
        port: 8091,
    };
    let (_, detail) = start_failure(&AcquireError::Start(port));
    assert_eq!(detail, "port in use (8091 already answers)");
    assert_eq!(
        start_failure(&AcquireError::Interrupted).0,
        FailureClass::Interrupted
    );
    assert_eq!(log_cause("all fine\nready"), None);
}

#[test]
fn the_most_causal_failure_wins() {
    let d = doc(json!({"failed": 3, "num_prompts": 4, "error_counts": {"transport": 3}}));
    let ev = Evidence {
        doc: &d,
        errors: &["connection reset".into()],
        noise: &none,
    };
    let died = TrialFailure::ServerDied(ServerDied {
        status: ExitStatus::Code(137),
        log: "s/server.log".into(),
        log_tail: "simulated crash".into(),
    });
    let failures = [
        TrialFailure::Breach(breach(0.3)),
        TrialFailure::Incomplete("incomplete".into()),
        died,
    ];
    let (class, detail) = classify(&failures, &ev).unwrap();
    assert_eq!(class, FailureClass::ServerExit);
    assert_eq!(detail, "died during the trial with exit status 137");
    let (class, detail) = classify(&failures[..2], &ev).unwrap();
    assert_eq!(class, FailureClass::ServerErrors);
    assert_eq!(
        detail,
        "3 of 4 requests failed: transport ×3; first: `connection reset`"
    );
    assert_eq!(classify(&[], &ev), None);
}

#[test]
fn a_stall_line_first_makes_an_incomplete_trial_stalled() {
    let d = doc(json!({"failed": 2, "num_prompts": 4}));
    let errors = vec![
        "server stalled: no stream made progress for 20.0 s; streams stalled 1, in flight 1 \
         (ended as stalled), completed 2, not sent 1; last: no body bytes"
            .to_string(),
    ];
    let ev = Evidence {
        doc: &d,
        errors: &errors,
        noise: &none,
    };
    let (class, detail) = classify(&[TrialFailure::Incomplete("x".into())], &ev).unwrap();
    assert_eq!(class, FailureClass::Stalled);
    assert!(
        detail.starts_with("server stalled: no stream made progress"),
        "{detail}"
    );
    assert!(!detail.contains("last:"), "{detail}");
}

#[test]
fn breaches_inside_the_repeats_noise_are_within_noise() {
    let d = doc(json!({"repeats": {"stats": {"median_e2el_ms": {
        "n": 3, "median": 100.0, "ci95_low": 95.0, "ci95_high": 105.0
    }}}}));
    assert_eq!(repeat_noise(&d, "median_e2el_ms"), Some(0.05));
    assert_eq!(repeat_noise(&d, "median_audio_ttfp_ms"), None);
    let no_history = BTreeMap::new();
    let noise = |m: &str| cell_noise(&d, &no_history, m);
    let ev = Evidence {
        doc: &d,
        errors: &[],
        noise: &noise,
    };
    let (class, detail) = classify(&[TrialFailure::Breach(breach(0.03))], &ev).unwrap();
    assert_eq!(class, FailureClass::BreachWithinNoise);
    assert_eq!(
        detail,
        "median_e2el_ms 103 > 100 (+3.0 %) within noise ±5.0 % (repeats)"
    );
    let (class, _) = classify(&[TrialFailure::Breach(breach(0.2))], &ev).unwrap();
    assert_eq!(class, FailureClass::Breach);
}

#[test]
fn the_larger_of_the_repeats_and_the_history_noise_judges_a_breach() {
    let d = doc(json!({"repeats": {"stats": {"median_e2el_ms": {
        "n": 3, "median": 100.0, "ci95_low": 98.0, "ci95_high": 102.0
    }}}}));
    let history = BTreeMap::from([(
        "median_e2el_ms".to_string(),
        MetricNoise {
            rel: 0.12,
            source: NoiseSource::History { runs: 9 },
        },
    )]);
    let noise = |m: &str| cell_noise(&d, &history, m);
    let ev = Evidence {
        doc: &d,
        errors: &[],
        noise: &noise,
    };
    let (class, detail) = classify(&[TrialFailure::Breach(breach(0.08))], &ev).unwrap();
    assert_eq!(class, FailureClass::BreachWithinNoise);
    assert_eq!(
        detail,
        "median_e2el_ms 108 > 100 (+8.0 %) within noise ±12.0 % (history of 9 runs)"
    );
    let (class, detail) = classify(&[TrialFailure::Breach(breach(0.5))], &ev).unwrap();
    assert_eq!(class, FailureClass::Breach);
    assert!(
        detail.ends_with("beyond noise ±12.0 % (history of 9 runs)"),
        "{detail}"
    );
    // Without the history only the repeats' ±2 % is known: the same 8 % is a breach.
    let repeats_only = BTreeMap::new();
    let noise = |m: &str| cell_noise(&d, &repeats_only, m);
    let ev = Evidence {
        noise: &noise,
        ..ev
    };
    let (class, detail) = classify(&[TrialFailure::Breach(breach(0.08))], &ev).unwrap();
    assert_eq!(class, FailureClass::Breach);
    assert!(
        detail.ends_with("beyond noise ±2.0 % (repeats)"),
        "{detail}"
    );
}

#[test]
fn client_and_check_failures() {
    let d = doc(json!({}));
    let ev = Evidence {
        doc: &d,
        errors: &[],
        noise: &none,
    };
    let load = TrialFailure::InvalidLoad("lag 2 s".into());
    let quality = TrialFailure::Quality("wer 0.4 > 0.1".into());
    let (class, detail) = classify(&[quality.clone(), load], &ev).unwrap();
    assert_eq!(class, FailureClass::Client);
    assert_eq!(detail, "load generation invalid: lag 2 s");
    assert_eq!(classify(&[quality], &ev).unwrap().0, FailureClass::Check);
    let repeat = TrialFailure::Repeat {
        k: 2,
        of: 3,
        failure: Box::new(TrialFailure::Unexplained),
    };
    let (class, detail) = classify(&[repeat], &ev).unwrap();
    assert_eq!(class, FailureClass::Harness);
    assert!(detail.starts_with("repeat 2/3: "), "{detail}");
}
