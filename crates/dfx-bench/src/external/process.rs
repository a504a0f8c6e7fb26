//! Running the bench as a child in its own process group, with its output in `bench.log`,
//! a time limit, and nothing of its group left behind.

use std::fs::File;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dfx_core::bench::{BenchExit, ProcessEnd};
use dfx_server::{Supervision, Watch, WatchSpec};
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;

use super::command::{BenchCommand, TOKEN_ENV};

/// How the child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Exit {
    Code(i32),
    Signal(i32),
    /// Killed by us after the time limit.
    TimedOut(Duration),
    /// Could not be started, or its log could not be created.
    NotStarted(String),
}

impl Exit {
    /// How the run of `program` (`vllm bench`) ended when not with status 0.
    pub(super) fn failure(&self, program: &'static str) -> Option<BenchExit> {
        let end = match self {
            Exit::Code(0) => return None,
            Exit::Code(n) => ProcessEnd::Code(*n),
            Exit::Signal(s) => ProcessEnd::Signal(*s),
            Exit::TimedOut(d) => ProcessEnd::TimedOut(*d),
            Exit::NotStarted(why) => return Some(BenchExit::NotStarted(why.clone())),
        };
        Some(BenchExit::Process { program, end })
    }
}

/// The token to hand to the child: the name of the variable it came from (for the log)
/// and its value (never written anywhere).
pub(super) struct Secret<'a> {
    pub from_var: &'a str,
    pub value: &'a str,
}

/// Grace period between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// Runs `cmd` with stdout and stderr appended to `log_path` (after a header with the
/// command line and the environment it sets, the token redacted) and waits for it, at
/// most `timeout`. The child leads its own process group; when it ends (or is killed),
/// any member of that group still running is killed before the leader is reaped, so its
/// id cannot have been reused. The group is supervised like a server's
/// ([`Supervision::watch`]): the suite's SIGINT/SIGTERM handler tears it down, and its
/// guard does if the suite dies.
pub(super) fn run_logged(
    cmd: &BenchCommand,
    secret: Option<Secret<'_>>,
    log_path: &Path,
    timeout: Option<Duration>,
    supervision: &Supervision,
) -> Exit {
    run_logged_as("vllm bench", cmd, secret, log_path, timeout, supervision)
}

/// [`run_logged`] for a child named `what` in messages and state files (`vllm bench`,
/// `diffusion benchmark`), started in `cmd.cwd` when set.
pub(super) fn run_logged_as(
    what: &'static str,
    cmd: &BenchCommand,
    secret: Option<Secret<'_>>,
    log_path: &Path,
    timeout: Option<Duration>,
    supervision: &Supervision,
) -> Exit {
    let log = match open_log(cmd, secret.as_ref(), log_path) {
        Ok(log) => log,
        Err(e) => return Exit::NotStarted(format!("cannot write {}: {e}", log_path.display())),
    };
    let (out, err) = match (log.try_clone(), log.try_clone()) {
        (Ok(o), Ok(e)) => (o, e),
        (Err(e), _) | (_, Err(e)) => {
            return Exit::NotStarted(format!("cannot write {}: {e}", log_path.display()));
        }
    };
    let mut command = Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .envs(&cmd.env)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if let Some(dir) = &cmd.cwd {
        command.current_dir(dir);
    }
    if let Some(s) = &secret {
        command.env(TOKEN_ENV, s.value);
    }
    let child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("could not start {what} ({}): {e}", cmd.program.display());
            let _ = writeln!(&log, "# dfx-perf: {msg}");
            return Exit::NotStarted(msg);
        }
    };
    let watch = supervision.watch(WatchSpec {
        leader: child.id() as i32,
        what,
        grace: GRACE,
        log: Some(log_path),
    });
    let mut guard = GroupGuard {
        child,
        reaped: false,
        watch,
    };
    let exit = guard.wait(timeout);
    if let Exit::TimedOut(d) = &exit {
        let _ = writeln!(
            &log,
            "# dfx-perf: killed after the {} s time limit",
            d.as_secs()
        );
    }
    exit
}

fn open_log(cmd: &BenchCommand, secret: Option<&Secret<'_>>, path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = File::options().create(true).append(true).open(path)?;
    let line: Vec<String> = std::iter::once(cmd.program.to_string_lossy().into_owned())
        .chain(cmd.args.iter().cloned())
        .map(|a| shell_quote(&a))
        .collect();
    writeln!(f, "# dfx-perf: {}", line.join(" "))?;
    if let Some(dir) = &cmd.cwd {
        writeln!(f, "# dfx-perf: cwd {}", shell_quote(&dir.to_string_lossy()))?;
    }
    for (k, v) in &cmd.env {
        writeln!(f, "# dfx-perf: env {k}={}", shell_quote(v))?;
    }
    if let Some(s) = secret {
        writeln!(
            f,
            "# dfx-perf: env {TOKEN_ENV}=<value of ${}, not logged>",
            s.from_var
        )?;
    }
    f.flush()?;
    Ok(f)
}

/// Quotes an argument for display so the logged line can be pasted into a shell.
pub(super) fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Owns the running child; dropping it (also on panic) kills the whole group and reaps.
struct GroupGuard {
    child: Child,
    reaped: bool,
    /// Released once the leader is reaped.
    watch: Watch,
}

impl GroupGuard {
    fn pgid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    /// Waits for the leader without reaping it, up to `timeout`; then clears the group and
    /// reaps.
    fn wait(&mut self, timeout: Option<Duration>) -> Exit {
        let deadline = timeout.map(|t| (Instant::now() + t, t));
        let mut pause = Duration::from_millis(5);
        loop {
            if self.exited_unreaped() {
                return self.finish(None);
            }
            if let Some((at, limit)) = deadline
                && Instant::now() >= at
            {
                self.terminate();
                return self.finish(Some(limit));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// Whether the leader has exited (it stays a zombie, so its pid keeps the group id).
    fn exited_unreaped(&self) -> bool {
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        match waitid(Id::Pid(self.pgid()), flags) {
            Ok(WaitStatus::StillAlive) => false,
            Ok(_) => true,
            // ECHILD: already reaped (cannot happen here); treat as ended.
            Err(_) => true,
        }
    }

    /// SIGTERM to the group, SIGKILL after the grace period if the leader is still there.
    fn terminate(&mut self) {
        let _ = killpg(self.pgid(), Signal::SIGTERM);
        let until = Instant::now() + GRACE;
        while Instant::now() < until {
            if self.exited_unreaped() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = killpg(self.pgid(), Signal::SIGKILL);
    }

    /// Kills what is left of the group, then reaps the leader.
    fn finish(&mut self, timed_out: Option<Duration>) -> Exit {
        let _ = killpg(self.pgid(), Signal::SIGKILL);
        let status = self.child.wait();
        self.reaped = true;
        self.watch.release();
        let status = match status {
            Ok(s) => s,
            Err(e) => return Exit::NotStarted(format!("waiting for the bench failed: {e}")),
        };
        if let Some(limit) = timed_out {
            return Exit::TimedOut(limit);
        }
        match (status.code(), status.signal()) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(s)) => Exit::Signal(s),
            (None, None) => Exit::Signal(0),
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = killpg(self.pgid(), Signal::SIGKILL);
            let _ = self.child.wait();
            self.watch.release();
        }
    }
}
