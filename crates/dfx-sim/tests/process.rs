//! The simulator as a process, launched with the `vllm-omni serve` command line: exit
//! statuses, SIGTERM (honoured or ignored), the forked child left in the process group,
//! the crash fault, and what `/sim/info` says it was started with.
//!
//! Each server is this test binary re-executed with only `child_server_entry` selected
//! and its argv in an environment variable, in a new process group (like the launcher).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::Value;

const CHILD_ARGS: &str = "DFX_SIM_TEST_CHILD_ARGS";

/// Not a test on its own: the server body of the re-executed child.
#[test]
fn child_server_entry() {
    let Ok(args) = std::env::var(CHILD_ARGS) else {
        return;
    };
    let argv: Vec<String> = serde_json::from_str(&args).expect("child argv");
    let code = dfx_sim::run_from_args(argv.into_iter().map(OsString::from).collect());
    std::process::exit(i32::from(code));
}

struct Server {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

fn spawn(args: &[&str], env: &[(&str, &str)]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut argv = vec!["dfx-perf-sim".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_server_entry",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ARGS, serde_json::to_string(&argv).unwrap())
    .env_remove("DFX_SIM_SPEED")
    .env_remove("DFX_SIM_FAULTS")
    .stdin(Stdio::null())
    .stdout(file.try_clone().unwrap())
    .stderr(file)
    .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Server {
        child: cmd.spawn().unwrap(),
        log,
        _dir: dir,
    }
}

fn log_text(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

impl Server {
    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(s) = self.child.try_wait().unwrap() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The base URL once `/health` answers 200.
    fn ready(&mut self) -> String {
        let start = Instant::now();
        loop {
            let text = log_text(&self.log);
            if let Some(url) = text
                .lines()
                .find_map(|l| l.split(" on ").nth(1).filter(|u| u.starts_with("http://")))
            {
                let url = url.trim().to_string();
                if get(&format!("{url}/health")).is_some_and(|(s, _)| s == 200) {
                    return url;
                }
            }
            if let Some(s) = self.child.try_wait().unwrap() {
                panic!("server exited with {s} before ready:\n{text}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "not ready:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    fn signal(&self, sig: Signal) {
        kill(Pid::from_raw(self.pid()), sig).unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.pid()), Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Blocking GET: (status, body).
fn get(url: &str) -> Option<(u16, String)> {
    rt().block_on(async {
        let c = reqwest::Client::builder().no_proxy().build().ok()?;
        let r = tokio::time::timeout(Duration::from_secs(2), c.get(url).send())
            .await
            .ok()?
            .ok()?;
        let status = r.status().as_u16();
        Some((status, r.text().await.ok()?))
    })
}

fn alive(pid: i32) -> bool {
    // Zombies count as gone: a reaped or dead process has no running state.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

const MODEL: &str = "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice";

#[test]
fn launcher_command_line_env_and_sigterm() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/qwen3_tts.yaml");
    let mut s = spawn(
        &[
            "serve",
            MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--omni",
            "--trust-remote-code",
            "--max-num-seqs",
            "8",
            "--stage-overrides",
            r#"{"1":{"max_num_seqs":2}}"#,
            "--deploy-config",
            deploy.to_str().unwrap(),
            "--stage-init-timeout",
            "600",
            "--init-timeout",
            "900",
        ],
        &[
            ("DFX_SIM_SPEED", "8"),
            ("DFX_SIM_FAULTS", "odd-bytes"),
            ("DFX_SIM_SEED", "11"),
        ],
    );
    let url = s.ready();
    let (status, body) = get(&format!("{url}/sim/info")).unwrap();
    assert_eq!(status, 200);
    let info: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(info["model"], MODEL);
    assert_eq!(info["speed"], 8.0);
    assert_eq!(info["seed"], 11);
    assert_eq!(info["faults"]["odd_bytes"], true);
    assert_eq!(info["omni"], true);
    assert_eq!(info["init_timeout"], 900.0);
    assert_eq!(
        info["extra_flags"],
        serde_json::json!([["--trust-remote-code", null], ["--max-num-seqs", "8"]])
    );
    assert_eq!(info["engine"]["codec"]["max_num_seqs"], 2);
    assert_eq!(info["argv"].as_array().unwrap().len(), 19);
    assert_eq!(info["pid"], s.pid());
    s.signal(Signal::SIGTERM);
    let status = s
        .wait_exit(Duration::from_secs(10))
        .expect("exits after SIGTERM");
    assert_eq!(status.code(), Some(0), "{}", log_text(&s.log));
    assert!(log_text(&s.log).contains("SIGTERM received"));
}

#[test]
fn exit_statuses() {
    let mut s = spawn(
        &[
            "serve",
            MODEL,
            "--port",
            "0",
            "--sim-fault",
            "exit-at-startup=3",
        ],
        &[],
    );
    let status = s.wait_exit(Duration::from_secs(10)).expect("exits");
    assert_eq!(status.code(), Some(3));
    assert!(log_text(&s.log).contains("simulated start-up failure"));

    let mut s = spawn(&["serve", "--port", "0"], &[]);
    assert_eq!(
        s.wait_exit(Duration::from_secs(10)).unwrap().code(),
        Some(2)
    );
    assert!(log_text(&s.log).contains("missing model"));

    let mut s = spawn(
        &["serve", MODEL, "--port", "0"],
        &[("DFX_SIM_FAULT_SLOWDOWN", "zero")],
    );
    assert_eq!(
        s.wait_exit(Duration::from_secs(10)).unwrap().code(),
        Some(2)
    );
    assert!(log_text(&s.log).contains("DFX_SIM_FAULT_SLOWDOWN"));
}

#[test]
fn ignored_sigterm_needs_sigkill() {
    let mut s = spawn(
        &["serve", MODEL, "--port", "0"],
        &[("DFX_SIM_FAULT_IGNORE_SIGTERM", "1")],
    );
    let url = s.ready();
    s.signal(Signal::SIGTERM);
    assert!(
        s.wait_exit(Duration::from_millis(1500)).is_none(),
        "still running"
    );
    assert_eq!(get(&format!("{url}/health")).map(|r| r.0), Some(200));
    assert!(log_text(&s.log).contains("SIGTERM ignored"));
    s.signal(Signal::SIGKILL);
    assert!(s.wait_exit(Duration::from_secs(5)).is_some());
}

#[test]
fn forked_child_stays_in_the_group_until_the_group_is_killed() {
    let mut s = spawn(
        &["serve", MODEL, "--port", "0", "--sim-fault", "fork-child"],
        &[],
    );
    let url = s.ready();
    let info: Value = serde_json::from_str(&get(&format!("{url}/sim/info")).unwrap().1).unwrap();
    let child = info["child_pid"].as_i64().expect("child pid") as i32;
    assert!(alive(child));
    assert_eq!(
        process_group(child),
        Some(s.pid()),
        "child in the server's group"
    );
    s.signal(Signal::SIGTERM);
    assert_eq!(
        s.wait_exit(Duration::from_secs(10)).unwrap().code(),
        Some(0)
    );
    assert!(alive(child), "the fault leaves the child behind");
    killpg(Pid::from_raw(s.pid()), Signal::SIGKILL).unwrap();
    let start = Instant::now();
    while alive(child) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(child), "group teardown removed the child");
}

#[test]
fn crash_at_inflight_exits_with_status_1() {
    let mut s = spawn(
        &[
            "serve",
            MODEL,
            "--port",
            "0",
            "--sim-speed",
            "1",
            "--sim-fault",
            "crash-at-inflight=2",
        ],
        &[],
    );
    let url = s.ready();
    let body = serde_json::json!({"input": "A fairly long sentence that keeps the stream open for a while.", "voice": "vivian", "stream_format": "audio", "response_format": "pcm"});
    rt().block_on(async {
        let c = reqwest::Client::builder().no_proxy().build().unwrap();
        let send = |c: reqwest::Client| {
            let (u, b) = (format!("{url}/v1/audio/speech"), body.clone());
            tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(5), async {
                    c.post(u).json(&b).send().await?.bytes().await
                })
                .await
            })
        };
        let a = send(c.clone());
        tokio::time::sleep(Duration::from_millis(50)).await;
        let b = send(c.clone());
        let _ = (a.await, b.await);
    });
    let status = s.wait_exit(Duration::from_secs(10)).expect("crashed");
    assert_eq!(status.code(), Some(1));
    assert!(log_text(&s.log).contains("simulated crash"));
}
