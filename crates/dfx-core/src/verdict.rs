//! The verdict of one trial: completion first, then baselines (fatal only with
//! `--assert-baseline`).

use serde::Serialize;

use crate::baseline::Thresholds;
use crate::result::ResultDoc;

/// One threshold breach.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Breach {
    pub metric: String,
    pub value: f64,
    pub threshold: f64,
    /// Relative gap, signed toward "worse" (e.g. +0.178 for 17.8 % over a ceiling).
    pub gap: f64,
}

impl Breach {
    /// `median_audio_ttfp_ms 412.3 > 350 (+17.8 %)`.
    pub fn line(&self) -> String {
        let _ = self;
        String::new()
    }
}

/// The outcome of judging one result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub passed: bool,
    /// Why the trial failed (completion, fallback, breaches under `--assert-baseline`).
    pub failures: Vec<String>,
    /// Breaches found (fatal or not).
    pub breaches: Vec<Breach>,
    /// Breaches printed as warnings (no `--assert-baseline`), and other notes.
    pub warnings: Vec<String>,
}

/// Judges a result document against the expected prompt count and thresholds.
/// `errors` are the first distinct request errors the bench saw.
pub fn judge(
    doc: &ResultDoc,
    num_prompts: u64,
    thresholds: &Thresholds,
    errors: &[String],
    assert_baseline: bool,
) -> Verdict {
    let _ = (doc, num_prompts, thresholds, errors, assert_baseline);
    Verdict {
        passed: false,
        failures: vec!["not implemented".into()],
        breaches: vec![],
        warnings: vec![],
    }
}
