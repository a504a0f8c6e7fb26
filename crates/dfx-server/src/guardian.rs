//! The guard process itself (the root package's `dfx-perf-guard`, a one-line `main` around
//! [`main_from_args`]; this crate's tests start the same executable).
//!
//! The suite starts one guard per process group it launches (see `crate::guard`), in a
//! session of its own, with the read end of a pipe as its stdin; only the suite holds the
//! write end. The guard blocks on that pipe:
//!
//! - `done` arrives: the suite has torn the group down itself; the guard exits 0;
//! - end of file without `done`: the suite is gone (even `kill -9`, even a kill of the
//!   suite's whole process group, closes the pipe), so the guard stops the group itself:
//!   SIGTERM, the grace period, SIGKILL, a `/proc` sweep until no member is left, each
//!   signal only while the group is still the one it was told about
//!   (`crate::procfs::group_still_of`); then it removes the group's state file and exits.
//!
//! It ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT (set by the suite before the exec), so
//! the signals that stop the suite do not stop the guard before its job is done.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::procfs::{self, ProcessId};

/// The word the suite writes when it has stopped the group itself.
pub const DONE: &[u8] = b"done\n";

/// Exit status for a bad command line.
const EXIT_USAGE: u8 = 2;

/// What one guard watches, as passed on its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orders {
    /// The group's leader (its pid is the group id) and its start time.
    pub leader: ProcessId,
    /// SIGTERM→SIGKILL grace.
    pub grace: Duration,
    /// What the group is, for messages (`server`, `vllm bench`).
    pub what: String,
    /// The group's state file, removed once the group is gone.
    pub state_file: Option<PathBuf>,
    /// A log to append the guard's messages to (the server's log).
    pub log: Option<PathBuf>,
}

impl Orders {
    /// The command-line arguments that [`Orders::parse`] reads back.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--pgid".to_string(),
            self.leader.pid.to_string(),
            "--leader-start".into(),
            self.leader.start_time.to_string(),
            "--grace-ms".into(),
            self.grace.as_millis().to_string(),
            "--what".into(),
            self.what.clone(),
        ];
        for (flag, path) in [("--state-file", &self.state_file), ("--log", &self.log)] {
            if let Some(p) = path {
                args.push(flag.into());
                args.push(p.display().to_string());
            }
        }
        args
    }

    /// Parses the guard's arguments (without the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Orders, OrdersError> {
        let mut it = args.into_iter();
        let (mut pgid, mut start, mut grace) = (None, None, None);
        let (mut what, mut state_file, mut log) = ("process group".to_string(), None, None);
        while let Some(flag) = it.next() {
            let value = it
                .next()
                .ok_or_else(|| OrdersError::NoValue(flag.clone()))?;
            let number = |v: &str| {
                v.parse::<u64>().map_err(|source| OrdersError::NotANumber {
                    flag: flag.clone(),
                    value: v.to_string(),
                    source,
                })
            };
            match flag.as_str() {
                "--pgid" => {
                    pgid = Some(
                        value
                            .parse::<i32>()
                            .ok()
                            .filter(|p| *p > 1)
                            .ok_or_else(|| OrdersError::Pgid(value.clone()))?,
                    )
                }
                "--leader-start" => start = Some(number(&value)?),
                "--grace-ms" => grace = Some(Duration::from_millis(number(&value)?)),
                "--what" => what = value,
                "--state-file" => state_file = Some(PathBuf::from(value)),
                "--log" => log = Some(PathBuf::from(value)),
                other => return Err(OrdersError::Unknown(other.to_string())),
            }
        }
        let missing = OrdersError::Missing;
        Ok(Orders {
            leader: ProcessId {
                pid: pgid.ok_or_else(|| missing("--pgid"))?,
                start_time: start.ok_or_else(|| missing("--leader-start"))?,
            },
            grace: grace.ok_or_else(|| missing("--grace-ms"))?,
            what,
            state_file,
            log,
        })
    }
}

/// What the pipe said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// The suite stopped the group itself.
    Done,
    /// End of file (or a read error) without `done`: the suite is gone.
    Gone,
}

/// Reads `pipe` until `done` or end of file.
pub fn listen(mut pipe: impl Read) -> Word {
    let mut seen = Vec::new();
    let mut buf = [0u8; 64];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => return Word::Gone,
            Ok(n) => {
                seen.extend_from_slice(&buf[..n]);
                if seen.windows(DONE.len()).any(|w| w == DONE) {
                    return Word::Done;
                }
                // Only the last few bytes can still start the word.
                let keep = seen.len().saturating_sub(DONE.len());
                seen.drain(..keep);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Word::Gone,
        }
    }
}

