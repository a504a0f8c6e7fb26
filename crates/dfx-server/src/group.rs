//! Process groups: teardown (SIGTERM, grace, SIGKILL, sweep of `/proc`) and how a process
//! ended. The registry of the groups this process started is [`crate::registry`].

use std::time::{Duration, Instant};

use dfx_core::server::{ExitStatus, ServerError};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::procfs::{self, ProcessId};

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
