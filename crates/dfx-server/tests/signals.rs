//! SIGINT/SIGTERM to the harness and a panic while a server runs: the server group (a
//! SIGTERM-ignoring server with a SIGTERM-ignoring grandchild) must be gone afterwards.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Starts the helper in `mode` (its server supervised by a guard, with a state file in
/// `<dir>/live`); returns it and its server's pgid.
fn start_helper(mode: &str, dir: &std::path::Path) -> (Child, i32) {
    let live = dir.join("live");
    let mut child = Command::new(helper())
        .args([
            mode,
            fake(),
            dir.to_str().unwrap(),
            guard(),
            live.to_str().unwrap(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pgid: i32 = line
        .trim()
        .strip_prefix("READY pgid=")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("helper said {line:?}"))
        .parse()
        .unwrap();
    wait_announced(&dir.join("server.log"), 2);
    assert_eq!(
        group_members_len(pgid),
        2,
        "server and grandchild must be running"
    );
    assert!(live.is_dir(), "a state file while the server runs");
    (child, pgid)
}

fn group_members_len(pgid: i32) -> usize {
    dfx_server::group_members(pgid).len()
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "helper did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stderr_of(child: &mut Child) -> String {
    let mut s = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut s).unwrap();
    s
}

fn interrupted_with(sig: Signal) {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, pgid) = start_helper("wait", dir.path());
    kill(Pid::from_raw(child.id() as i32), sig).unwrap();
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(130), "{status:?}");
    let said = format!("dfx-perf: interrupted; stopping 1 process group(s): server (pgid {pgid})");
    assert!(stderr_of(&mut child).contains(&said));
    assert_log_processes_gone(&dir.path().join("server.log"));
    assert_gone(pgid, &[]);
    assert!(
        !dir.path().join("live").exists(),
        "the handler removed the state file"
    );
}

#[test]
fn sigterm_to_the_harness_stops_every_server_group() {
    interrupted_with(Signal::SIGTERM);
}

#[test]
fn sigint_to_the_harness_stops_every_server_group() {
    interrupted_with(Signal::SIGINT);
}

#[test]
fn panic_with_a_live_server_stops_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, pgid) = start_helper("panic", dir.path());
    writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
    let status = wait_exit(&mut child);
    assert_eq!(
        status.code(),
        Some(101),
        "{status:?} (signal {:?})",
        status.signal()
    );
    assert!(stderr_of(&mut child).contains("deliberate panic with a live server"));
    assert_log_processes_gone(&dir.path().join("server.log"));
    assert_gone(pgid, &[]);
}