/// A guard command line [`Orders::parse`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrdersError {
    /// A flag is the last argument.
    #[error("{0} needs a value")]
    NoValue(String),
    /// A numeric flag's value does not parse.
    #[error("invalid value `{value}` for {flag}: not a number")]
    NotANumber {
        /// The flag.
        flag: String,
        /// Its value.
        value: String,
        /// The parser's error.
        #[source]
        source: std::num::ParseIntError,
    },
    /// `--pgid` is not a process group id above 1.
    #[error("invalid value `{0}` for --pgid")]
    Pgid(String),
    /// A flag the guard does not know.
    #[error("unknown argument `{0}`")]
    Unknown(String),
    /// A required flag is absent.
    #[error("missing {0}")]
    Missing(&'static str),
}

/// The guard's `main`: `<exe> --pgid N --leader-start TICKS --grace-ms MS [--what TEXT]
/// [--state-file PATH] [--log PATH]`, the pipe on stdin. Exit status 0 when the group is
/// gone, 1 when members survived SIGKILL, 2 for a bad command line.
pub fn main_from_args(args: impl IntoIterator<Item = String>) -> ExitCode {
    let orders = match Orders::parse(args) {
        Ok(o) => o,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "dfx-perf guard: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let suite = nix::unistd::getppid();
    match listen(std::io::stdin().lock()) {
        Word::Done => ExitCode::SUCCESS,
        Word::Gone => stop(&orders, suite.as_raw()),
    }
}

/// Stops the watched group after the suite went away.
fn stop(orders: &Orders, suite: i32) -> ExitCode {
    let pgid = orders.leader.pid;
    if !procfs::group_still_of(&orders.leader) || procfs::group_members(pgid).is_empty() {
        remove_state_file(orders);
        return ExitCode::SUCCESS;
    }
    // A suite that died before this guard ran leaves it to init (or a subreaper): no pid.
    let who = if suite > 1 {
        format!("the suite (pid {suite})")
    } else {
        "the suite".to_string()
    };
    note(
        orders,
        &format!(
            "{who} ended without stopping its {} (process group {pgid}); \
             stopping it: SIGTERM, SIGKILL after {:.1} s",
            orders.what,
            orders.grace.as_secs_f64()
        ),
    );
    match crate::group::terminate_checked(&orders.leader, orders.grace) {
        Ok(()) => {
            note(orders, &format!("process group {pgid} is gone"));
            remove_state_file(orders);
            ExitCode::SUCCESS
        }
        Err(e) => {
            note(orders, &e.to_string());
            ExitCode::FAILURE
        }
    }
}

fn remove_state_file(orders: &Orders) {
    if let Some(path) = &orders.state_file {
        crate::live::remove(path);
    }
}

/// A message on stderr and in the log, ignoring errors (nobody may be reading).
fn note(orders: &Orders, message: &str) {
    let line = format!("dfx-perf guard: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(log) = &orders.log
        && let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn orders() -> Orders {
        Orders {
            leader: ProcessId {
                pid: 4242,
                start_time: 99,
            },
            grace: Duration::from_millis(1500),
            what: "vllm bench".into(),
            state_file: Some("/r/.dfx-live-servers/4242.json".into()),
            log: None,
        }
    }

    #[test]
    fn orders_round_trip_through_the_command_line() {
        let o = orders();
        assert_eq!(Orders::parse(o.to_args()), Ok(o));
    }

    #[test]
    fn bad_command_lines_are_refused_with_the_flag() {
        let parse = |a: &[&str]| Orders::parse(a.iter().map(|s| s.to_string()));
        assert!(parse(&["--pgid", "1", "--leader-start", "1", "--grace-ms", "1"]).is_err());
        assert_eq!(
            parse(&["--pgid", "7", "--grace-ms", "1"]),
            Err(OrdersError::Missing("--leader-start"))
        );
        assert!(
            parse(&["--pgid", "7", "--leader-start", "x"])
                .unwrap_err()
                .to_string()
                .contains("--leader-start")
        );
        assert!(
            parse(&["--pgid"])
                .unwrap_err()
                .to_string()
                .contains("needs a value")
        );
        assert!(
            parse(&["--bogus", "1"])
                .unwrap_err()
                .to_string()
                .contains("--bogus")
        );
    }

    #[test]
    fn only_done_dismisses_the_guard() {
        assert_eq!(listen(&b"done\n"[..]), Word::Done);
        assert_eq!(listen(&b""[..]), Word::Gone);
        assert_eq!(listen(&b"don"[..]), Word::Gone);
        assert_eq!(listen(&b"noise done\n"[..]), Word::Done);
        // Split across reads.
        let chunks = std::io::Read::chain(&b"do"[..], &b"ne\n"[..]);
        assert_eq!(listen(chunks), Word::Done);
    }
}
