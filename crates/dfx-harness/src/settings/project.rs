//! Where the project and its executables are: fixed at compile time by `tests/perf.rs`,
//! or found at run time by an installed `dfx-perf run` (wheel, release archive).

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use dfx_core::bench::Bench;
use dfx_core::server::ServerLauncher;

use super::{FlagError, ServerChoice, SetupError, err};

/// The simulator's executable name.
const SIM_EXE: &str = "dfx-perf-sim";
/// The guard's executable name.
const GUARD_EXE: &str = "dfx-perf-guard";

/// What `--root` must be, for error messages.
const ROOT_ACCEPTED: &str = "a dfx-perf project folder holding perf-configs/, deploy/ and \
                             baselines/ (a checkout or an unpacked release archive)";

/// Where the project lives and what it built: given by `tests/perf.rs`, or found by
/// [`Project::installed`] for `dfx-perf run`.
#[derive(Debug, Clone)]
pub struct Project {
    /// The project folder (`env!("CARGO_MANIFEST_DIR")` for the test binary, the current
    /// folder for `dfx-perf run`; `--root` replaces either): default `perf-configs/`,
    /// `deploy/`, `baselines/` and `target/` are found here.
    pub root: PathBuf,
    /// The simulator executable (`env!("CARGO_BIN_EXE_dfx-perf-sim")`).
    pub sim_bin: PathBuf,
    /// The guard executable (`env!("CARGO_BIN_EXE_dfx-perf-guard")`), started next to every
    /// server and external bench group to stop it if the suite dies (`dfx_server::guard`).
    pub guard_bin: PathBuf,
    /// The hidden `--server fake` / `--bench fake`: plugged in by the suite's test binary
    /// (from dfx-testkit, a dev-dependency); `None` for `dfx-perf run`, which has no fakes.
    pub test_seams: Option<TestSeams>,
}

/// The in-process fakes behind the hidden `--server fake` and `--bench fake`. They live in
/// dfx-testkit, which only tests link, so the harness takes them from its caller.
#[derive(Debug, Clone, Copy)]
pub struct TestSeams {
    /// `--server fake`: a launcher that starts nothing.
    pub launcher: fn() -> Box<dyn ServerLauncher + Send>,
    /// `--bench fake`: a deterministic bench; the error names a knob it cannot use.
    pub bench: fn() -> Result<Box<dyn Bench + Send>, FakeKnobError>,
}

/// Why the fake bench cannot start (a `DFX_FAKE_*` knob it cannot use); its type lives in
/// dfx-testkit.
pub type FakeKnobError = Box<dyn std::error::Error + Send + Sync>;

impl Project {
    /// The project of an installed `dfx-perf run`: the current folder as root; the
    /// simulator and the guard beside the running executable (a venv's `bin/`, an unpacked
    /// release archive's `bin/`, `target/release/`), else the first ones on PATH.
    pub fn installed() -> std::io::Result<Project> {
        let root = std::env::current_dir()?;
        let exe = std::env::current_exe()?;
        let dir = exe.parent().unwrap_or(Path::new("/"));
        let path = std::env::var_os("PATH");
        Ok(Project {
            root,
            sim_bin: companion(dir, SIM_EXE, path.as_deref()),
            guard_bin: companion(dir, GUARD_EXE, path.as_deref()),
            test_seams: None,
        })
    }

    /// This project with `root` (`--root`, made absolute) as its folder, when given.
    pub(crate) fn rooted(self, root: Option<&Path>) -> Project {
        match root {
            Some(r) => Project {
                root: std::path::absolute(r).unwrap_or_else(|_| r.to_path_buf()),
                ..self
            },
            None => self,
        }
    }

    /// The guard, which a run that executes trials needs whenever it may start a process
    /// (every server choice but the in-process fake). `--list` does not need it. A missing
    /// simulator is the launcher's to report: its trials are ignored with the path (failed
    /// under `--assert-baseline`), as for any unavailable server.
    pub(crate) fn check_guard(&self, server: &ServerChoice) -> Result<(), SetupError> {
        if matches!(server, ServerChoice::Fake) || is_executable(&self.guard_bin) {
            return Ok(());
        }
        Err(SetupError::NoGuard {
            exe: GUARD_EXE,
            path: self.guard_bin.clone(),
        })
    }
}

