//! State files of live process groups: `<results-dir>/.dfx-live-servers/<pgid>.json`,
//! written (atomically) when a group starts and removed when it has been torn down. A run
//! that ended without removing one (the suite was killed, and its guard too) leaves it
//! behind, and the next run's [`sweep`] stops what it describes, but only when the process
//! is still provably the one that was started: same boot, same leader start time, same
//! command line, and the run that started it is gone.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dfx_core::fsutil::write_json_atomic;
use serde::{Deserialize, Serialize};

use crate::procfs::{self, ProcessId};
use crate::supervision_error::SupervisionError;

/// The state folder's name inside a results folder.
pub const LIVE_DIR_NAME: &str = ".dfx-live-servers";

/// How long [`LiveRecord::capture`] waits for a just-spawned leader's command line.
const CMDLINE_WAIT: Duration = Duration::from_secs(1);

/// One live group as its state file records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveRecord {
    /// Process group id (= the leader's pid).
    pub pgid: i32,
    /// The leader's start time (`/proc/<pid>/stat` field 22, clock ticks since boot).
    pub leader_start: u64,
    /// The leader's command line as `/proc/<pid>/cmdline` showed it.
    pub cmdline: Vec<String>,
    /// The boot it was started in.
    pub boot_id: Option<String>,
    /// What the group is (`server`, `vllm bench`).
    pub what: String,
    /// SIGTERM→SIGKILL grace, in milliseconds.
    pub grace_ms: u64,
    /// The suite process that started it.
    pub owner: Option<ProcessId>,
}

impl LiveRecord {
    /// The record of the group `leader` leads now, started by this process; `None` when
    /// the leader cannot be found in `/proc`.
    pub fn capture(leader: i32, what: &str, grace: Duration) -> Option<LiveRecord> {
        let id = ProcessId::of(leader)?;
        Some(LiveRecord {
            pgid: leader,
            leader_start: id.start_time,
            cmdline: procfs::settled_cmdline(leader, CMDLINE_WAIT),
            boot_id: procfs::boot_id(),
            what: what.to_string(),
            grace_ms: u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
            owner: ProcessId::me(),
        })
    }

    /// The leader as a [`ProcessId`].
    pub fn leader(&self) -> ProcessId {
        ProcessId {
            pid: self.pgid,
            start_time: self.leader_start,
        }
    }

    /// The state file's path in `dir`.
    pub(crate) fn path_in(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.json", self.pgid))
    }
}

/// Writes `record` into `dir` (created if needed); the file's path.
pub fn write(dir: &Path, record: &LiveRecord) -> Result<PathBuf, SupervisionError> {
    let path = record.path_in(dir);
    let mut result = write_json_atomic(&path, record);
    if matches!(&result, Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
        // Another run removed the emptied folder between our create and write.
        result = write_json_atomic(&path, record);
    }
    result.map_err(|source| SupervisionError::StateFile {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Removes a state file, and its folder once it is empty.
pub fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
    if let Some(dir) = path.parent() {
        // Fails while other runs' files are in it, which is what we want.
        let _ = std::fs::remove_dir(dir);
    }
}

/// What [`sweep`] found in one state file. Its `Display` is the user-facing line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A group left behind by an earlier run, now stopped.
    Stopped(LiveRecord),
    /// A group left behind that could not be stopped completely.
    Failed(LiveRecord, String),
    /// The recorded process cannot be proven to be the one that was started: left alone.
    LeftAlone(LiveRecord, String),
    /// Nothing is left of the group; the file was stale.
    Gone(LiveRecord),
    /// The run that started the group is still running: not a leftover.
    StillOwned(LiveRecord),
    /// The file could not be read or parsed; removed.
    Unreadable(PathBuf, String),
}

impl Found {
    /// Whether the user should hear about it (stale files and live runs are quiet).
    pub fn worth_telling(&self) -> bool {
        !matches!(self, Found::Gone(_) | Found::StillOwned(_))
    }
}

fn command_text(r: &LiveRecord) -> String {
    if r.cmdline.is_empty() {
        "(no command line recorded)".into()
    } else {
        r.cmdline.join(" ")
    }
}

fn started_by(r: &LiveRecord) -> String {
    r.owner
        .map_or_else(String::new, |o| format!(", started by pid {}", o.pid))
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Stopped(r) => write!(
                f,
                "stopped a {} left running by an earlier run (process group {}{}): {}",
                r.what,
                r.pgid,
                started_by(r),
                command_text(r)
            ),
            Found::Failed(r, e) => write!(
                f,
                "could not stop the {} left running by an earlier run (process group {}): {e}",
                r.what, r.pgid
            ),
            Found::LeftAlone(r, why) => write!(
                f,
                "left alone process group {} from an earlier run's state file ({}): {why}",
                r.pgid, r.what
            ),
            Found::Gone(r) => write!(f, "stale state file of process group {}", r.pgid),
            Found::StillOwned(r) => write!(
                f,
                "process group {} belongs to a run still in progress{}",
                r.pgid,
                started_by(r)
            ),
            Found::Unreadable(p, e) => {
                write!(f, "removed unreadable state file {}: {e}", p.display())
            }
        }
    }
}

/// Checks every state file in `dir` (a missing folder holds none): stops the groups that
/// earlier runs left behind and are provably theirs, removes every file except those of
/// runs still in progress. Bounded: at most each group's grace plus 5 s.
pub fn sweep(dir: &Path) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let found: Vec<Found> = files.iter().map(|p| check(p)).collect();
    for (path, f) in files.iter().zip(&found) {
        if !matches!(f, Found::StillOwned(_)) {
            remove(path);
        }
    }
    found
}

