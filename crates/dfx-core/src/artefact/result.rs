//! dfx-perf's own sections of `trials/<trial>/result.json`. The rest of the file is the
//! upstream-compatible result of the bench (`vllm bench serve --omni`'s keys, or the
//! native bench's same keys), left as it is for existing dashboards.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::baseline::{Threshold, Thresholds};
use crate::verdict::Verdict;

/// The keys of `result.json` dfx-perf writes beside the bench's metrics.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ResultSections {
    /// `<test_name>::<suffix>::<step>`.
    #[serde(default)]
    pub trial: Option<String>,
    /// The config's test.
    #[serde(default)]
    pub test_name: Option<String>,
    /// The benchmark entry's name.
    #[serde(default)]
    pub name: Option<String>,
    /// The hardware label (`""` when unknown), as upstream writes it.
    #[serde(default, rename = "Hardware")]
    pub hardware: Option<String>,
    /// The bench that ran (`native`, `vllm`, `fake`; `null` when none did).
    #[serde(default)]
    pub bench: Option<String>,
    /// What produced the numbers (`native`, `vllm`, `template`, `fake`, `none`).
    #[serde(default)]
    pub result_source: Option<String>,
    /// Every hardware bucket narrowed to the step, as upstream writes it
    /// (`{"H100": {metric: base}, …}`, no direction, no source); older results hold the
    /// flat `{metric: threshold}` of their own label.
    #[serde(default)]
    pub baseline: Map<String, Value>,
    /// The same thresholds with direction and source. Absent in results written before
    /// dfx-perf 0.1 recorded it; [`ResultSections::thresholds`] then falls back to
    /// `baseline` with the direction table.
    #[serde(
        default,
        rename = "thresholds",
        skip_serializing_if = "Option::is_none"
    )]
    pub threshold_list: Option<Vec<Threshold>>,
    /// The verdict (absent while the trial runs).
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// Statistics of a step run as repeats (`count`, `with_result`, `ci_method`,
    /// `stats.<metric>` as in `summary.json`, `runs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Value>,
    /// A capacity search's evidence (`request_rate`, `bracket`, `criteria`, `probes`,
    /// `cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Value>,
}

impl ResultSections {
    /// Writes the threshold sections of `thresholds` into a result document: `baseline`
    /// (upstream's form) and `thresholds` (with direction and source).
    pub fn insert_thresholds(doc: &mut crate::result::ResultDoc, thresholds: &Thresholds) {
        doc.insert("baseline".into(), thresholds.to_result_value());
        let list = serde_json::to_value(&thresholds.items).unwrap_or(Value::Null);
        doc.insert("thresholds".into(), list);
    }

    /// The thresholds the result was judged against: the recorded list, else the
    /// `baseline` bucket of the result's `Hardware` (or an older result's flat map) with
    /// the direction table (metrics of unknown direction are left out), marked as read
    /// back from the result file.
    pub fn thresholds(&self) -> Vec<Threshold> {
        if let Some(list) = &self.threshold_list {
            return list.clone();
        }
        self.own_bucket()
            .iter()
            .filter_map(|(metric, v)| {
                Some(Threshold {
                    metric: metric.clone(),
                    value: v.as_f64()?,
                    direction: crate::baseline::direction_of(metric)?,
                    source: crate::baseline::ThresholdSource::ResultFile,
                })
            })
            .collect()
    }

    /// The metrics of the result's own label: its bucket of a hardware-nested `baseline`,
    /// the map itself when it is flat (written before buckets), else nothing.
    fn own_bucket(&self) -> Map<String, Value> {
        let hw = self.hardware.as_deref().unwrap_or("");
        if let Some(Value::Object(bucket)) = self.baseline.get(hw) {
            return bucket.clone();
        }
        if self.baseline.values().all(Value::is_object) {
            return Map::new();
        }
        self.baseline.clone()
    }
}
