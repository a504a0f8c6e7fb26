//! The one way a value is shown against its threshold, shared by the terminal's breach
//! lines ([`super::Breach::line`]) and the reports (`report.md`, `report.html`, JUnit):
//! `audio_throughput 120.97 < 134.11 (-9.8 %)`. The gap is the value relative to the
//! threshold, `(value - threshold) / |threshold|`, whichever way is better, so the sign
//! says on which side of the threshold the value lies, not whether that is good.

use super::fmt_num;

/// `(value - threshold) / |threshold|`: +0.178 for a value 17.8 % above its threshold,
/// -0.098 for 9.8 % below it; infinite (signed like `value - threshold`) when the
/// threshold is 0 and the value is not.
pub fn relative_gap(value: f64, threshold: f64) -> f64 {
    if threshold != 0.0 {
        (value - threshold) / threshold.abs()
    } else if value > threshold {
        f64::INFINITY
    } else if value < threshold {
        f64::NEG_INFINITY
    } else {
        0.0
    }
}

/// A gap as the lines show it: `+17.8 %`, `-9.8 %`, `+inf %`.
pub fn gap_text(gap: f64) -> String {
    if gap.is_finite() {
        let p = gap * 100.0;
        let p = if p.abs() < 0.05 { 0.0 } else { p };
        format!("{p:+.1} %")
    } else if gap.is_nan() {
        "n/a".to_string()
    } else if gap > 0.0 {
        "+inf %".to_string()
    } else {
        "-inf %".to_string()
    }
}

/// `median_audio_ttfp_ms 412.3 > 350 (+17.8 %)`: the metric, its value, how the value
/// compares with the threshold (`>`, `<`, `=`), the threshold and [`gap_text`] of
/// [`relative_gap`].
pub fn threshold_line(metric: &str, value: f64, threshold: f64) -> String {
    let op = if value > threshold {
        ">"
    } else if value < threshold {
        "<"
    } else {
        "="
    };
    format!(
        "{metric} {} {op} {} ({})",
        fmt_num(value),
        fmt_num(threshold),
        gap_text(relative_gap(value, threshold))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sign_is_the_value_relative_to_the_threshold() {
        assert_eq!(
            threshold_line("audio_throughput", 120.97, 134.11),
            "audio_throughput 120.97 < 134.11 (-9.8 %)"
        );
        assert_eq!(
            threshold_line("median_audio_ttfp_ms", 412.3, 350.0),
            "median_audio_ttfp_ms 412.3 > 350 (+17.8 %)"
        );
        assert_eq!(threshold_line("x", 2.0, 2.0), "x 2 = 2 (+0.0 %)");
        assert_eq!(threshold_line("x", 1.0, 0.0), "x 1 > 0 (+inf %)");
        assert_eq!(relative_gap(0.0, 0.0), 0.0);
        assert!((relative_gap(-2.0, -4.0) - 0.5).abs() < 1e-12);
    }
}
