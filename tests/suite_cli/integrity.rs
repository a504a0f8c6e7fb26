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
    let report = dfx_perf_tool(&["report", &run_dir.display().to_string()])?;
    let left = temp_files(&disk.path);
    check_plain(left.is_empty(), &format!("temp files left: {left:?}"))?;
    let said = output_text(&report);
    check_plain(
        !said.contains("panicked") && (report.status.success() || said.contains("summary.json")),
        &format!("report after the fill must work or name what is missing: {said}"),
    )
}
