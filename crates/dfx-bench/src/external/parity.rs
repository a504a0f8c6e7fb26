//! Side-by-side comparison of a native and a `vllm bench` result of the same step (the
//! parity procedure, `scripts/parity.sh`).

use dfx_core::result::{ResultDoc, metric};

/// The metrics shown by default, in this order (when at least one side has them).
pub(crate) const CORE_METRICS: &[&str] = dfx_core::metrics::PARITY_KEYS;

/// One compared metric.
#[derive(Debug, Clone, PartialEq)]
pub struct ParityRow {
    /// The result key compared.
    pub metric: String,
    /// Its value in the native result; `None` when absent or not a number.
    pub native: Option<f64>,
    /// Its value in the `vllm bench` result; `None` when absent or not a number.
    pub vllm: Option<f64>,
}

impl ParityRow {
    /// native / vllm; `Some(1.0)` when both are 0, `None` when undefined.
    pub fn ratio(&self) -> Option<f64> {
        match (self.native, self.vllm) {
            (Some(n), Some(v)) if v == 0.0 && n == 0.0 => Some(1.0),
            (Some(n), Some(v)) if v != 0.0 => Some(n / v),
            _ => None,
        }
    }

    /// Whether the ratio is further than `tolerance` (a fraction) from 1, or the metric
    /// exists on one side only.
    pub fn differs(&self, tolerance: f64) -> bool {
        match self.ratio() {
            Some(r) => (r - 1.0).abs() > tolerance,
            None => self.native.is_some() != self.vllm.is_some() || self.native != self.vllm,
        }
    }
}

/// The rows to compare: `CORE_METRICS` present on either side, then (with `all`) every
/// other numeric key of either document, in the native document's order first.
pub fn parity_rows(native: &ResultDoc, vllm: &ResultDoc, all: bool) -> Vec<ParityRow> {
    let row = |k: &str| ParityRow {
        metric: k.to_string(),
        native: metric(native, k),
        vllm: metric(vllm, k),
    };
    let mut rows: Vec<ParityRow> = CORE_METRICS
        .iter()
        .map(|k| row(k))
        .filter(|r| r.native.is_some() || r.vllm.is_some())
        .collect();
    if all {
        for k in native.keys().chain(vllm.keys()) {
            if CORE_METRICS.contains(&k.as_str()) || rows.iter().any(|r| &r.metric == k) {
                continue;
            }
            let r = row(k);
            if r.native.is_some() || r.vllm.is_some() {
                rows.push(r);
            }
        }
    }
    rows
}

/// The table as text: `metric  native  vllm  ratio`, rows beyond `tolerance` marked `!`.
pub fn render(rows: &[ParityRow], tolerance: f64) -> String {
    let width = rows
        .iter()
        .map(|r| r.metric.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut out = format!(
        "{:<width$}  {:>14}  {:>14}  {:>8}\n",
        "metric", "native", "vllm", "ratio"
    );
    let num = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.4}"));
    for r in rows {
        let ratio = r.ratio().map_or("n/a".to_string(), |x| format!("{x:.3}"));
        let mark = if r.differs(tolerance) { " !" } else { "" };
        out.push_str(&format!(
            "{:<width$}  {:>14}  {:>14}  {:>8}{mark}\n",
            r.metric,
            num(r.native),
            num(r.vllm),
            ratio
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: serde_json::Value) -> ResultDoc {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn rows_ratios_and_marks() {
        let native =
            doc(json!({"completed": 10, "mean_e2el_ms": 110.0, "failed": 0, "peak_inflight": 4}));
        let vllm = doc(
            json!({"completed": 10, "mean_e2el_ms": 100.0, "failed": 0, "request_rate": "inf"}),
        );
        let rows = parity_rows(&native, &vllm, false);
        let names: Vec<&str> = rows.iter().map(|r| r.metric.as_str()).collect();
        assert_eq!(names, ["completed", "failed", "mean_e2el_ms"]);
        assert_eq!(rows[1].ratio(), Some(1.0), "0 vs 0 is parity");
        assert!((rows[2].ratio().unwrap() - 1.1).abs() < 1e-12);
        assert!(rows[2].differs(0.05) && !rows[2].differs(0.2));
        let all = parity_rows(&native, &vllm, true);
        assert_eq!(all.last().unwrap().metric, "peak_inflight");
        assert!(
            all.last().unwrap().differs(0.5),
            "one-sided metric is a difference"
        );
        let text = render(&rows, 0.05);
        assert!(text.lines().nth(3).unwrap().ends_with("1.100 !"), "{text}");
    }
}
