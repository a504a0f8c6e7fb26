//! A run folder as the harness writes it (`<results-dir>/<run-id>/`), read into the
//! artefact types of dfx-core: `run.json` ([`RunInfo`]) and `summary.json`
//! ([`TrialSummary`] per trial).

mod load;

pub use dfx_core::artefact::summary::{Outcome, StepKind};
pub use dfx_core::artefact::{RunInfo, SummaryEntry as TrialSummary};
pub use dfx_core::baseline::Threshold as ThresholdEntry;
pub use dfx_core::verdict::Breach;
pub use load::load_run;

use std::path::PathBuf;

/// One run folder, loaded.
#[derive(Debug, Clone)]
pub struct Run {
    /// The folder itself.
    pub dir: PathBuf,
    /// `run.json` (defaults when the file is missing).
    pub info: RunInfo,
    /// The run id (`summary.json`'s `run_id`, else the folder name).
    pub run_id: String,
    /// The hardware label the run was made on.
    pub hardware: String,
    /// Trials in plan order.
    pub trials: Vec<TrialSummary>,
    /// Notes about how the folder was read (e.g. summary reconstructed from trials/).
    pub notes: Vec<String>,
}

impl Run {
    /// The trial with this name.
    pub fn trial(&self, name: &str) -> Option<&TrialSummary> {
        self.trials.iter().find(|t| t.name == name)
    }

    /// `SIM (speed 10)` for simulated runs with a speed factor, else the hardware label:
    /// two runs are only comparable when this is equal.
    pub fn hardware_identity(&self) -> String {
        hardware_identity(&self.hardware, self.info.sim_speed)
    }
}

/// A run's hardware identity from its hardware label and simulator speed (see
/// [`Run::hardware_identity`]): what the history files its runs under.
pub fn hardware_identity(hardware: &str, sim_speed: Option<f64>) -> String {
    match sim_speed {
        Some(s) => format!("{hardware} (sim speed {})", crate::fmt::num(s)),
        None => hardware.to_string(),
    }
}

/// Why this trial's numbers are not a clean measurement (fallback result, failed
/// requests, incomplete run, failure other than a baseline breach), or `None`.
pub fn unclean_reason(t: &TrialSummary) -> Option<String> {
    if t.outcome == Outcome::Ignored {
        return Some("ignored (not run)".into());
    }
    if t.is_fallback() {
        return Some("fallback result (result_source template: the bench left no result)".into());
    }
    let failed = t.metric("failed").unwrap_or(0.0);
    if failed > 0.0 {
        return Some(format!("{} request(s) failed", crate::fmt::num(failed)));
    }
    if let (Some(done), Some(want)) = (t.metric("completed"), t.num_prompts)
        && done < want as f64
    {
        return Some(format!(
            "only {} of {} requests completed",
            crate::fmt::num(done),
            crate::fmt::num(want as f64)
        ));
    }
    if t.outcome == Outcome::Failed && t.breaches.is_empty() {
        let why = t.failures.first().cloned().unwrap_or_default();
        return Some(format!("failed: {why}"));
    }
    None
}
