//! What a threshold must be to check something, and the closest names for an unknown
//! metric. Every metric with a direction is never negative (see [`super::table`]): a floor
//! (higher is better) of 0 or less passes every result, a ceiling (lower is better) below
//! 0 fails every result, and so does a ceiling of 0 for a metric that is positive whenever
//! it is measured (a latency, a throughput, an RTF).

use super::table::{CAN_BE_ZERO, EXACT, FAMILIES};
use super::{ACCEPTED_HINT, Direction, Known, lookup};

/// Why `value` cannot serve as a threshold of `metric` (a registry metric with a
/// direction), or `None` when it can.
pub fn bound_problem(metric: &str, value: f64) -> Option<String> {
    let known = lookup(metric)?;
    let direction = known.direction()?;
    if !value.is_finite() {
        return Some(format!("threshold {value} is not a finite number"));
    }
    match direction {
        Direction::HigherIsBetter if value <= 0.0 => Some(format!(
            "a floor of {value} checks nothing: `{metric}` is never negative"
        )),
        Direction::LowerIsBetter if value < 0.0 => Some(format!(
            "a ceiling of {value} can never hold: `{metric}` is never negative"
        )),
        Direction::LowerIsBetter if value == 0.0 && !can_be_zero(&known) => Some(format!(
            "a ceiling of 0 can never hold: `{metric}` is positive whenever it is measured"
        )),
        _ => None,
    }
}

/// What a threshold of `metric` may be, for an error's accepted part.
pub fn bound_accepted(metric: &str) -> &'static str {
    match lookup(metric).and_then(|k| k.direction().map(|d| (k, d))) {
        Some((k, Direction::LowerIsBetter)) if can_be_zero(&k) => "a finite number >= 0",
        _ => "a finite number > 0",
    }
}

fn can_be_zero(known: &Known<'_>) -> bool {
    match known {
        Known::Exact(m) => CAN_BE_ZERO.contains(&m.name),
        Known::Stat { stat, family } => *stat == "std" || CAN_BE_ZERO.contains(&family.name),
    }
}

/// `closest: …` names of the registry for an unknown metric, or the list of accepted
/// names when none is close.
pub fn unknown_metric_hint(metric: &str) -> String {
    let stats = ["mean", "median", "std", "p50", "p90", "p95", "p99"];
    let mut names: Vec<String> = EXACT
        .iter()
        .filter(|m| m.direction.is_some())
        .map(|m| m.name.to_string())
        .collect();
    for f in FAMILIES.iter().filter(|m| m.direction.is_some()) {
        names.extend(stats.iter().map(|s| format!("{s}_{}", f.name)));
    }
    crate::suggest::hint(metric, names.iter().map(String::as_str), ACCEPTED_HINT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_that_check_nothing_or_never_hold() {
        assert!(bound_problem("median_audio_ttfp_ms", -5.0).is_some());
        assert!(bound_problem("median_audio_ttfp_ms", 0.0).is_some());
        assert!(bound_problem("audio_throughput", -5.0).is_some());
        assert!(bound_problem("audio_throughput", 0.0).is_some());
        assert!(bound_problem("audio_throughput", f64::NAN).is_some());
        assert!(bound_problem("p99_e2el_ms", f64::INFINITY).is_some());
    }

    #[test]
    fn bounds_that_check_something() {
        assert_eq!(bound_problem("median_audio_ttfp_ms", 250.0), None);
        assert_eq!(bound_problem("audio_throughput", 0.5), None);
        // A ceiling of 0 holds for metrics that can be 0.
        assert_eq!(bound_problem("failed", 0.0), None);
        assert_eq!(bound_problem("p99_audio_underrun_s", 0.0), None);
        assert_eq!(bound_problem("std_e2el_ms", 0.0), None);
        assert_eq!(bound_accepted("failed"), "a finite number >= 0");
        assert_eq!(bound_accepted("audio_throughput"), "a finite number > 0");
    }

    #[test]
    fn unknown_metrics_get_the_closest_names() {
        let h = unknown_metric_hint("median_audio_ttfp_msx");
        assert!(h.starts_with("closest: median_audio_ttfp_ms"), "{h}");
        assert_eq!(unknown_metric_hint("zzzzzzzzzzzzzzzzzzzz"), ACCEPTED_HINT);
    }
}
