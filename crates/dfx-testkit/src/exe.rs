//! [`bin`]: the path of a test executable of another package.
//!
//! `env!("CARGO_BIN_EXE_<name>")` only names binaries of the package under test, so the
//! tests of dfx-server, dfx-bench, dfx-harness and the root package ask cargo instead:
//! once per process and executable, `$CARGO build -p dfx-testkit -p dfx-perf --bin NAME`
//! into the target folder of the running test (with its profile), and the executable cargo
//! reports. Up to date (after `cargo test --workspace --all-targets`, whose feature
//! resolution the nested build matches, or any earlier call) that is a no-op of about
//! 0.3 s; after a source change it rebuilds exactly what changed, so a test never runs a
//! stale executable. Cargo releases its build-folder lock once the outer build is done,
//! before any test runs, so the nested build cannot deadlock on it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The executables [`bin`] knows: dfx-testkit's own and the product's guard.
const KNOWN: [&str; 4] = [
    "dfx-fake-server",
    "dfx-launch-helper",
    "dfx-fake-vllm",
    "dfx-perf-guard",
];

/// The path of the test executable `name`, built (or found up to date) by cargo on the
/// first call in this process: `dfx-fake-server`, `dfx-launch-helper`, `dfx-fake-vllm`
/// (dfx-testkit) or `dfx-perf-guard` (the root package's guard).
///
/// # Panics
///
/// On an unknown name (the message lists the known ones), when the test does not run
/// under cargo (`$CARGO` unset), or when the build fails (with cargo's output): a test
/// cannot go on without its executable.
pub fn bin(name: &str) -> &'static Path {
    static BUILT: [OnceLock<PathBuf>; KNOWN.len()] = [const { OnceLock::new() }; KNOWN.len()];
    let Some(i) = KNOWN.iter().position(|k| *k == name) else {
        panic!("dfx_testkit::bin: unknown executable {name:?} (known: {KNOWN:?})");
    };
    BUILT[i].get_or_init(|| build(name))
}

/// Builds `name` with the cargo running this test and returns the executable it reports.
fn build(name: &str) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| {
        panic!(
            "dfx_testkit::bin({name:?}): $CARGO is not set; run the tests through cargo \
             (`cargo test`), which builds the test executables"
        )
    });
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace_root())
        .args([
            "build",
            "-p",
            "dfx-testkit",
            "-p",
            "dfx-perf",
            "--bin",
            name,
        ])
        .arg("--message-format=json-render-diagnostics");
    if let Some((target_dir, profile)) = test_target() {
        cmd.arg("--target-dir").arg(target_dir);
        cmd.arg("--profile").arg(profile);
    }
    let out = cmd.output().unwrap_or_else(|e| {
        panic!(
            "dfx_testkit::bin({name:?}): cannot run {} ({e})",
            Path::new(&cargo).display()
        )
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    match executable(&stdout, name) {
        Some(exe) if out.status.success() => exe,
        _ => panic!(
            "dfx_testkit::bin({name:?}): `{cmd:?}` did not build it ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The workspace root (this crate is `crates/dfx-testkit`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The target folder and cargo profile of the running test executable
/// (`<target>/<profile dir>/deps/<test>`); `None` when it does not sit there, and the
/// nested build then uses cargo's own default.
fn test_target() -> Option<(PathBuf, String)> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent().filter(|d| d.ends_with("deps"))?;
    let profile_dir = deps.parent()?;
    // The dev (and test) profile builds into `debug`; every other profile into its name.
    let profile = match profile_dir.file_name()?.to_str()? {
        "debug" => "dev".to_owned(),
        other => other.to_owned(),
    };
    Some((profile_dir.parent()?.to_path_buf(), profile))
}

/// The executable of binary target `name` in cargo's JSON messages.
fn executable(messages: &str, name: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_executable_comes_from_the_artifact_message_of_its_target() {
        let messages = concat!(
            r#"{"reason":"compiler-artifact","target":{"name":"dfx_core"},"executable":null}"#,
            "\n",
            "not json\n",
            r#"{"reason":"compiler-artifact","target":{"name":"dfx-fake-server"},"executable":"/t/debug/dfx-fake-server"}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(
            executable(messages, "dfx-fake-server"),
            Some(PathBuf::from("/t/debug/dfx-fake-server"))
        );
        assert_eq!(executable(messages, "dfx-fake-vllm"), None);
    }

    #[test]
    #[should_panic(expected = "unknown executable \"dfx-server-guard\"")]
    fn an_unknown_name_is_refused_with_the_known_ones() {
        bin("dfx-server-guard");
    }
}
