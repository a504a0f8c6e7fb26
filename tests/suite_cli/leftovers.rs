//! No server left behind, even when the suite cannot tear its servers down itself:
//!
//! - the SIGKILL drill: the suite runs against `dfx-fake-server` ignoring SIGTERM with a
//!   grandchild that ignores it too, and is killed with SIGKILL mid-trial (its pid alone,
//!   then its whole process group, as CI does): the guard stops the group within the grace
//!   period (plus a margin);
//! - the leftover drill: a server group that a crashed run left behind (started here,
//!   with the state file such a run writes) is stopped by the next run, and a process whose
//!   start time does not match its state file is left alone.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dfx_server::live::{self, LIVE_DIR_NAME, LiveRecord};
use dfx_server::procfs::{self, ProcessId};
use libtest_mimic::Failed;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::interrupt::{PATIENCE, Suite, check_plain, read_json, wait_for_trial};
use crate::support::{Run, check, fake_server_bin, fixture, hermetic, perf_bin, root};

/// The servers' SIGTERM→SIGKILL grace in the drill (`DFX_SERVER_GRACE_MS`).
const GRACE: Duration = Duration::from_millis(1000);
/// Allowed on top of the grace on a busy machine (a correctness bound, not a timing).
const MARGIN: Duration = Duration::from_secs(15);

/// Live processes (other than this one) whose command line or open files name `dir`:
/// a server logging into it, a guard holding a state file path in it.
pub fn processes_touching(dir: &Path) -> Vec<(i32, Vec<String>)> {
    let needle = dir.to_string_lossy().into_owned();
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me && procfs::stat(pid).is_some_and(|s| s.is_live()))
        .filter_map(|pid| {
            let args = procfs::cmdline(pid).unwrap_or_default();
            let in_args = args.iter().any(|a| a.contains(&needle));
            let in_fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .any(|t| t.to_string_lossy().contains(&needle));
            (in_args || in_fds).then_some((pid, args))
        })
        .collect()
}

