//! Closing a run: `summary.json`, the finish time in `run.json`, the reports. Done exactly
//! once, by the main thread after the last trial or by the signal handler
//! ([`crate::interrupt`]), whichever claims the [`CloseGate`] first; the other waits for
//! it to finish.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dfx_core::fsutil::write_json_atomic;
use dfx_core::plan::Trial;

use crate::progress::Progress;
use crate::results::{RunDir, RunInfo};
use crate::summary::{Interruption, Summary, SummaryEntry};
use crate::wiring;

/// A planned trial as the closing needs it.
#[derive(Debug, Clone)]
pub(crate) struct TrialRef {
    /// Shared with the [`crate::select::PlannedTrial`] it was made from.
    pub trial: Arc<Trial>,
    /// Folder name under `trials/`.
    pub dir_name: String,
}

/// Who closes a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Closer {
    /// The main thread, after libtest ran the last trial.
    Main,
    /// The SIGINT/SIGTERM handler.
    Signal,
}

/// Decides once who closes the run, and lets the other side wait until the closer is done.
#[derive(Debug, Default)]
pub(crate) struct CloseGate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    owner: Option<Closer>,
    done: bool,
}

impl CloseGate {
    fn state(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Claims the close for `who`. `Ok` when `who` is the first (it then closes the run
    /// and calls [`CloseGate::finish`]); `Err(owner)` when `owner` claimed it before.
    pub(crate) fn claim(&self, who: Closer) -> Result<(), Closer> {
        let mut s = self.state();
        match s.owner {
            Some(owner) => Err(owner),
            None => {
                s.owner = Some(who);
                Ok(())
            }
        }
    }

    /// Who claimed the close, if anyone did.
    #[cfg(test)]
    pub(crate) fn owner(&self) -> Option<Closer> {
        self.state().owner
    }

    /// The claimant has done its closing work.
    pub(crate) fn finish(&self) {
        self.state().done = true;
        self.changed.notify_all();
    }

    /// Waits until the claimant has finished, at most `within`; whether it has.
    pub(crate) fn wait_done(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let mut s = self.state();
        while !s.done {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }
}

/// Exit status of a run whose trials ran but whose closing files (`summary.json`,
/// `run.json`, the reports, JUnit, `manifest.json`) could not all be written: a full or
/// read-only results disk must not end a nightly green.
pub(crate) const EXIT_WRITE_FAILED: u8 = crate::exit::SuiteExit::WriteFailed.code();

/// Everything needed to close a run besides its progress.
#[derive(Debug)]
pub(crate) struct Closing {
    pub run: RunDir,
    /// `run.json` as written at the start.
    pub info: RunInfo,
    pub hardware: String,
    pub assert_baseline: bool,
    /// Every planned trial, by plan index.
    pub trials: Vec<TrialRef>,
    /// Plan indices of the selected trials.
    pub selected: Vec<usize>,
    /// `--history`: the run is added there once closed.
    pub history: Option<dfx_history::HistorySpec>,
    /// Who closes the run.
    pub gate: CloseGate,
}

impl Closing {
    /// Writes `summary.json` from `progress` (with `interruption` when the run was
    /// interrupted), updates `run.json` and writes the reports (HTML, JUnit, upstream
    /// files). Every write is attempted; the ones that failed are returned, each naming
    /// its file and cause, so the caller exits with [`EXIT_WRITE_FAILED`]. Returns nothing
    /// when the run was already closed.
    pub(crate) fn close(
        &self,
        progress: &mut Progress,
        interruption: Option<Interruption>,
    ) -> Vec<String> {
        if progress.closed {
            return Vec::new();
        }
        let mut failed = Vec::new();
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
            indexed(&progress.entries),
        );
        summary.interrupted = interruption;
        print_needs_data(&summary);
        if let Some(line) = dfx_core::artefact::summary::failed_by_class(&summary.trials) {
            eprintln!("dfx-perf: {line}");
        }
        let summary_path = self.run.path.join("summary.json");
        if let Err(e) = write_json_atomic(&summary_path, &summary) {
            failed.push(format!("cannot write {}: {e}", summary_path.display()));
        }
        let mut info = self.info.clone();
        info.finished = Some(chrono::Local::now().to_rfc3339());
        info.interrupted = interrupted;
        info.server_versions = crate::fingerprint::server_versions();
        if let Err(e) = self.run.write_run_info(&info) {
            let path = self.run.path.join("run.json");
            failed.push(format!("cannot update {}: {e}", path.display()));
        }
        if let Err(e) = wiring::write_reports(&self.run.path) {
            failed.push(format!("reports not written: {e}"));
        }
        if let Some(spec) = &self.history {
            crate::history::add_run(spec, &self.run.path);
        }
        for f in &failed {
            eprintln!("dfx-perf: error: {f}");
        }
        eprintln!("dfx-perf: results in {}", self.run.path.display());
        failed
    }

    /// Writes `manifest.json`, the last file of the run folder: the closer calls it once,
    /// after [`Closing::close`] and, on the signal path, after the last teardown, just
    /// before the process exits (the main thread writes nothing into the folder once the
    /// interrupt is requested; see [`crate::interrupt`]). A failure is printed and
    /// returned.
    pub(crate) fn seal(&self) -> Option<String> {
        let e = dfx_core::artefact::manifest::write(&self.run.path).err()?;
        let failed = format!("manifest.json not written: {e}");
        eprintln!("dfx-perf: error: {failed}");
        Some(failed)
    }
}

/// The recorded entries in plan order, each with its plan index.
fn indexed(entries: &[Option<SummaryEntry>]) -> Vec<SummaryEntry> {
    entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let mut e = e.clone()?;
            e.plan_index = Some(i);
            Some(e)
        })
        .collect()
}

