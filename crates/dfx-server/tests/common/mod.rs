//! Shared helpers of dfx-server's integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dfx_core::server::{ServerSpec, StartContext};
use dfx_server::{LauncherConfig, ProcessLauncher, Supervision, group_members};

/// dfx-testkit's fake server (a stand-in for `vllm-omni serve`).
pub(crate) fn fake() -> &'static str {
    exe("dfx-fake-server")
}

/// dfx-testkit's launch helper (a launcher in a process of its own).
pub(crate) fn helper() -> &'static str {
    exe("dfx-launch-helper")
}

/// The suite's guard, `dfx-perf-guard` (the one guard executable).
pub(crate) fn guard() -> &'static str {
    exe("dfx-perf-guard")
}

fn exe(name: &str) -> &'static str {
    let path = dfx_testkit::bin(name);
    path.to_str()
        .unwrap_or_else(|| panic!("{} is not UTF-8", path.display()))
}

/// A vllm-omni spec for the fake server with extra environment.
pub(crate) fn spec(env: &[(&str, &str)]) -> ServerSpec {
    ServerSpec {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ..dfx_testkit::trials::spec("fake/model")
    }
}

pub(crate) fn config() -> LauncherConfig {
    LauncherConfig {
        server_bin: Some(fake().into()),
        grace: Some(Duration::from_millis(300)),
        poll_interval: Duration::from_millis(50),
        // Every server of these tests has a guard (no state files: see tests/guard.rs).
        supervision: Supervision {
            guard_bin: Some(guard().into()),
            live_dir: None,
        },
        ..LauncherConfig::default()
    }
}

pub(crate) fn launcher() -> ProcessLauncher {
    ProcessLauncher::new(config())
}

pub(crate) fn ctx(dir: &Path, ready_timeout: Duration) -> StartContext {
    StartContext {
        dir: dir.join("server-0"),
        storage_dir: Some(dir.join("storage")),
        ready_timeout,
    }
}

pub(crate) fn log_of(ctx: &StartContext) -> PathBuf {
    ctx.dir.join("server.log")
}

/// `(role, pid, pgid)` of every fake-server process that announced itself in `log`.
pub(crate) fn announced(log: &Path) -> Vec<(String, i32, i32)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix("fake-server "))
        .map(|l| {
            let field = |k: &str| {
                l.split_whitespace()
                    .find_map(|f| f.strip_prefix(&format!("{k}=")).map(String::from))
                    .unwrap()
            };
            (
                field("role"),
                field("pid").parse().unwrap(),
                field("pgid").parse().unwrap(),
            )
        })
        .collect()
}

/// Waits (bounded) until `log` announces `n` processes; returns them.
pub(crate) fn wait_announced(log: &Path, n: usize) -> Vec<(String, i32, i32)> {
    for _ in 0..200 {
        let a = announced(log);
        if a.len() >= n {
            return a;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!(
        "{} never announced {n} processes:\n{}",
        log.display(),
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// Whether `pid` is a live (non-zombie) process.
pub(crate) fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    state != "Z" && state != "X"
}

/// The process table shows nothing of group `pgid` and none of `pids`.
pub(crate) fn assert_gone(pgid: i32, pids: &[i32]) {
    assert_eq!(
        group_members(pgid),
        Vec::<i32>::new(),
        "members of server group {pgid} survived"
    );
    for pid in pids {
        assert!(
            !alive(*pid),
            "process {pid} of server group {pgid} survived"
        );
    }
}

/// Everything the log announced is gone (server and grandchildren).
pub(crate) fn assert_log_processes_gone(log: &Path) {
    let procs = announced(log);
    assert!(!procs.is_empty(), "{} announced no process", log.display());
    let pgid = procs[0].2;
    let pids: Vec<i32> = procs.iter().map(|p| p.1).collect();
    assert_gone(pgid, &pids);
}
