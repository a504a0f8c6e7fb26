//! Baselines: the shapes a perf-config may use (null, scalar, list, dict,
//! hardware-nested), resolution into per-trial [`Thresholds`] at load time, and the
//! `baselines/<hardware>.json` store. Metric directions come from the registry
//! ([`crate::metrics`]), re-exported here.

pub(crate) mod result_form;
pub(crate) mod shape;
pub(crate) mod store;

pub use crate::metrics::{Direction, direction_of};
pub use shape::{BaselineSpec, FlatBaseline, MetricShape, looks_nested};
pub use store::{Store, load_store, parse_store, store_path};

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a resolved threshold came from.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum ThresholdSource {
    /// The entry's inline `baseline` in the config file.
    Inline,
    /// `baselines/<hardware>.json`, keyed by trial name.
    Store {
        /// The store file; empty when read back from a hand-made run folder's bare `store`.
        file: PathBuf,
    },
    /// Read back from a `result.json`'s `baseline` section (a run folder without
    /// `verdict.json` or `summary.json`): the origin is not known.
    ResultFile,
}

impl ThresholdSource {
    /// `inline`, `store` or `result.json`: where the threshold came from, in one word.
    pub fn label(&self) -> &'static str {
        match self {
            ThresholdSource::Inline => "inline",
            ThresholdSource::Store { .. } => "store",
            ThresholdSource::ResultFile => "result.json",
        }
    }
}

/// Reads the tagged form dfx-perf writes (`{"from": "store", "file": …}`) and, for run
/// folders made by hand, the bare words `inline`, `store` and `result_file`.
impl<'de> Deserialize<'de> for ThresholdSource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(tag = "from", rename_all = "snake_case")]
        enum Tagged {
            Inline,
            Store {
                #[serde(default)]
                file: PathBuf,
            },
            ResultFile,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Tagged(Tagged),
            Word(String),
        }
        match Repr::deserialize(d)? {
            Repr::Tagged(Tagged::Inline) => Ok(ThresholdSource::Inline),
            Repr::Tagged(Tagged::Store { file }) => Ok(ThresholdSource::Store { file }),
            Repr::Tagged(Tagged::ResultFile) => Ok(ThresholdSource::ResultFile),
            Repr::Word(w) => match w.as_str() {
                "inline" => Ok(ThresholdSource::Inline),
                "store" => Ok(ThresholdSource::Store {
                    file: PathBuf::new(),
                }),
                "result_file" | "result.json" => Ok(ThresholdSource::ResultFile),
                other => Err(serde::de::Error::custom(format!(
                    "unknown threshold source {other:?} (accepted: inline, store, result_file)"
                ))),
            },
        }
    }
}

/// One metric's threshold for one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Threshold {
    /// Result key, e.g. `median_audio_ttfp_ms`.
    pub metric: String,
    /// The threshold in the metric's unit (after any `regression_tolerance`).
    pub value: f64,
    /// Whether it is a ceiling (lower is better) or a floor (higher is better).
    pub direction: Direction,
    /// Where the threshold came from.
    pub source: ThresholdSource,
}

/// The thresholds of one trial, resolved for the run's hardware label.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Thresholds {
    /// Metrics with a threshold, in the order the config lists them.
    pub items: Vec<Threshold>,
    /// Metrics whose baseline is `null` (no threshold; upstream used 100000).
    pub skipped: Vec<String>,
    /// Why there are no thresholds although the entry has a baseline (e.g. a
    /// hardware-nested baseline without a bucket for this hardware label).
    pub note: Option<String>,
    /// `baseline` as upstream writes it into the result: every hardware bucket narrowed to
    /// the step (`{"H100": {metric: value}, "A3": {…}}`, `{}` without one); the written
    /// bases, not the thresholds. Not part of `verdict.json` / `summary.json`.
    #[serde(skip)]
    #[schemars(skip)]
    pub buckets: serde_json::Map<String, serde_json::Value>,
}

impl Thresholds {
    /// `baseline` as upstream writes it into each result: [`Thresholds::buckets`].
    pub(crate) fn to_result_value(&self) -> serde_json::Value {
        serde_json::Value::Object(self.buckets.clone())
    }
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod shape_tests;
