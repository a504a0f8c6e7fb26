//! A launched server: its process group, readiness wait, exit detection and teardown.

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use dfx_core::server::{ExitStatus, RunningServer, ServerError};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};

use crate::command::HOST;
use crate::group::{self, describe_wait};
use crate::logtail;
use crate::probe::{Probe, http_get};
use crate::supervise::{Supervision, Watch, WatchSpec};

/// Lines of server log carried by every failure message.
pub const LOG_TAIL_LINES: usize = 40;
/// Upper bound of one readiness probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Pause before a listener that looked foreign is looked at again.
const OWNER_RECHECK: Duration = Duration::from_millis(100);

/// A server process started by [`crate::ProcessLauncher`], leader of its own process group.
/// Dropping it (also while unwinding from a panic) tears the group down.
#[derive(Debug)]
pub struct ManagedServer {
    child: Child,
    pgid: i32,
    port: u16,
    log: PathBuf,
    grace: Duration,
    exit: Option<ExitStatus>,
    stopped: bool,
    watch: Watch,
}

impl ManagedServer {
    /// Takes ownership of a freshly spawned group leader and supervises its group
    /// (registry, guard, state file: [`Supervision::watch`]).
    pub(crate) fn adopt(
        child: Child,
        port: u16,
        log: PathBuf,
        grace: Duration,
        supervision: &Supervision,
    ) -> Self {
        let pgid = child.id() as i32;
        let watch = supervision.watch(WatchSpec {
            leader: pgid,
            what: "server",
            grace,
            log: Some(&log),
        });
        ManagedServer {
            child,
            pgid,
            port,
            log,
            grace,
            exit: None,
            stopped: false,
            watch,
        }
    }

    /// The process group id (= the server's pid).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The pid of the guard watching the group, if one runs.
    pub fn guard_pid(&self) -> Option<u32> {
        self.watch.guard_pid()
    }

    /// The exit status without reaping the leader (`WNOWAIT`): while it stays a zombie its
    /// pid, which is the group id, cannot be reused, so signalling the group stays safe.
    fn peek_exit(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            let pid = nix::unistd::Pid::from_raw(self.pgid);
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
            match waitid(Id::Pid(pid), flags) {
                Ok(WaitStatus::StillAlive) | Err(_) => {}
                Ok(status) => self.exit = describe_wait(&status),
            }
        }
        self.exit
    }

    /// SIGTERM to the group, grace, SIGKILL, sweep; then reaps the leader. Idempotent.
    fn teardown(&mut self) -> Result<(), ServerError> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let result = group::terminate_groups(&[self.pgid], self.grace);
        // A leader that moved itself out of the group is not covered by killpg.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        // Reap the leader; it was kept as a zombie until the group was empty.
        let _ = self.child.wait();
        self.watch.release();
        result
    }

    /// Polls `GET /health` until it answers 200 (404: no health route, the accepted
    /// connection counts) while watching the process; every `progress` it says on stderr
    /// how long it has waited and the log's last line. On failure the group is torn down
    /// and the error carries the status and the log tail.
    pub(crate) fn wait_ready(
        &mut self,
        timeout: Duration,
        (poll, progress): (Duration, Duration),
    ) -> Result<(), ServerError> {
        let start = Instant::now();
        let deadline = start + timeout;
        let mut report = start + progress;
        loop {
            if Instant::now() >= report {
                report += progress;
                self.say_waiting(start.elapsed(), timeout);
            }
            if let Some(status) = self.peek_exit() {
                self.teardown_quietly();
                return Err(ServerError::ExitedBeforeReady {
                    status,
                    log: self.log.clone(),
                    log_tail: self.log_tail(LOG_TAIL_LINES),
                });
            }
            let now = Instant::now();
            let remaining = deadline.saturating_duration_since(now);
            let probe_timeout = PROBE_TIMEOUT.min(remaining.max(Duration::from_millis(50)));
            if let Probe::Status(code @ (200 | 404)) =
                http_get(HOST, self.port, "/health", probe_timeout)
                && self.listener_is_ours()?
            {
                self.watch.refresh();
                if code == 404 {
                    tracing::info!(
                        port = self.port,
                        "server has no /health route; the accepted TCP connection counts as ready"
                    );
                }
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.teardown_quietly();
                return Err(ServerError::NotReady {
                    waited: start.elapsed(),
                    log: self.log.clone(),
                    log_tail: self.log_tail(LOG_TAIL_LINES),
                });
            }
            std::thread::sleep(poll.min(deadline.saturating_duration_since(Instant::now())));
        }
    }

    /// One line on stderr (terminal or not) about the wait for readiness.
    fn say_waiting(&self, waited: Duration, timeout: Duration) {
        let tail = self.log_tail(1);
        let last = tail.trim();
        let last = if last.is_empty() { "(empty)" } else { last };
        let last: String = last.chars().take(200).collect();
        eprintln!(
            "dfx-perf: waiting for the server on port {} to be ready: {:.0} s of {:.0} s; \
             last log line: {last}",
            self.port,
            waited.as_secs_f64(),
            timeout.as_secs_f64()
        );
    }

    /// Whether the listener that answered belongs to our group. A stranger (it bound the
    /// port between our port check and the server's bind; our server then fails to bind) is
    /// refused with [`ServerError::PortInUse`]. One "not ours" is not enough: a server that
    /// exits while its file descriptors are read looks the same for an instant, so the
    /// answer is taken again after a pause. `Ok(false)`: not ready yet (the loop then
    /// reports an exit, or probes again).
    fn listener_is_ours(&mut self) -> Result<bool, ServerError> {
        if crate::owner::group_owns_listener(self.pgid, self.port) != Some(false) {
            return Ok(true);
        }
        std::thread::sleep(OWNER_RECHECK);
        if self.peek_exit().is_some() {
            return Ok(false);
        }
        match crate::owner::group_owns_listener(self.pgid, self.port) {
            Some(false) => {
                self.teardown_quietly();
                Err(ServerError::PortInUse {
                    host: HOST.into(),
                    port: self.port,
                })
            }
            Some(true) => Ok(true),
            None => Ok(false),
        }
    }

    fn teardown_quietly(&mut self) {
        if let Err(e) = self.teardown() {
            tracing::error!(pgid = self.pgid, "{e}");
            eprintln!("dfx-perf: {e}");
        }
    }
}

impl RunningServer for ManagedServer {
    fn base_url(&self) -> String {
        format!("http://{HOST}:{}", self.port)
    }

    fn host(&self) -> String {
        HOST.into()
    }

    fn port(&self) -> u16 {
        self.port
    }

    fn exit_status(&mut self) -> Option<ExitStatus> {
        self.peek_exit()
    }

    fn log_tail(&self, lines: usize) -> String {
        logtail::tail(&self.log, lines)
    }

    fn log_path(&self) -> Option<PathBuf> {
        Some(self.log.clone())
    }

    fn process_group(&self) -> Option<u32> {
        u32::try_from(self.pgid).ok()
    }

    fn stop(mut self: Box<Self>) -> Result<(), ServerError> {
        self.teardown()
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        self.teardown_quietly();
    }
}
