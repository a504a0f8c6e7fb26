//! The server under test as a supervised child process (`docs/server.md`): command
//! building, process-group supervision, readiness, logs, teardown and attach mode.
//! Implements [`dfx_core::server::ServerLauncher`].
//!
//! Lifecycle of a [`ProcessLauncher`] start: pick a port (free one, or the configured one,
//! refused with [`ServerError::PortInUse`] if it already answers), write `command.txt`
//! (exact command line, added environment with secrets redacted) and the edited deploy copy
//! into the start folder, spawn the server as leader of its own process group with stdout
//! and stderr appended to `server.log`, then poll `GET /health` until 200 while watching the
//! process. Teardown (on [`RunningServer::stop`], on drop, on panic, and on SIGINT/SIGTERM
//! once [`install_signal_handlers`] ran) is SIGTERM to the group, a grace period, SIGKILL to
//! the group, and a sweep of `/proc` until no member is left.
//!
//! When the process that started a group dies without tearing it down (`kill -9`), two
//! mechanisms stop it (`supervise`): a guard process (`guard`, [`guardian`]) that sees
//! its pipe close and tears the group down, and a state file ([`live`]) with which the
//! next run finds and stops what the guard could not.

pub(crate) mod attach;
pub(crate) mod child;
pub mod command;
pub(crate) mod exe;
pub(crate) mod group;
pub(crate) mod guard;
pub mod guardian;
pub(crate) mod launcher;
pub mod live;
pub(crate) mod logtail;
pub(crate) mod managed;
pub(crate) mod owner;
pub mod probe;
pub mod procfs;
pub(crate) mod registry;
pub(crate) mod supervise;
pub(crate) mod supervision_error;

use dfx_core::server::{RunningServer, ServerError};

pub use attach::AttachLauncher;
pub use child::{GroupChild, GroupEnd};
pub use command::{ServerCommand, build as build_command};
pub use group::group_members;
pub use launcher::{LauncherConfig, PORT_RACE_ATTEMPTS, ProcessLauncher, sglang_ready_timeout};
pub use managed::{LOG_TAIL_LINES, ManagedServer};
pub use registry::{install_signal_handlers, live_groups, stopping_message, teardown_all};
pub use supervise::{Supervision, Watch, WatchSpec};

/// `Some(ServerError::DiedDuringTrial)` (status and log tail) when `server` has exited; the
/// harness calls it after a trial and then starts a fresh server for the next one.
pub fn died_during_trial(server: &mut dyn RunningServer) -> Option<ServerError> {
    let status = server.exit_status()?;
    Some(ServerError::DiedDuringTrial {
        status,
        log: server.log_path().unwrap_or_default(),
        log_tail: server.log_tail(LOG_TAIL_LINES),
    })
}
