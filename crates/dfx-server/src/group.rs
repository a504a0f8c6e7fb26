//! Process groups: teardown (SIGTERM, grace, SIGKILL, sweep of `/proc`), the registry of
//! the live groups this process started (servers, bench clients), and the SIGINT/SIGTERM
//! handler that empties it.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use dfx_core::server::{ExitStatus, ServerError};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::procfs::{self, ProcessId};
use crate::supervise::Entry;

pub use crate::procfs::group_members;

/// How long to wait for the group to vanish after SIGKILL before reporting survivors.
const KILL_WAIT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(10);

fn signal_all(groups: &[i32], sig: Signal) {
    for &g in groups {
        // ESRCH just means the group is already empty.
        let _ = killpg(Pid::from_raw(g), sig);
    }
}

fn wait_empty(groups: &[i32], within: Duration) -> Vec<i32> {
    let deadline = Instant::now() + within;
    loop {
        let left: Vec<i32> = groups
            .iter()
            .copied()
            .filter(|g| !group_members(*g).is_empty())
            .collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(POLL);
    }
}

/// Tears down process groups: SIGTERM to each, up to `grace` for them to exit, SIGKILL to
/// what is left, then waits until no live member remains. Errors name any survivor.
///
/// The caller keeps each group leader unreaped (a zombie) until this returns, so its pid,
/// which is the group id, cannot be reused by an unrelated process while we signal it.
pub(crate) fn terminate_groups(groups: &[i32], grace: Duration) -> Result<(), ServerError> {
    let live: Vec<i32> = groups
        .iter()
        .copied()
        .filter(|g| !group_members(*g).is_empty())
        .collect();
    if live.is_empty() {
        return Ok(());
    }
    signal_all(&live, Signal::SIGTERM);
    let stubborn = wait_empty(&live, grace);
    if stubborn.is_empty() {
        return Ok(());
    }
    tracing::warn!(groups = ?stubborn, "server group still alive {grace:?} after SIGTERM; sending SIGKILL");
    signal_all(&stubborn, Signal::SIGKILL);
    let survivors = wait_empty(&stubborn, KILL_WAIT);
    if survivors.is_empty() {
        return Ok(());
    }
    let detail = survivors.iter().map(|g| (*g, group_members(*g))).collect();
    Err(ServerError::SurvivedKill(detail))
}

/// Tears down the process group `leader` started, signalling it only while it is still
/// that group ([`procfs::group_still_of`]): SIGTERM, up to `grace` for it to empty,
/// SIGKILL, then up to 5 s more. For groups whose leader this process cannot keep
/// unreaped (the guard's and the leftover sweep's case). Errors name any survivor.
pub(crate) fn terminate_checked(leader: &ProcessId, grace: Duration) -> Result<(), ServerError> {
    let pgid = leader.pid;
    for (sig, within) in [(Signal::SIGTERM, grace), (Signal::SIGKILL, KILL_WAIT)] {
        if !procfs::group_still_of(leader) || group_members(pgid).is_empty() {
            return Ok(());
        }
        if sig == Signal::SIGKILL {
            tracing::warn!(
                pgid,
                "process group still alive {grace:?} after SIGTERM; sending SIGKILL"
            );
        }
        signal_all(&[pgid], sig);
        if wait_empty(&[pgid], within).is_empty() {
            return Ok(());
        }
    }
    Err(ServerError::GroupSurvivedKill {
        pgid,
        pids: group_members(pgid),
    })
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

/// How a finished process ended ("exit status N" / "signal N (SIGNAME)").
pub(crate) fn describe_wait(status: &nix::sys::wait::WaitStatus) -> Option<ExitStatus> {
    use nix::sys::wait::WaitStatus;
    match status {
        WaitStatus::Exited(_, code) => Some(ExitStatus::Code(*code)),
        WaitStatus::Signaled(_, sig, _) => Some(ExitStatus::Signal {
            number: *sig as i32,
            name: sig.as_str(),
        }),
        _ => None,
    }
}
