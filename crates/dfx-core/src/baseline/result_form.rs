//! `baseline` as upstream's runner writes it into every result file
//! (`resolve_baseline_for_sweep`): every hardware bucket of the entry, each metric narrowed
//! to the step (a list's element, a dict's key; a scalar or `null` as written), the
//! bucket's `source` / `regression_tolerance` kept as written; `{}` without a baseline.
//! The numbers are the written bases (no tolerance applied): the thresholds dfx-perf
//! judged against are in `thresholds`.
//!
//! dfx-perf also takes a flat baseline (one bucket for every label) and the
//! `baselines/<LABEL>.json` store: both fill the bucket of the run's own label.

use serde_json::{Map, Value};

use super::Thresholds;
use super::shape::{BaselineSpec, FlatBaseline, MetricShape, value_at};
use crate::step::SweepStep;

/// The key of the run's own bucket: the result's `Hardware` value (`""` when unknown).
pub(crate) fn own_key(hardware: &str) -> &str {
    crate::hardware::result_value(hardware)
}

/// Every bucket of `spec` narrowed to `step`, in file order.
pub(crate) fn buckets(spec: &BaselineSpec, step: &SweepStep, hardware: &str) -> Map<String, Value> {
    match spec {
        BaselineSpec::Flat(flat) => {
            Map::from_iter([(own_key(hardware).to_string(), narrow(flat, step))])
        }
        BaselineSpec::Nested(buckets) => buckets
            .iter()
            .map(|(hw, flat)| (hw.clone(), narrow(flat, step)))
            .collect(),
    }
}

fn narrow(flat: &FlatBaseline, step: &SweepStep) -> Value {
    let mut out = Map::new();
    for (metric, shape) in &flat.metrics {
        let v = match shape {
            MetricShape::Null => None,
            other => value_at(other, step),
        };
        out.insert(metric.clone(), v.map_or(Value::Null, Value::from));
    }
    if let Some(s) = &flat.source {
        out.insert("source".into(), Value::from(s.clone()));
    }
    if let Some(t) = flat.tolerance {
        out.insert("regression_tolerance".into(), Value::from(t));
    }
    Value::Object(out)
}

/// Writes the store's `values` for this trial into the own bucket (replacing the inline
/// numbers of the same metrics, keeping the others).
pub(crate) fn merge_store(
    buckets: &mut Map<String, Value>,
    hardware: &str,
    values: &std::collections::BTreeMap<String, f64>,
) {
    let bucket = buckets
        .entry(own_key(hardware).to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(b) = bucket {
        for (metric, v) in values {
            b.insert(metric.clone(), Value::from(*v));
        }
    }
}

impl BaselineSpec {
    /// The thresholds of one step for a hardware label, with every bucket narrowed to the
    /// step for the result file ([`Thresholds::buckets`]). Call only after `check_steps`
    /// passed (a missing value is then skipped).
    pub fn resolve(&self, step: &SweepStep, hardware: &str) -> Thresholds {
        Thresholds {
            buckets: buckets(self, step, hardware),
            ..self.own_thresholds(step, hardware)
        }
    }
}
