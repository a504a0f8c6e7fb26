//! Data integrity under a hostile environment: a results disk that fills up while a trial
//! runs (a small tmpfs, so root only) must end the run with a non-zero status that names
//! what was not written, and leave no temporary file behind to keep the disk full.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use libtest_mimic::Failed;

use crate::interrupt::{PATIENCE, Suite, check_plain};
use crate::support::{dfx_perf_tool, fixture, hermetic, output_text, perf_bin, root, run_dirs};

/// Whether this process can mount a tmpfs (root); the full-disk check is ignored otherwise.
pub fn can_mount() -> bool {
    use std::os::unix::fs::MetadataExt;
    // `/proc/self` belongs to the process's effective user.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A tmpfs mounted for one test, unmounted (lazily) when dropped.
struct Tmpfs {
    path: PathBuf,
    _parent: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, Failed> {
        let parent = tempfile::tempdir().map_err(|e| e.to_string())?;
        let path = parent.path().join("results");
        std::fs::create_dir(&path).map_err(|e| e.to_string())?;
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        check_plain(status.success(), "mount -t tmpfs failed (running as root?)")?;
        Ok(Tmpfs {
            path,
            _parent: parent,
        })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Writes zeros into `path` until the filesystem refuses: the disk is full.
fn fill(path: &Path) -> Result<(), Failed> {
    let mut f = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let block = vec![0u8; 16 * 1024];
    for _ in 0..100_000 {
        if f.write_all(&block).is_err() {
            return Ok(());
        }
    }
    Err("the tmpfs never filled up".into())
}

/// Every file under `dir` whose name marks an atomic write's temporary file.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.contains(".tmp.") || name.ends_with(".part") {
                out.push(p.clone());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    out
}

pub fn a_full_results_disk_fails_the_run_and_leaves_no_temp_file() -> Result<(), Failed> {
    let disk = Tmpfs::mount("2m")?;
    let mut cmd = Command::new(perf_bin()?);
    cmd.current_dir(root())
        .args([
            "--exact",
            "test_qwen3_tts_base::voice_clone_latency_seed-tts::c1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    hermetic(&mut cmd, &fixture("tts_small.json"), &disk.path);
    // Four requests of 2 s: the disk fills while the trial runs.
    cmd.env("DFX_FAKE_SLEEP_MS", "2000");
    let mut suite = Suite::new(cmd.spawn().map_err(|e| format!("cannot run perf: {e}"))?);
    let deadline = Instant::now() + PATIENCE;
    let run_dir = loop {
        if let Some(d) = run_dirs(&disk.path).into_iter().next()
            && d.join("run.json").is_file()
        {
            break d;
        }
        if suite.exited() || Instant::now() > deadline {
            return Err("the run never started".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let filler = disk.path.join("filler");
    fill(&filler)?;
    let out = suite.finish()?;
    let text = output_text(&out);
    check_plain(
        out.status.code() == Some(3),
        &format!("a run that could not write its files must exit 3:\n{text}"),
    )?;
    check_plain(
        text.contains("summary.json") && text.contains("could not be written"),
        &format!("the failed writes must be named:\n{text}"),
    )?;
    let left = temp_files(&disk.path);
    check_plain(left.is_empty(), &format!("temp files left: {left:?}"))?;
    // Space again: `dfx-perf report` on the folder works and leaves no temp file either.
    std::fs::remove_file(&filler).map_err(|e| e.to_string())?;
    // The run never sealed its folder (no manifest.json): `--no-verify` reads it anyway.
    let report = dfx_perf_tool(&["report", "--no-verify", &run_dir.display().to_string()])?;
    let left = temp_files(&disk.path);
    check_plain(left.is_empty(), &format!("temp files left: {left:?}"))?;
    let said = output_text(&report);
    check_plain(
        !said.contains("panicked") && (report.status.success() || said.contains("summary.json")),
        &format!("report after the fill must work or name what is missing: {said}"),
    )
}

/// `GET path` on loopback, the status line of the answer (bounded by timeouts).
fn get_status(port: u16, path: &str) -> Option<String> {
    use std::io::Read;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.lines().next().map(String::from)
}

/// The simulator with its log on a full disk (`/dev/full`, every write fails with ENOSPC)
/// keeps serving instead of dying of a panic in its logger.
pub fn the_simulator_survives_a_log_on_a_full_disk() -> Result<(), Failed> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full");
    let child = Command::new(env!("CARGO_BIN_EXE_dfx-perf-sim"))
        .args([
            "serve",
            "Qwen/Qwen3-TTS-12Hz-1.7B-Base",
            "--host",
            "127.0.0.1",
        ])
        .args(["--port", &port.to_string(), "--sim-log", "debug"])
        .stdin(Stdio::null())
        .stdout(full().map_err(|e| e.to_string())?)
        .stderr(full().map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot start the simulator: {e}"))?;
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut sim = Kill(child);
    let deadline = Instant::now() + PATIENCE;
    let mut answered = 0;
    while answered < 20 {
        if let Some(status) = sim.0.try_wait().map_err(|e| e.to_string())? {
            return Err(
                format!("the simulator exited ({status}) with its log on a full disk").into(),
            );
        }
        if Instant::now() > deadline {
            return Err(format!("only {answered} answers before the deadline").into());
        }
        match get_status(port, "/health") {
            Some(line) if line.contains("200") => answered += 1,
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    check_plain(
        sim.0.try_wait().map_err(|e| e.to_string())?.is_none(),
        "the simulator must still run after 20 logged requests",
    )
}

/// Names of 70,000 characters (past libtest's 65,535) in each key a trial name is built
/// from, and a 10 MB one: a config error naming the key, nothing started, no run folder,
/// and the message clipped (not the value echoed).
pub fn overlong_names_are_config_errors_with_clipped_messages() -> Result<(), Failed> {
    let text = std::fs::read_to_string(fixture("tts_small.json")).map_err(|e| e.to_string())?;
    let cases: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let long = "n".repeat(70_000);
    let huge = "h".repeat(10_000_000);
    for (key, value, in_entry) in [
        ("test_name", &long, false),
        ("name", &long, true),
        ("dataset_name", &long, true),
        ("test_name", &huge, false),
    ] {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut c = cases.clone();
        let target = if in_entry {
            &mut c[0]["benchmark_params"][0]
        } else {
            &mut c[0]
        };
        target[key] = serde_json::Value::String(value.clone());
        let config = dir.path().join("long.json");
        std::fs::write(&config, c.to_string()).map_err(|e| e.to_string())?;
        let run = crate::support::perf(&config.display().to_string(), &[], &[])?;
        let said = output_text(&run.out);
        check_plain(
            run.code() == Some(2) && said.contains(&format!("key `{key}`")),
            &format!(
                "{key}: exit 2 naming the key expected, got {:?}",
                run.code()
            ),
        )?;
        check_plain(
            said.contains("too long for a name") && said.len() < 20_000,
            &format!("{key}: a short message, got {} bytes", said.len()),
        )?;
        check_plain(
            run_dirs(run.results.path()).is_empty(),
            &format!("{key}: no run folder"),
        )?;
    }
    // Flag values, refused by the suite's checks or by the command-line parser: clipped.
    for flag in ["--hardware", "--sim-speed", "--ready-timeout"] {
        let run = crate::support::perf(&fixture("tts_small.json"), &[flag, &long, "--list"], &[])?;
        let said = output_text(&run.out);
        check_plain(
            run.code() == Some(2) && said.len() < 20_000 && said.contains("more bytes"),
            &format!(
                "{flag}: exit 2 with a clipped value, got {} bytes",
                said.len()
            ),
        )?;
    }
    Ok(())
}

/// A baseline store that is a FIFO (reading would block forever) or a link to
/// `/dev/zero` (reading would fill memory): a config error naming the file, at once.
pub fn a_fifo_or_dev_zero_baseline_store_is_refused_at_once() -> Result<(), Failed> {
    for kind in ["FIFO", "device"] {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let store = dir.path().join("H100.json");
        if kind == "FIFO" {
            let made = Command::new("mkfifo").arg(&store).status();
            check_plain(made.is_ok_and(|s| s.success()), "mkfifo")?;
        } else {
            std::os::unix::fs::symlink("/dev/zero", &store).map_err(|e| e.to_string())?;
        }
        let dir_arg = dir.path().display().to_string();
        let started = Instant::now();
        let run = crate::support::perf(
            &fixture("tts_small.json"),
            &["--baselines-dir", &dir_arg],
            &[],
        )?;
        let said = output_text(&run.out);
        check_plain(
            run.code() == Some(2)
                && said.contains("H100.json")
                && said.contains("not a regular file"),
            &format!("{kind}: exit 2 naming the store expected:\n{said}"),
        )?;
        check_plain(
            started.elapsed() < PATIENCE,
            &format!("{kind}: took {:?}", started.elapsed()),
        )?;
    }
    Ok(())
}
