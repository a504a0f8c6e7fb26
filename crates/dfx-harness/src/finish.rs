//! Closing a run: `summary.json`, the finish time in `run.json`, the reports. Done exactly
//! once, by the main thread after the last trial or by the signal handler
//! ([`crate::interrupt`]), whichever comes first.

use dfx_core::fsutil::write_json_atomic;
use dfx_core::plan::Trial;

use crate::progress::Progress;
use crate::results::{RunDir, RunInfo};
use crate::summary::{Interruption, Summary};
use crate::wiring;

/// A planned trial as the closing needs it.
#[derive(Debug, Clone)]
pub struct TrialRef {
    pub trial: Trial,
    /// Folder name under `trials/`.
    pub dir_name: String,
}

/// Everything needed to close a run besides its progress.
#[derive(Debug, Clone)]
pub struct Closing {
    pub run: RunDir,
    /// `run.json` as written at the start.
    pub info: RunInfo,
    pub hardware: String,
    pub assert_baseline: bool,
    /// Every planned trial, by plan index.
    pub trials: Vec<TrialRef>,
    /// Plan indices of the selected trials.
    pub selected: Vec<usize>,
}

impl Closing {
    /// Writes `summary.json` from `progress` (with `interruption` when the run was
    /// interrupted), updates `run.json` and writes the reports. Problems are printed,
    /// never fatal. Does nothing when the run was already closed.
    pub fn close(&self, progress: &mut Progress, interruption: Option<Interruption>) {
        if progress.closed {
            return;
        }
        progress.closed = true;
        crate::reserve::release();
        let interrupted = interruption.is_some();
        let mut summary = Summary::new(
            &self.run.id,
            &self.hardware,
            self.assert_baseline,
            self.trials.len() - self.selected.len(),
            progress.server_starts,
            progress.notes.clone(),
            progress.entries.iter().flatten().cloned().collect(),
        );
        summary.interrupted = interruption;
        if let Err(e) = write_json_atomic(&self.run.path.join("summary.json"), &summary) {
            eprintln!("dfx-perf: cannot write summary.json: {e}");
        }
        let mut info = self.info.clone();
        info.finished = Some(chrono::Local::now().to_rfc3339());
        info.interrupted = interrupted;
        if let Err(e) = self.run.write_run_info(&info) {
            eprintln!("dfx-perf: cannot update run.json: {e}");
        }
        if let Err(e) = wiring::write_reports(&self.run.path) {
            eprintln!("dfx-perf: reports not written: {e}");
        }
        eprintln!("dfx-perf: results in {}", self.run.path.display());
    }
}