fn check(path: &Path) -> Found {
    let record: LiveRecord = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(r) => r,
        Err(e) => return Found::Unreadable(path.to_path_buf(), e),
    };
    if let (Some(then), Some(now)) = (&record.boot_id, procfs::boot_id())
        && *then != now
    {
        return Found::Gone(record);
    }
    let me = std::process::id() as i32;
    if record.owner.is_some_and(|o| o.pid != me && o.is_running()) {
        return Found::StillOwned(record);
    }
    match leader_matches(&record) {
        Match::Yes => {
            let grace = Duration::from_millis(record.grace_ms);
            match crate::group::terminate_checked(&record.leader(), grace) {
                Ok(()) => Found::Stopped(record),
                Err(e) => Found::Failed(record, e.to_string()),
            }
        }
        Match::Gone => Found::Gone(record),
        Match::No(why) => Found::LeftAlone(record, why),
    }
}

enum Match {
    Yes,
    Gone,
    No(String),
}

/// Whether the recorded leader is still that process: same start time, and the same
/// command line (a zombie, whose command line is empty, is proven by its start time).
fn leader_matches(r: &LiveRecord) -> Match {
    let pid = r.pgid;
    let Some(stat) = procfs::stat(pid) else {
        let members = procfs::group_members(pid);
        if members.is_empty() {
            return Match::Gone;
        }
        return Match::No(format!(
            "its leader (pid {pid}) is gone, so the remaining members {members:?} cannot be \
             proven to be its own"
        ));
    };
    if stat.start_time != r.leader_start {
        return Match::No(format!(
            "pid {pid} is now another process (start time {} instead of {})",
            stat.start_time, r.leader_start
        ));
    }
    let now = procfs::cmdline(pid).unwrap_or_default();
    if now == r.cmdline || (!stat.is_live() && now.is_empty()) {
        if procfs::group_members(pid).is_empty() {
            return Match::Gone;
        }
        return Match::Yes;
    }
    Match::No(format!(
        "pid {pid} now runs `{}`, not the recorded command",
        now.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_of_me() -> LiveRecord {
        LiveRecord::capture(std::process::id() as i32, "server", Duration::from_secs(1)).unwrap()
    }

    #[test]
    fn a_record_round_trips_and_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let r = record_of_me();
        assert!(!r.cmdline.is_empty());
        let path = write(&dir.path().join(LIVE_DIR_NAME), &r).unwrap();
        assert_eq!(path.file_name().unwrap(), &*format!("{}.json", r.pgid));
        let back: LiveRecord =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back, r);
        remove(&path);
        assert!(!path.exists());
        assert!(
            !dir.path().join(LIVE_DIR_NAME).exists(),
            "emptied folder removed"
        );
    }

    /// `sleep 30` leading a group of its own.
    fn sleeper() -> std::process::Child {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap()
    }

    #[test]
    fn the_sweep_stops_a_provable_leftover_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let me = record_of_me();
        // A record of a live run (its owner, this test's parent, runs): kept, untouched.
        let mut owned = me.clone();
        owned.pgid = i32::MAX - 11;
        owned.owner = ProcessId::of(nix::unistd::getppid().as_raw());
        // The pid is ours but the start time is not: left alone.
        let mut other = me.clone();
        other.leader_start += 1;
        other.owner = None;
        // A leftover whose command line differs from what runs now: left alone.
        let mut retitled_child = sleeper();
        let mut retitled =
            LiveRecord::capture(retitled_child.id() as i32, "server", Duration::ZERO).unwrap();
        retitled.cmdline = vec!["something-else".into()];
        retitled.owner = None;
        // A provable leftover: stopped.
        let mut leftover_child = sleeper();
        let mut leftover =
            LiveRecord::capture(leftover_child.id() as i32, "server", Duration::from_secs(5))
                .unwrap();
        assert_eq!(leftover.cmdline, ["sleep", "30"]);
        leftover.owner = None;
        // Before a reboot: stale.
        let mut old_boot = me.clone();
        old_boot.pgid = i32::MAX - 12;
        old_boot.boot_id = Some("another-boot".into());
        for r in [&owned, &other, &retitled, &leftover, &old_boot] {
            write(dir.path(), r).unwrap();
        }
        std::fs::write(dir.path().join("junk.json"), "{").unwrap();

        let found = sweep(dir.path());
        assert_eq!(found.len(), 6, "{found:?}");
        assert!(found.contains(&Found::StillOwned(owned.clone())));
        assert!(found.contains(&Found::Gone(old_boot)));
        assert!(found.contains(&Found::Stopped(leftover.clone())));
        let left_alone = |rec: &LiveRecord, needle: &str| {
            found
                .iter()
                .any(|f| matches!(f, Found::LeftAlone(r, why) if r == rec && why.contains(needle)))
        };
        assert!(left_alone(&other, "another process"), "{found:?}");
        assert!(left_alone(&retitled, "sleep 30"), "{found:?}");
        assert!(found.iter().any(|f| matches!(f, Found::Unreadable(..))));
        let stopped = found
            .iter()
            .find(|f| matches!(f, Found::Stopped(_)))
            .unwrap();
        assert!(stopped.to_string().contains("sleep 30"), "{stopped}");

        // Only the live run's file stays; the leftover is gone, the other sleeper is not.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "only the live run's file stays");
        assert!(owned.path_in(dir.path()).is_file());
        assert!(
            leftover_child.try_wait().unwrap().is_some(),
            "leftover stopped"
        );
        assert!(
            retitled_child.try_wait().unwrap().is_none(),
            "retitled left alone"
        );
        retitled_child.kill().unwrap();
        retitled_child.wait().unwrap();
    }
}
