//! The run folder (`docs/architecture.md` ("Results layout"), `docs/results.md`):
//!
//! ```text
//! <results-dir>/
//!   latest -> <run-id>
//!   <run-id>/                      YYYYmmdd-HHMMSS-<hw>[-2…]
//!     run.json                     versions, git sha, hardware, flags, config files, times
//!     summary.json                 one element per trial that ran or was ignored
//!     trials/<trial>/              result.json, verdict.json, records.jsonl, bench.log
//!     servers/<NN>-<test_name>/    server.log, command.txt (one folder per server start)
//! ```
//! Every file is written atomically.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::{DateTime, Local};
use dfx_core::fsutil::{sanitize_component, write_json_atomic};

/// A created run folder.
#[derive(Debug, Clone)]
pub(crate) struct RunDir {
    /// `YYYYmmdd-HHMMSS-<hw>`, with `-2`, `-3`, … when that folder existed.
    pub id: String,
    /// `<results-dir>/<id>`.
    pub path: PathBuf,
}

impl RunDir {
    /// Creates `<results_dir>/<run-id>` (never reusing an existing folder) and points
    /// `<results_dir>/latest` at it.
    pub(crate) fn create(
        results_dir: &Path,
        hardware: &str,
        now: DateTime<Local>,
    ) -> io::Result<RunDir> {
        std::fs::create_dir_all(results_dir)?;
        let base = format!(
            "{}-{}",
            now.format("%Y%m%d-%H%M%S"),
            sanitize_component(hardware)
        );
        let mut id = base.clone();
        let mut n = 2;
        loop {
            match std::fs::create_dir(results_dir.join(&id)) {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    id = format!("{base}-{n}");
                    n += 1;
                }
                Err(e) => return Err(e),
            }
        }
        let path = results_dir.join(&id);
        std::fs::create_dir_all(path.join("trials"))?;
        let run = RunDir { id, path };
        // The link is a convenience; a filesystem without symlinks must not stop a run.
        if let Err(e) = run.point_latest(results_dir) {
            eprintln!(
                "dfx-perf: could not update {}/latest: {e}",
                results_dir.display()
            );
        }
        Ok(run)
    }

    /// Points `latest` at this run: only a symlink (or nothing) of that name is replaced;
    /// a regular file or folder a user put there is left alone with an error, and the
    /// temporary link never outlives the call.
    #[cfg(unix)]
    fn point_latest(&self, results_dir: &Path) -> io::Result<()> {
        let latest = results_dir.join("latest");
        match std::fs::symlink_metadata(&latest) {
            Ok(m) if !m.file_type().is_symlink() => {
                let what = if m.is_dir() { "a folder" } else { "a file" };
                return Err(io::Error::other(format!(
                    "{what} named `latest` is there and is not a link dfx-perf made; left alone"
                )));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let tmp = results_dir.join(format!(".latest.tmp.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&self.id, &tmp)?;
        std::fs::rename(&tmp, &latest).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }

    #[cfg(not(unix))]
    fn point_latest(&self, _results_dir: &Path) -> io::Result<()> {
        Ok(())
    }

    /// `trials/<dir_name>` (the name is already sanitised by the planner; sanitised
    /// again here so no caller can leave the run folder).
    pub(crate) fn trial_dir(&self, dir_name: &str) -> PathBuf {
        self.path.join("trials").join(sanitize_component(dir_name))
    }

    /// `servers/`.
    pub(crate) fn servers_dir(&self) -> PathBuf {
        self.path.join("servers")
    }

    /// `run.json`.
    pub(crate) fn write_run_info(&self, info: &RunInfo) -> io::Result<()> {
        write_json_atomic(&self.path.join("run.json"), info)
    }
}

/// Content of `run.json` (the type lives in dfx-core's artefact module).
pub(crate) use dfx_core::artefact::RunInfo;

/// `git rev-parse HEAD` run in `dir`, if git and a repository are there.
pub(crate) fn git_sha(dir: &Path) -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(dir)
        .output()
        .ok()?;
    let sha = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !sha.is_empty()).then_some(sha)
}

/// sha256 of every readable config file, keyed by its path as displayed.
pub(crate) fn config_hashes(files: &[PathBuf]) -> std::collections::BTreeMap<String, String> {
    files
        .iter()
        .filter_map(|f| {
            let bytes =
                dfx_core::fsutil::read_bounded(f, dfx_core::bounds::MAX_CONFIG_BYTES).ok()?;
            Some((
                f.display().to_string(),
                dfx_history::ingest::sha256_hex(&bytes),
            ))
        })
        .collect()
}

/// The host name (`/proc/sys/kernel/hostname`, `$HOSTNAME`, else `unknown`).
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn run_ids_are_unique_and_latest_follows() {
        let dir = tempfile::tempdir().unwrap();
        let now = Local.with_ymd_and_hms(2026, 3, 1, 12, 30, 5).unwrap();
        let a = RunDir::create(dir.path(), "H100", now).unwrap();
        let b = RunDir::create(dir.path(), "H100", now).unwrap();
        let c = RunDir::create(dir.path(), "H100", now).unwrap();
        assert_eq!(a.id, "20260301-123005-H100");
        assert_eq!(b.id, "20260301-123005-H100-2");
        assert_eq!(c.id, "20260301-123005-H100-3");
        assert!(a.path.join("trials").is_dir());
        #[cfg(unix)]
        assert_eq!(
            std::fs::read_link(dir.path().join("latest")).unwrap(),
            PathBuf::from("20260301-123005-H100-3")
        );
    }

    #[cfg(unix)]
    #[test]
    fn latest_that_is_not_a_link_is_left_alone_without_stray_links() {
        let now = Local.with_ymd_and_hms(2026, 3, 1, 12, 30, 5).unwrap();
        for make in [
            (|p: &Path| std::fs::write(p, b"mine")) as fn(&Path) -> io::Result<()>,
            |p: &Path| std::fs::create_dir(p),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let latest = dir.path().join("latest");
            make(&latest).unwrap();
            let run = RunDir::create(dir.path(), "H100", now).unwrap();
            assert!(run.path.is_dir());
            let meta = std::fs::symlink_metadata(&latest).unwrap();
            assert!(!meta.file_type().is_symlink(), "user's `latest` replaced");
            if meta.is_file() {
                assert_eq!(std::fs::read(&latest).unwrap(), b"mine");
            }
            let names: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert!(
                names.iter().all(|n| !n.starts_with(".latest.tmp")),
                "stray temp link: {names:?}"
            );
        }
    }

    #[test]
    fn hostile_names_stay_inside_the_run_folder() {
        let dir = tempfile::tempdir().unwrap();
        let now = Local.with_ymd_and_hms(2026, 3, 1, 12, 30, 5).unwrap();
        let run = RunDir::create(dir.path(), "../../x", now).unwrap();
        assert!(run.path.starts_with(dir.path()));
        assert_eq!(run.path.parent(), Some(dir.path()));
        let t = run.trial_dir("../../x");
        assert!(t.starts_with(run.path.join("trials")), "{}", t.display());
        assert_eq!(t.parent(), Some(run.path.join("trials").as_path()));
    }

    #[test]
    fn git_sha_of_a_non_repository_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(git_sha(dir.path()), None);
    }
}