/// Waits (bounded) until `done()`; how long it took.
fn wait_until(within: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if done() {
            return Some(start.elapsed());
        }
        if start.elapsed() > within {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The perf binary, hermetic, writing into `results`, output piped.
fn perf_cmd(results: &Path, args: &[&str]) -> Result<Command, Failed> {
    let mut cmd = Command::new(perf_bin()?);
    cmd.current_dir(root())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    hermetic(&mut cmd, &fixture("tts_small.json"), results);
    Ok(cmd)
}

pub fn sigkill_mid_trial_leaves_no_server_behind() -> Result<(), Failed> {
    for whole_group in [false, true] {
        let took = sigkill_drill(whole_group)?;
        eprintln!(
            "SIGKILL drill ({}): server group gone {took:?} after the kill (grace {GRACE:?})",
            if whole_group {
                "the suite's whole process group"
            } else {
                "the suite's pid"
            }
        );
    }
    Ok(())
}

fn sigkill_drill(whole_group: bool) -> Result<Duration, Failed> {
    let fake = fake_server_bin()?.display().to_string();
    let results = tempfile::tempdir().map_err(|e| e.to_string())?;
    let grace_ms = GRACE.as_millis().to_string();
    let mut cmd = perf_cmd(results.path(), &["test_qwen3_tts_base"])?;
    cmd.envs([
        ("DFX_SERVER", "auto"),
        ("DFX_SERVER_BIN", fake.as_str()),
        ("DFX_FAKE_SLEEP_MS", "300"),
        ("DFX_FAKE_IGNORE_SIGTERM", "1"),
        ("DFX_FAKE_GRANDCHILD", "1"),
        ("DFX_SERVER_GRACE_MS", grace_ms.as_str()),
    ]);
    if whole_group {
        cmd.process_group(0);
    }
    let mut suite = Suite::new(cmd.spawn().map_err(|e| format!("cannot run perf: {e}"))?);
    let (run_dir, pgid) = wait_for_trial(&mut suite, results.path(), 0)?;
    let members = || dfx_server::group_members(pgid);
    check_plain(
        wait_until(MARGIN, || members().len() == 2).is_some(),
        "server and grandchild run before the kill",
    )?;
    let state = results.path().join(LIVE_DIR_NAME);
    check_plain(
        state.join(format!("{pgid}.json")).is_file(),
        "the server's state file exists while it runs",
    )?;
    let suite_pid = Pid::from_raw(suite.child.id() as i32);
    if whole_group {
        killpg(suite_pid, Signal::SIGKILL).map_err(|e| e.to_string())?;
    } else {
        suite.child.kill().map_err(|e| e.to_string())?;
    }
    let killed = Instant::now();
    let took = wait_until(GRACE + MARGIN, || members().is_empty());
    let run = Run {
        out: suite.finish()?,
        results,
    };
    check(
        took.is_some(),
        &format!(
            "server group {pgid} still has {:?} {:?} after the SIGKILL",
            members(),
            killed.elapsed()
        ),
        &run,
    )?;
    check(
        wait_until(MARGIN, || processes_touching(run.results.path()).is_empty()).is_some(),
        &format!(
            "processes left: {:?}",
            processes_touching(run.results.path())
        ),
        &run,
    )?;
    check(
        run.stderr().contains("ended without stopping its server"),
        "the guard says what it did",
        &run,
    )?;
    check(!state.exists(), "the guard removed the state file", &run)?;
    let log = std::fs::read_to_string(run_dir.join("servers/01-test_qwen3_tts_base/server.log"))
        .unwrap_or_default();
    check(
        log.contains(&format!("dfx-perf guard: process group {pgid} is gone")),
        "the server log records the guard's teardown",
        &run,
    )?;
    took.ok_or_else(|| "unreachable".into())
}

/// A server process group this test started as a killed run's leftover: stopped when
/// dropped, so a check that fails early leaves nothing behind either.
struct Orphan {
    child: Child,
    reaped: bool,
}

impl Orphan {
    fn pgid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The leader's exit status once it has ended (reaping it).
    fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        let status = self.child.try_wait().ok().flatten();
        self.reaped |= status.is_some();
        status
    }
}

impl Drop for Orphan {
    fn drop(&mut self) {
        // Only while the group still has members: its id is then not another group's.
        if !dfx_server::group_members(self.pgid()).is_empty() {
            let _ = killpg(Pid::from_raw(self.pgid()), Signal::SIGKILL);
        }
        if !self.reaped {
            let _ = self.child.wait();
        }
    }
}

/// `dfx-fake-server` serving on a free port, leading a group of its own (as a server that
/// a killed run left behind), its output in `log`.
fn orphan_server(log: &Path, stubborn: bool) -> Result<Orphan, Failed> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let out = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(fake_server_bin()?);
    cmd.args(["serve", "fake/model", "--host", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(out.try_clone().map_err(|e| e.to_string())?)
        .stderr(out)
        .process_group(0);
    if stubborn {
        cmd.env("DFX_FAKE_IGNORE_SIGTERM", "1")
            .env("DFX_FAKE_GRANDCHILD", "1");
    }
    let child = cmd.spawn().map_err(|e| e.to_string())?;
    Ok(Orphan {
        child,
        reaped: false,
    })
}

/// A process that has ended (a zombie until reaped): the owner of a crashed run.
fn dead_owner() -> Result<ProcessId, Failed> {
    let mut c = Command::new("true").spawn().map_err(|e| e.to_string())?;
    let pid = c.id() as i32;
    let id = wait_until(MARGIN, || procfs::stat(pid).is_some_and(|s| !s.is_live()))
        .and_then(|_| ProcessId::of(pid));
    c.wait().map_err(|e| e.to_string())?;
    id.ok_or_else(|| "`true` did not end".into())
}

/// The state file a run writes for `child`, as if that run had been killed.
fn state_file_of(child: &Child, dir: &Path, owner: ProcessId) -> Result<LiveRecord, Failed> {
    let mut r = LiveRecord::capture(child.id() as i32, "server", Duration::from_millis(500))
        .ok_or("the orphan is not in /proc")?;
    r.owner = Some(owner);
    live::write(dir, &r).map_err(|e| e.to_string())?;
    Ok(r)
}

fn announced_count(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("fake-server role="))
        .count()
}

pub fn the_next_run_stops_what_a_killed_run_left_behind() -> Result<(), Failed> {
    let results = tempfile::tempdir().map_err(|e| e.to_string())?;
    let state = results.path().join(LIVE_DIR_NAME);
    let logs_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let logs: PathBuf = logs_dir.path().to_path_buf();
    let owner = dead_owner()?;

    let mut leftover = orphan_server(&logs.join("leftover.log"), true)?;
    let mut stranger = orphan_server(&logs.join("stranger.log"), false)?;
    let ready = wait_until(PATIENCE, || {
        announced_count(&logs.join("leftover.log")) == 2
            && announced_count(&logs.join("stranger.log")) == 1
    });
    check_plain(ready.is_some(), "the orphans never started")?;
    let pgid = leftover.pgid();
    let record = state_file_of(&leftover.child, &state, owner)?;
    let mut wrong = state_file_of(&stranger.child, &state, owner)?;
    // Its pid, but not its start time: not a process the suite started.
    wrong.leader_start += 1;
    live::write(&state, &wrong).map_err(|e| e.to_string())?;

    let out = perf_cmd(
        results.path(),
        &["--exact", crate::command_line::BASE_TRIALS[0]],
    )?
    .output()
    .map_err(|e| format!("cannot run perf: {e}"))?;
    let run = Run { out, results };
    let stranger_alive = stranger.try_wait().is_none();
    drop(stranger);
    let leftover_status = leftover.try_wait();
    // Read before the drop, which would stop what the run left.
    let leftover_gone = dfx_server::group_members(pgid).is_empty();
    drop(leftover);

    check(run.code() == Some(0), "the next run passes", &run)?;
    let stopped = format!(
        "stopped a server left running by an earlier run (process group {pgid}, started by pid {})",
        owner.pid
    );
    let left_alone = format!(
        "left alone process group {} from an earlier run's state file (server): pid {} is now another process",
        wrong.pgid, wrong.pgid
    );
    let err = run.stderr();
    check(
        err.contains(&format!("dfx-perf: {stopped}")),
        "stderr names the stopped group",
        &run,
    )?;
    check(
        err.contains(&left_alone),
        "stderr names what was left alone",
        &run,
    )?;
    check(
        err.contains(&record.cmdline.join(" ")),
        "with its command line",
        &run,
    )?;
    check(
        leftover_status.is_some() && leftover_gone,
        "the leftover group (server and grandchild) was stopped",
        &run,
    )?;
    check(stranger_alive, "the stranger was left alone", &run)?;
    check(!state.exists(), "the state files were removed", &run)?;
    let info = read_json(&run.run_dir()?.join("run.json"), &run)?;
    let warnings: Vec<&str> = info["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    check(
        warnings.iter().any(|w| w.starts_with(&stopped))
            && warnings.iter().any(|w| w.starts_with(&left_alone)),
        &format!("run.json's warnings record both: {warnings:?}"),
        &run,
    )
}
