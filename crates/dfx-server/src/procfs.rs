//! What Linux `/proc` says about a process: state, process group, start time, command
//! line, and the members of a process group. Everything here reads; nothing signals.

use serde::{Deserialize, Serialize};

/// The fields of `/proc/<pid>/stat` the supervision needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// `R`, `S`, `D`, `Z` (zombie), `X` (dead), …
    pub state: char,
    /// Parent pid.
    pub ppid: i32,
    /// Process group id.
    pub pgrp: i32,
    /// Start time after boot, in clock ticks (field 22).
    pub start_time: u64,
}

impl Stat {
    /// Whether the process is still running (neither a zombie nor dead).
    pub fn is_live(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// Parses the text of a `/proc/<pid>/stat` file. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted after the last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state), so field N is fields[N - 3].
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// `/proc/<pid>/stat` of a process, `None` when there is no such process.
pub fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The command line of a process (`/proc/<pid>/cmdline`, arguments split at NUL, invalid
/// UTF-8 replaced). Empty for zombies and kernel threads; `None` when it cannot be read.
pub fn cmdline(pid: i32) -> Option<Vec<String>> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        bytes
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

/// [`cmdline`] of a process that has just been spawned: right after `execve` returns to
/// the parent, the kernel may not have set up the new program's arguments yet (the
/// command line reads empty), so this polls, for at most `within`, until it is not empty.
pub(crate) fn settled_cmdline(pid: i32, within: std::time::Duration) -> Vec<String> {
    let deadline = std::time::Instant::now() + within;
    loop {
        let args = cmdline(pid).unwrap_or_default();
        let done = !args.is_empty() || !stat(pid).is_some_and(|s| s.is_live());
        if done || std::time::Instant::now() >= deadline {
            return args;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`): start times only compare within
/// one boot.
pub(crate) fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string())
}

/// Live processes (zombies excluded) whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| stat(*pid).is_some_and(|s| s.pgrp == pgid && s.is_live()))
        .collect()
}

/// A process named by its pid and its start time, so that a later process which got the
/// same pid is never mistaken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessId {
    /// The process id.
    pub pid: i32,
    /// `/proc/<pid>/stat` field 22.
    pub start_time: u64,
}

impl ProcessId {
    /// The process with `pid` as it is now; `None` when there is none.
    pub fn of(pid: i32) -> Option<ProcessId> {
        Some(ProcessId {
            pid,
            start_time: stat(pid)?.start_time,
        })
    }

    /// This process.
    pub fn me() -> Option<ProcessId> {
        ProcessId::of(std::process::id() as i32)
    }

    /// `Some(stat)` when `pid` is still this process (running or a zombie not yet reaped).
    pub fn current(&self) -> Option<Stat> {
        stat(self.pid).filter(|s| s.start_time == self.start_time)
    }

    /// Whether this process is still running (not a zombie).
    pub(crate) fn is_running(&self) -> bool {
        self.current().is_some_and(|s| s.is_live())
    }
}

/// Whether process group `leader.pid` is still the group `leader` started, so that
/// signalling it reaches only what it spawned:
///
/// - the pid belongs to the same process (same start time, running or a zombie): yes;
/// - the pid belongs to another process: no (the old group had emptied, so its number
///   could be reused);
/// - no process has that pid, but live members of the group remain: yes, because Linux
///   does not hand out a number that is still some process's group id, so these members
///   are what is left of the leader's group.
pub(crate) fn group_still_of(leader: &ProcessId) -> bool {
    match stat(leader.pid) {
        Some(s) => s.start_time == leader.start_time,
        None => !group_members(leader.pid).is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let text = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 1 0 0 0 3 4 0 0 20 0 \
                    1 0 987654 1234 56 18446744073709551615";
        let s = parse_stat(text).unwrap();
        assert_eq!(
            s,
            Stat {
                state: 'S',
                ppid: 1,
                pgrp: 4242,
                start_time: 987654
            }
        );
        assert!(s.is_live());
        assert_eq!(parse_stat("12 (x) Z 1 2"), None, "too short");
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn this_process_is_found_and_a_wrong_start_time_is_not() {
        let me = ProcessId::me().unwrap();
        assert!(me.is_running());
        // A group of our own whose leader is alive (the test's own group leader may have
        // exited already, e.g. under a CI shell): found while it runs, gone once reaped.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let leader = ProcessId {
            pid,
            start_time: stat(pid).unwrap().start_time,
        };
        assert!(group_still_of(&leader));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!group_still_of(&leader));
        let other = ProcessId {
            start_time: me.start_time + 1,
            ..me
        };
        assert!(!other.is_running());
        assert!(!group_still_of(&other));
        let args = cmdline(me.pid).unwrap();
        assert!(!args.is_empty());
        assert!(boot_id().is_some_and(|b| !b.is_empty()));
    }
}
