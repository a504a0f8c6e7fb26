//! `trials/<trial>/verdict.json`: the trial's verdict with the thresholds it was judged
//! against. The same [`Verdict`] is `result.json`'s `verdict` section, and the summary
//! entry repeats its lists: one value, written three times for three kinds of reader.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::baseline::Thresholds;
use crate::verdict::Verdict;

/// The whole of `verdict.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerdictFile {
    /// `<test_name>::<suffix>::<step>`.
    #[serde(default)]
    pub trial: String,
    /// Passed, failures, breaches, warnings.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The thresholds it was judged against, with direction and source.
    #[serde(default)]
    pub thresholds: Thresholds,
}

impl VerdictFile {
    /// The file for `trial` with this verdict.
    pub fn new(trial: &str, verdict: Verdict, thresholds: &Thresholds) -> Self {
        VerdictFile {
            trial: trial.to_string(),
            verdict,
            thresholds: thresholds.clone(),
        }
    }
}
