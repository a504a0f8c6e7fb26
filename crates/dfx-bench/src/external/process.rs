//! Running the bench as a child in its own process group, with its output in `bench.log`,
//! a time limit, and nothing of its group left behind.

use std::fs::File;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use dfx_core::bench::{BenchExit, ProcessEnd};
use dfx_server::{GroupChild, GroupEnd, Supervision};

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
        .stderr(err);
    if let Some(dir) = &cmd.cwd {
        command.current_dir(dir);
    }
    if let Some(s) = &secret {
        command.env(TOKEN_ENV, s.value);
    }
    let child = match GroupChild::spawn(&mut command, supervision, what, GRACE, Some(log_path)) {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("could not start {what} ({}): {e}", cmd.program.display());
            let _ = writeln!(&log, "# dfx-perf: {msg}");
            return Exit::NotStarted(msg);
        }
    };
    let exit = match child.wait(timeout) {
        GroupEnd::Exited(status) => match (status.code(), status.signal()) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(s)) => Exit::Signal(s),
            (None, None) => Exit::Signal(0),
        },
        GroupEnd::TimedOut(limit) => Exit::TimedOut(limit),
        GroupEnd::WaitFailed(e) => Exit::NotStarted(format!("waiting for the bench failed: {e}")),
    };
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