/// `--root` given but not a folder.
pub(super) fn check_root_given(root: Option<&Path>, errors: &mut Vec<FlagError>) {
    if let Some(r) = root.filter(|r| !r.is_dir()) {
        errors.push(err(
            "--root",
            "DFX_ROOT",
            r.display(),
            "no such folder",
            ROOT_ACCEPTED,
        ));
    }
}

/// The default perf-configs folder is missing: the root is not a project folder.
pub(super) fn no_configs_folder(root: &Path, dir: &Path) -> FlagError {
    err(
        "--root",
        "DFX_ROOT",
        root.display(),
        &format!(
            "no perf-configs/ folder in it (looked for {}; the root is --root, else the \
             current folder for `dfx-perf run`)",
            dir.display()
        ),
        &format!("{ROOT_ACCEPTED}, or config files named with --test-config-file"),
    )
}

/// `name` beside `dir`, else the first executable `name` on `path`; when neither exists,
/// the path beside `dir` (the run names it when it is needed).
fn companion(dir: &Path, name: &str, path: Option<&OsStr>) -> PathBuf {
    let beside = dir.join(name);
    if is_executable(&beside) {
        return beside;
    }
    path.into_iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
        .unwrap_or(beside)
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn companions_are_found_beside_the_executable_then_on_path() {
        let exe_dir = tempfile::tempdir().unwrap();
        let on_path = tempfile::tempdir().unwrap();
        let empty = tempfile::tempdir().unwrap();
        let path = std::env::join_paths([empty.path(), on_path.path()]).unwrap();
        let far = tool(on_path.path(), SIM_EXE, 0o755);
        assert_eq!(companion(exe_dir.path(), SIM_EXE, Some(&path)), far);
        let near = tool(exe_dir.path(), SIM_EXE, 0o755);
        assert_eq!(companion(exe_dir.path(), SIM_EXE, Some(&path)), near);
        // Not executable beside it: PATH's wins.
        tool(exe_dir.path(), GUARD_EXE, 0o644);
        let guard = tool(on_path.path(), GUARD_EXE, 0o755);
        assert_eq!(companion(exe_dir.path(), GUARD_EXE, Some(&path)), guard);
        // Nowhere: the place beside the executable, for the message.
        assert_eq!(
            companion(exe_dir.path(), "nope", Some(&path)),
            exe_dir.path().join("nope")
        );
        assert_eq!(
            companion(exe_dir.path(), "nope", None),
            exe_dir.path().join("nope")
        );
    }

    #[test]
    fn a_missing_guard_is_named_unless_nothing_is_started() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project {
            root: dir.path().into(),
            sim_bin: dir.path().join(SIM_EXE),
            guard_bin: tool(dir.path(), GUARD_EXE, 0o755),
            test_seams: None,
        };
        let auto = ServerChoice::Auto { server_bin: None };
        project.check_guard(&auto).unwrap();
        let no_guard = Project {
            guard_bin: dir.path().join("gone"),
            ..project
        };
        let e = no_guard.check_guard(&auto).unwrap_err().to_string();
        assert!(e.contains("the guard (dfx-perf-guard)"), "{e}");
        assert!(
            e.contains(&dir.path().join("gone").display().to_string()),
            "{e}"
        );
        no_guard.check_guard(&ServerChoice::Fake).unwrap();
    }

    #[test]
    fn rooted_replaces_the_root_with_an_absolute_one() {
        let p = Project {
            root: "/a".into(),
            sim_bin: "/s".into(),
            guard_bin: "/g".into(),
            test_seams: None,
        };
        assert_eq!(p.clone().rooted(None).root, PathBuf::from("/a"));
        let r = p.rooted(Some(Path::new("rel"))).root;
        assert!(r.is_absolute() && r.ends_with("rel"), "{}", r.display());
    }
}
