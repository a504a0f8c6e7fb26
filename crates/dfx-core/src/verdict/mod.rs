//! The verdict of one trial: completion first, then baselines (fatal only with
//! `--assert-baseline`).
//!
//! - A template fallback result (`result_source: "template"`) fails: the bench left no
//!   result.
//! - The trial fails unless `completed == num_prompts`; the message names completed,
//!   failed, num_prompts and the first distinct request errors.
//! - Each threshold is compared in its metric's direction, equality passing. A breach (or
//!   a thresholded metric missing from the result) fails the trial under
//!   `--assert-baseline` and is a warning otherwise.

use serde::Serialize;

use crate::baseline::{Direction, Threshold, Thresholds};
use crate::result::{ResultDoc, metric};

mod class;
pub use class::{
    FailureClass, MetricNoise, NoiseSource, breach_detail, breach_within_noise, classify_breaches,
};

/// How many distinct request errors a completion failure quotes.
pub(crate) const MAX_QUOTED_ERRORS: usize = 5;

/// One threshold breach.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Breach {
    /// The result key breached (`median_audio_ttfp_ms`).
    pub metric: String,
    /// The result's value, in the metric's unit.
    pub value: f64,
    /// The threshold it breached, in the same unit.
    pub threshold: f64,
    /// Relative gap `(value - threshold) / threshold`: positive over a ceiling
    /// (lower-is-better), negative under a floor (higher-is-better); e.g. +0.178 for
    /// 17.8 % over a ceiling. Infinite when the threshold is 0 (written as `null`).
    #[schemars(with = "Option<f64>")]
    pub gap: f64,
    /// Which way is better: whether the threshold is a ceiling or a floor.
    pub direction: Direction,
}

/// Reads what dfx-perf writes; a breach recorded without `direction` (hand-made run
/// folders) takes it from the direction table, else from the sign of `gap`, and a `null`
/// gap (an infinite one, as JSON writes it) is infinite again.
impl<'de> serde::Deserialize<'de> for Breach {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Raw {
            metric: String,
            value: f64,
            threshold: f64,
            gap: Option<f64>,
            direction: Option<Direction>,
        }
        let r = Raw::deserialize(d)?;
        let gap = r.gap.unwrap_or(f64::INFINITY);
        let direction = r
            .direction
            .or_else(|| crate::baseline::direction_of(&r.metric))
            .unwrap_or(if gap >= 0.0 {
                Direction::LowerIsBetter
            } else {
                Direction::HigherIsBetter
            });
        Ok(Breach {
            metric: r.metric,
            value: r.value,
            threshold: r.threshold,
            gap,
            direction,
        })
    }
}

impl Breach {
    /// `median_audio_ttfp_ms 412.3 > 350 (+17.8 %)` or
    /// `audio_throughput 20.1 < 24.2 (-16.9 %)`.
    pub fn line(&self) -> String {
        // a recorded gap may be the null (infinite) one: the line derives it again
        gap::threshold_line(&self.metric, self.value, self.threshold)
    }
}

/// Short, exact-looking numbers: up to 4 decimals, trailing zeros dropped (`350`,
/// `412.3`, `0.1591`); tiny values keep 4 significant digits.
pub(crate) fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let a = x.abs();
    let s = if a != 0.0 && a < 0.001 {
        format!("{x:.3e}")
    } else {
        let s = format!("{x:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    };
    if s == "-0" { "0".into() } else { s }
}

/// The outcome of judging one result.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    /// Whether the trial passed: `failures` is empty.
    pub passed: bool,
    /// The run was interrupted (SIGINT / SIGTERM) while this trial ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Why the trial failed (completion, fallback, breaches under `--assert-baseline`).
    pub failures: Vec<String>,
    /// Breaches found (fatal or not).
    pub breaches: Vec<Breach>,
    /// Breaches printed as warnings (no `--assert-baseline`), and other notes.
    pub warnings: Vec<String>,
    /// A failed trial's class, the most causal of its failures ([`FailureClass`]);
    /// absent for a passed trial and in run folders older than the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_class: Option<FailureClass>,
    /// One short line on the class: the cause (`out of memory (server log)`), the top
    /// request errors with counts, or the breached metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_detail: Option<String>,
}

