//! The registry of the live process groups this process started (servers, bench clients),
//! each with what tears it down completely (its grace, guard and state file), and the
//! SIGINT/SIGTERM handler that empties it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use dfx_core::server::ServerError;

use crate::group::terminate_groups;
use crate::guard::Guard;
use crate::live::{self, LiveRecord};

/// What the registry keeps of a live group.
#[derive(Debug)]
pub(crate) struct Entry {
    /// What the group is (`server`, `vllm bench`, `quality hook`), for messages.
    pub what: String,
    /// SIGTERM→SIGKILL grace.
    pub grace: Duration,
    /// The guard process, if one was started.
    pub guard: Option<Guard>,
    /// The state file and what it records, if one was written.
    pub state: Option<(PathBuf, LiveRecord)>,
}

impl Entry {
    /// The group is gone: the state file goes, the guard is dismissed.
    pub(crate) fn finish(mut self) {
        if let Some((path, _)) = self.state.take() {
            live::remove(&path);
        }
        if let Some(mut guard) = self.guard.take() {
            guard.dismiss();
        }
    }
}

/// The live groups this process started, with what tears each down completely.
fn registry() -> &'static Mutex<BTreeMap<i32, Entry>> {
    static LIVE: OnceLock<Mutex<BTreeMap<i32, Entry>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

/// Records a live group.
pub(crate) fn register(pgid: i32, entry: Entry) {
    let old = registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(pgid, entry);
    if let Some(old) = old {
        old.finish();
    }
}

/// Forgets a group once it has been torn down, and finishes its entry (state file removed,
/// guard dismissed). Whoever removes an entry finishes it, so that happens once.
pub(crate) fn unregister(pgid: i32) {
    let entry = registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&pgid);
    if let Some(entry) = entry {
        entry.finish();
    }
}

/// Runs `f` on the registry entry of `pgid`, if it is registered.
pub(crate) fn with_entry<T>(pgid: i32, f: impl FnOnce(&mut Entry) -> T) -> Option<T> {
    registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_mut(&pgid)
        .map(f)
}

/// Process group ids of the groups (servers, bench clients) this process started and has
/// not stopped yet.
pub fn live_groups() -> Vec<i32> {
    registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .keys()
        .copied()
        .collect()
}

/// `stopping N process group(s)`, followed by the live groups in group id order when
/// there are any: `: server (pgid 1234), vllm bench (pgid 1240)`.
pub fn stopping_message() -> String {
    let names: Vec<String> = registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|(pgid, e)| format!("{} (pgid {pgid})", e.what))
        .collect();
    let mut msg = format!("stopping {} process group(s)", names.len());
    if !names.is_empty() {
        msg.push_str(": ");
        msg.push_str(&names.join(", "));
    }
    msg
}

/// Tears down every live group (the longest registered grace applies to all), then
/// dismisses their guards and removes their state files.
pub fn teardown_all() -> Result<(), ServerError> {
    let (groups, grace): (Vec<i32>, Duration) = {
        let map = registry().lock().unwrap_or_else(|p| p.into_inner());
        let grace = map.values().map(|e| e.grace).max().unwrap_or_default();
        (map.keys().copied().collect(), grace)
    };
    let result = terminate_groups(&groups, grace);
    for g in groups {
        unregister(g);
    }
    result
}

/// Installs a SIGINT/SIGTERM/SIGHUP handler that tears down every live server group and
/// exits with status 130. Idempotent; fails only if another handler was installed through
/// the `ctrlc` crate elsewhere.
pub fn install_signal_handlers() -> Result<(), ServerError> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            ctrlc::set_handler(|| {
                eprintln!("dfx-perf: interrupted; {}", stopping_message());
                if let Err(e) = teardown_all() {
                    eprintln!("dfx-perf: {e}");
                }
                std::process::exit(130);
            })
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(ServerError::SignalHandler)
}
