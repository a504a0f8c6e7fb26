//! Process groups: membership from `/proc`, teardown (SIGTERM, grace, SIGKILL, sweep), the
//! registry of live server groups, and the SIGINT/SIGTERM handler that empties it.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use dfx_core::server::ServerError;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How long to wait for the group to vanish after SIGKILL before reporting survivors.
const KILL_WAIT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(10);

/// Live processes (zombies excluded) whose process group is `pgid`, from `/proc`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| matches!(proc_stat(*pid), Some((state, pg)) if pg == pgid && state != 'Z' && state != 'X'))
        .collect()
}

/// `(state, pgrp)` of a process from `/proc/<pid>/stat` (the comm field may hold spaces
/// and parentheses, so fields are counted after the last `)`).
fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

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
pub fn terminate_groups(groups: &[i32], grace: Duration) -> Result<(), ServerError> {
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
    let detail: Vec<String> = survivors
        .iter()
        .map(|g| format!("group {g}: pids {:?}", group_members(*g)))
        .collect();
    Err(ServerError::Other(format!(
        "server processes survived SIGKILL ({})",
        detail.join("; ")
    )))
}

fn registry() -> &'static Mutex<BTreeMap<i32, Duration>> {
    static LIVE: OnceLock<Mutex<BTreeMap<i32, Duration>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

/// Records a live server group and its grace period.
pub(crate) fn register(pgid: i32, grace: Duration) {
    registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(pgid, grace);
}

/// Forgets a group once it has been torn down.
pub(crate) fn unregister(pgid: i32) {
    registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&pgid);
}

/// Process group ids of the servers this process started and has not stopped yet.
pub fn live_groups() -> Vec<i32> {
    registry()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .keys()
        .copied()
        .collect()
}

/// Tears down every live server group (longest registered grace applies to all).
pub fn teardown_all() -> Result<(), ServerError> {
    let (groups, grace): (Vec<i32>, Duration) = {
        let map = registry().lock().unwrap_or_else(|p| p.into_inner());
        let grace = map.values().copied().max().unwrap_or_default();
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
                let n = live_groups().len();
                eprintln!("dfx-perf: interrupted; stopping {n} server group(s)");
                if let Err(e) = teardown_all() {
                    eprintln!("dfx-perf: {e}");
                }
                std::process::exit(130);
            })
            .map_err(|e| format!("cannot install the signal handler: {e}"))
        })
        .clone()
        .map_err(ServerError::Other)
}

/// "exit status N" / "signal N (SIGNAME)" for a finished process.
pub fn describe_wait(status: &nix::sys::wait::WaitStatus) -> Option<String> {
    use nix::sys::wait::WaitStatus;
    match status {
        WaitStatus::Exited(_, code) => Some(format!("exit status {code}")),
        WaitStatus::Signaled(_, sig, _) => {
            Some(format!("signal {} ({})", *sig as i32, sig.as_str()))
        }
        _ => None,
    }
}