impl Verdict {
    /// A failed verdict with these reasons and no breach or warning.
    pub fn failed(failures: Vec<String>) -> Self {
        Verdict {
            passed: false,
            interrupted: false,
            failures,
            breaches: Vec::new(),
            warnings: Vec::new(),
            failure_class: None,
            failure_detail: None,
        }
    }

    /// Sets the class and its detail line.
    pub fn classify(&mut self, class: FailureClass, detail: String) {
        self.failure_class = Some(class);
        self.failure_detail = Some(detail);
    }
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
    let mut v = Verdict::failed(Vec::new());
    if doc.get("result_source").and_then(|s| s.as_str()) == Some("template") {
        let reason = doc
            .get("fallback_reason")
            .and_then(|r| r.as_str())
            .unwrap_or("no reason recorded");
        v.failures.push(template_failure(num_prompts, reason));
        return v;
    }
    if let Some(f) = completion_failure(doc, num_prompts, errors) {
        v.failures.push(f);
    }
    if let Some(note) = &thresholds.note {
        v.warnings.push(format!("no thresholds: {note}"));
    }
    for t in &thresholds.items {
        check_threshold(doc, t, assert_baseline, &mut v);
    }
    v.passed = v.failures.is_empty();
    v
}

/// The failure [`judge`] gives a template fallback result whose `fallback_reason` is
/// `reason`.
pub fn template_failure(num_prompts: u64, reason: &str) -> String {
    format!(
        "the bench left no result: this is the template fallback (completed 0 of {num_prompts}); {reason}"
    )
}

/// The failure [`judge`] gives a result that completed fewer than `num_prompts` requests
/// (`None` when it completed them all).
pub fn completion_failure(doc: &ResultDoc, num_prompts: u64, errors: &[String]) -> Option<String> {
    let completed = metric(doc, "completed");
    if completed == Some(num_prompts as f64) {
        return None;
    }
    let completed = completed.map_or("missing".to_string(), fmt_num);
    let failed = metric(doc, "failed").map_or("missing".to_string(), fmt_num);
    let mut distinct: Vec<&str> = Vec::new();
    for e in errors {
        if !distinct.contains(&e.as_str()) && distinct.len() < MAX_QUOTED_ERRORS {
            distinct.push(e);
        }
    }
    let errs = if distinct.is_empty() {
        "no request errors recorded".to_string()
    } else {
        let quoted: Vec<String> = distinct.iter().map(|e| format!("`{e}`")).collect();
        format!("first errors: {}", quoted.join("; "))
    };
    Some(format!(
        "incomplete: completed {completed} of num_prompts {num_prompts} (failed {failed}); {errs}"
    ))
}

fn check_threshold(doc: &ResultDoc, t: &Threshold, assert_baseline: bool, v: &mut Verdict) {
    let Some(value) = metric(doc, &t.metric) else {
        let msg = format!(
            "{} metric missing from result (threshold {} {})",
            t.metric,
            t.direction.symbol(),
            fmt_num(t.value)
        );
        if assert_baseline {
            v.failures.push(msg);
        } else {
            v.warnings.push(msg);
        }
        return;
    };
    if !t.direction.breached(value, t.value) {
        return;
    }
    let gap = gap::relative_gap(value, t.value);
    let breach = Breach {
        metric: t.metric.clone(),
        value,
        threshold: t.value,
        gap,
        direction: t.direction,
    };
    if assert_baseline {
        v.failures.push(breach.line());
    } else {
        v.warnings
            .push(format!("baseline breach (not asserted): {}", breach.line()));
    }
    v.breaches.push(breach);
}

pub mod gap;

#[cfg(test)]
mod tests;
