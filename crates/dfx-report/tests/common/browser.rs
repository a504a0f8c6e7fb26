//! Headless Chromium for the tests that check a page really renders. Chromium runs in
//! its own process group with a private profile and HOME, bounded in time; the whole
//! group is killed afterwards and the tests check nothing of it is left.

#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CANDIDATES: &[&str] = &[
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
];

/// The variable under which a missing browser fails the browser tests instead of
/// ignoring them (`.ci/run` sets it, so CI always renders the pages for real).
pub(crate) const REQUIRE_ENV: &str = "DFX_REQUIRE_BROWSER";

/// Whether a browser is installed: `Ok(path)`, or `Err(why)` naming where it looked and
/// the install command.
pub(crate) fn chromium() -> Result<PathBuf, String> {
    CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "no Chromium at {CANDIDATES:?}: these tests render the pages in headless \
                 Chromium; install it with `apt-get install -y chromium` (Debian package \
                 `chromium`)"
            )
        })
}

/// Whether [`REQUIRE_ENV`] is set to a true value.
pub(crate) fn required() -> bool {
    dfx_core::lenient::is_on(std::env::var(REQUIRE_ENV).ok().as_deref())
}

/// What Chromium made of a file.
pub(crate) struct Dump {
    pub dom: String,
    pub stderr: String,
    /// Processes of Chromium's group still alive after it exited and the group was
    /// killed (must be empty).
    pub leftovers: Vec<i32>,
}

/// Loads `file` in headless Chromium and returns the serialised DOM.
pub(crate) fn dump_dom(browser: &Path, file: &Path) -> Dump {
    dump_dom_with(browser, file, &[])
}

/// [`dump_dom`] with extra Chromium arguments (`--window-size=1280,900`).
pub(crate) fn dump_dom_with(browser: &Path, file: &Path, extra: &[&str]) -> Dump {
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", file.canonicalize().unwrap().display());
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--disable-extensions",
        ])
        .args(extra)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(&url)
        .env("HOME", profile.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start chromium");
    let pgid = child.id() as i32;
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Chromium leaves helper processes (zygote, utility) behind for a moment: end the
    // whole group we created, then reap.
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
    let dom = out_t.join().unwrap();
    let stderr = err_t.join().unwrap();
    assert!(
        status.is_some(),
        "chromium did not finish within 120 s; stderr:\n{stderr}"
    );
    let leftovers = wait_group_gone(pgid);
    Dump {
        dom,
        stderr,
        leftovers,
    }
}

/// Process ids still in group `pgid` after up to 5 s (zombies of other parents that
/// are already dead are not counted).
fn wait_group_gone(pgid: i32) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = group_members(pgid);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // fields after the `(comm)`: state ppid pgrp …
            let rest = &stat[stat.rfind(')').map(|i| i + 2).unwrap_or(0)..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            f.len() > 2 && f[2].parse::<i32>().ok() == Some(pgid) && f[0] != "Z"
        })
        .collect()
}