/// One line naming the trials that ran without a threshold for the hardware: such a run
/// is green on completion alone, which the nightly must not mistake for a pass.
fn print_needs_data(s: &Summary) {
    if s.needs_data == 0 {
        return;
    }
    let names: Vec<&str> = s
        .trials
        .iter()
        .filter(|t| t.needs_data())
        .map(|t| t.name.as_str())
        .collect();
    let shown = names.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    let more = names.len().saturating_sub(5);
    eprintln!(
        "dfx-perf: {} trial(s) had no threshold for {} (needs data; judged on completion only, failed under --require-thresholds): {shown}{}",
        s.needs_data,
        s.hardware.as_deref().unwrap_or(dfx_core::hardware::UNKNOWN),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Both sides race for the close many times: exactly one closes, the other waits
    /// until it is done and never closes itself.
    #[test]
    fn the_close_happens_exactly_once_and_the_loser_waits_for_it() {
        for round in 0..200 {
            let gate = Arc::new(CloseGate::default());
            let closes = Arc::new(AtomicUsize::new(0));
            let side = |who: Closer| {
                let (gate, closes) = (gate.clone(), closes.clone());
                std::thread::spawn(move || match gate.claim(who) {
                    Ok(()) => {
                        // Closing takes a while; the other side must not return before.
                        std::thread::sleep(Duration::from_micros(200));
                        closes.fetch_add(1, Ordering::SeqCst);
                        gate.finish();
                        (who, true)
                    }
                    Err(owner) => {
                        assert_ne!(owner, who);
                        assert!(gate.wait_done(Duration::from_secs(30)), "round {round}");
                        assert_eq!(closes.load(Ordering::SeqCst), 1, "waited for the close");
                        (who, false)
                    }
                })
            };
            let (a, b) = (side(Closer::Main), side(Closer::Signal));
            let (a, b) = (a.join().unwrap(), b.join().unwrap());
            assert_eq!(closes.load(Ordering::SeqCst), 1, "round {round}");
            assert!(a.1 != b.1, "one closer, one waiter: {a:?} {b:?}");
            let winner = if a.1 { a.0 } else { b.0 };
            assert_eq!(gate.owner(), Some(winner));
        }
    }

    #[test]
    fn waiting_for_a_close_that_never_finishes_is_bounded() {
        let gate = CloseGate::default();
        assert_eq!(gate.claim(Closer::Signal), Ok(()));
        assert_eq!(gate.claim(Closer::Main), Err(Closer::Signal));
        assert!(!gate.wait_done(Duration::from_millis(20)));
        gate.finish();
        assert!(gate.wait_done(Duration::ZERO));
    }
}
