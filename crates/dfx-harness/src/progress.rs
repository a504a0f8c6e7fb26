//! What a run has done so far, shared between the trials (main thread, which holds the
//! session for a whole trial) and the signal handler (which must not wait for a trial to
//! end): the summary entries, the trial in progress, server starts and run notes.
//!
//! Lock order: the session before the progress, never the other way round; the progress
//! lock is only held for short updates, so the handler gets it promptly.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::server_info::ServerInfo;
use crate::summary::SummaryEntry;

/// The shared progress of a run.
pub(crate) type SharedProgress = Arc<Mutex<Progress>>;

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// Summary entries by plan index (`None`: filtered out or not run yet).
    pub entries: Vec<Option<SummaryEntry>>,
    /// The trial running now.
    pub current: Option<Current>,
    /// Servers started so far.
    pub server_starts: usize,
    /// Run-level remarks (from the server pool).
    pub notes: Vec<String>,
    /// The run was interrupted: what the main thread does from now on (failures caused
    /// by the teardown, trials started after the signal) is not recorded.
    pub frozen: bool,
    /// summary.json has been written (normal end or interruption); nobody writes it again.
    pub closed: bool,
    /// The trials the run executes, for `[3/29]` and the time left.
    pub eta: crate::eta::Eta,
}

/// The trial running now.
#[derive(Debug, Clone)]
pub(crate) struct Current {
    /// Plan index.
    pub idx: usize,
    pub started: Instant,
    /// The bench running it, once chosen.
    pub bench: Option<&'static str>,
    /// Its server, once acquired.
    pub server: Option<ServerInfo>,
}

impl Progress {
    /// Progress of a run of `entries.len()` planned trials, some already decided
    /// (statically ignored).
    pub(crate) fn shared(entries: Vec<Option<SummaryEntry>>) -> SharedProgress {
        Arc::new(Mutex::new(Progress {
            entries,
            ..Progress::default()
        }))
    }
}

/// Locks the progress, also after a panic elsewhere (the data stays usable).
pub(crate) fn lock(p: &Mutex<Progress>) -> MutexGuard<'_, Progress> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// The running trial's progress line (`[3/29] name running 1 min 30 s; about … left`), `None`
/// between trials and once the run is frozen or closed.
pub(crate) fn running_line(progress: &Mutex<Progress>) -> Option<String> {
    let p = lock(progress);
    if p.frozen || p.closed {
        return None;
    }
    p.current
        .as_ref()
        .and_then(|c| p.eta.line(c.idx, Some(c.started.elapsed().as_secs_f64())))
}
