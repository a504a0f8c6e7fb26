//! The guard and the state files: a normal stop dismisses the guard and removes the state
//! file; `kill -9` of the process that started the server (alone, or with its whole
//! process group) leaves no server process behind; and a guard never signals a group that
//! is no longer the one it was told about.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use dfx_core::server::RunningServer;
use dfx_server::guardian::Orders;
use dfx_server::live::{LIVE_DIR_NAME, LiveRecord};
use dfx_server::procfs::{self, ProcessId};
use dfx_server::{LauncherConfig, ProcessLauncher, Supervision, group_members};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// The fake server's grace in these tests (the helper's too).
const GRACE: Duration = Duration::from_millis(300);
/// Time allowed on top of the grace on a busy machine.
const MARGIN: Duration = Duration::from_secs(15);

/// Waits (bounded by `within`) until `done()`; how long that took, or `None`.
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

fn json_files(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}

#[test]
fn a_normal_stop_dismisses_the_guard_and_removes_the_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join(LIVE_DIR_NAME);
    let ctx = ctx(dir.path(), Duration::from_secs(30));
    let mut launcher = ProcessLauncher::new(LauncherConfig {
        supervision: Supervision {
            guard_bin: Some(guard().into()),
            live_dir: Some(live.clone()),
        },
        ..config()
    });
    let server = launcher
        .start_managed(&spec(&[("DFX_FAKE_GRANDCHILD", "1")]), &ctx)
        .unwrap();
    let pgid = server.pgid();
    let guard = server.guard_pid().expect("a guard runs") as i32;
    let record: LiveRecord =
        serde_json::from_str(&std::fs::read_to_string(live.join(format!("{pgid}.json"))).unwrap())
            .unwrap();
    assert_eq!(record.pgid, pgid);
    assert_eq!(record.leader_start, procfs::stat(pgid).unwrap().start_time);
    assert_eq!(record.cmdline, procfs::cmdline(pgid).unwrap());
    assert_eq!(record.cmdline[0], fake());
    assert_eq!(record.owner, ProcessId::me());
    // The guard leads a session of its own, outside the server's group and ours.
    let sid = nix::unistd::getsid(Some(Pid::from_raw(guard)))
        .unwrap()
        .as_raw();
    assert_eq!(sid, guard, "the guard runs in its own session");
    assert_ne!(procfs::stat(guard).unwrap().pgrp, pgid);

    let procs = wait_announced(&log_of(&ctx), 2);
    Box::new(server).stop().unwrap();
    assert_gone(pgid, &procs.iter().map(|p| p.1).collect::<Vec<_>>());
    assert!(!alive(guard), "the guard was dismissed and reaped");
    assert!(procfs::stat(guard).is_none(), "the guard was reaped");
    assert!(
        !live.exists(),
        "state file (and the emptied folder) removed"
    );
}

/// Starts the helper (server ignoring SIGTERM, with a grandchild that does too) with a
/// guard and a state folder; returns it, the server's pgid and the guard's pid.
fn helper_with_guard(dir: &Path, own_group: bool) -> (Child, i32, i32) {
    let mut cmd = Command::new(helper());
    cmd.args([
        "wait",
        fake(),
        dir.join("server-0").to_str().unwrap(),
        guard(),
        dir.join(LIVE_DIR_NAME).to_str().unwrap(),
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if own_group {
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let field = |k: &str| -> i32 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .unwrap_or_else(|| panic!("helper said {line:?}"))
            .parse()
            .unwrap()
    };
    let (pgid, guard) = (field("pgid="), field("guard="));
    wait_announced(&dir.join("server-0/server.log"), 2);
    assert_eq!(group_members(pgid).len(), 2, "server and grandchild run");
    assert_eq!(json_files(&dir.join(LIVE_DIR_NAME)).len(), 1);
    (child, pgid, guard)
}

/// SIGKILL to the helper (or its whole group): the guard stops the server group.
fn killed(own_group: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (mut helper, pgid, guard) = helper_with_guard(dir.path(), own_group);
    let server_log = dir.path().join("server-0/server.log");
    let pids: Vec<i32> = announced(&server_log).iter().map(|p| p.1).collect();
    let helper_pid = Pid::from_raw(helper.id() as i32);
    if own_group {
        killpg(helper_pid, Signal::SIGKILL).unwrap();
    } else {
        kill(helper_pid, Signal::SIGKILL).unwrap();
    }
    helper.wait().unwrap();
    let took = wait_until(GRACE + MARGIN, || group_members(pgid).is_empty());
    let mut stderr = String::new();
    assert!(
        took.is_some(),
        "server group {pgid} still has {:?}",
        group_members(pgid)
    );
    eprintln!(
        "server group gone {:?} after the SIGKILL (grace {GRACE:?})",
        took.unwrap()
    );
    assert_gone(pgid, &pids);
    assert!(
        wait_until(MARGIN, || !alive(guard)).is_some(),
        "the guard exits once done"
    );
    helper
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        stderr.contains("ended without stopping its server") && stderr.contains("is gone"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(&server_log).unwrap();
    assert!(log.contains("dfx-perf guard: process group"), "{log}");
    assert!(
        !dir.path().join(LIVE_DIR_NAME).exists(),
        "the guard removed the state file"
    );
}

#[test]
fn sigkill_of_the_starter_leaves_no_server_behind() {
    killed(false);
}

#[test]
fn sigkill_of_the_starters_whole_group_leaves_no_server_behind() {
    killed(true);
}

/// `sleep 30` leading a group of its own.
fn sleeper() -> Child {
    Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Runs a guard for `leader` and closes its pipe without `done`.
fn abandoned_guard(leader: ProcessId) -> std::process::ExitStatus {
    let orders = Orders {
        leader,
        grace: GRACE,
        what: "server".into(),
        state_file: None,
        log: None,
    };
    let mut guard = Command::new(guard())
        .args(orders.to_args())
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(guard.stdin.take());
    let deadline = Instant::now() + GRACE + MARGIN;
    loop {
        if let Some(status) = guard.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "guard did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_guard_never_signals_a_group_that_is_no_longer_the_servers() {
    let mut s = sleeper();
    let id = ProcessId::of(s.id() as i32).unwrap();
    let wrong = ProcessId {
        start_time: id.start_time + 1,
        ..id
    };
    assert!(abandoned_guard(wrong).success());
    assert!(s.try_wait().unwrap().is_none(), "a stranger is left alone");

    assert!(abandoned_guard(id).success());
    let status = s.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc_sigterm()),
        "the group it was told about is stopped"
    );
}

fn libc_sigterm() -> i32 {
    Signal::SIGTERM as i32
}
