//! Helpers of `suite_cli`: running the real suite (nested `cargo test` or the `perf`
//! binary) hermetically, and reading what it left in its results folder.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use libtest_mimic::Failed;
use serde_json::Value;

/// Set in every nested run: the nested `suite_cli` then runs no checks (no recursion).
pub const NESTED: &str = "DFX_SUITE_CLI_NESTED";

/// The repository root (the root package's manifest folder).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Path of a config under `tests/fixtures/suite_cli/`.
pub fn fixture(name: &str) -> String {
    root()
        .join("tests/fixtures/suite_cli")
        .join(name)
        .display()
        .to_string()
}

/// The cargo that runs this test (`$CARGO`), in the repository root.
pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// Flags that make the nested cargo build the same way this target was built.
pub fn profile_args() -> &'static [&'static str] {
    if cfg!(debug_assertions) {
        &["--offline"]
    } else {
        &["--offline", "--release"]
    }
}

/// Clears inherited `DFX_*` settings and sets the fakes, the fixture config, the results
/// folder and H100.
pub fn hermetic(cmd: &mut Command, config: &str, results: &Path) {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("DFX_") {
            cmd.env_remove(&k);
        }
    }
    cmd.env(NESTED, "1")
        .env("DFX_SERVER", "fake")
        .env("DFX_BENCH", "fake")
        .env("DFX_TEST_CONFIG_FILE", config)
        .env("DFX_RESULTS_DIR", results)
        .env("DFX_HARDWARE", "H100");
}

/// The `perf` test binary, built by (and located through) cargo once.
pub fn perf_bin() -> Result<&'static PathBuf, Failed> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| built(&["test", "--test", "perf", "--no-run"], "perf"))
        .as_ref()
        .map_err(|e| Failed::from(e.clone()))
}

/// dfx-testkit's `dfx-fake-server` (a stand-in for `vllm-omni serve` that really runs as
/// a process group), built by (and located through) cargo once ([`dfx_testkit::bin`]).
pub fn fake_server_bin() -> Result<&'static Path, Failed> {
    Ok(dfx_testkit::bin("dfx-fake-server"))
}

/// dfx-testkit's `dfx-fake-vllm` (a stand-in for `vllm bench serve --omni` that records
/// its argv), built by (and located through) cargo once.
pub fn fake_vllm_bin() -> Result<&'static Path, Failed> {
    Ok(dfx_testkit::bin("dfx-fake-vllm"))
}

/// Runs `cargo <args> --message-format=json` and returns the executable of `target`.
fn built(args: &[&str], target: &str) -> Result<PathBuf, String> {
    let out = cargo()
        .args(args)
        .arg("--message-format=json")
        .args(profile_args())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == target)
        .and_then(|v| v["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| {
            format!(
                "cargo did not report the {target} executable:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// A finished run of the suite and its results folder (removed on drop).
pub struct Run {
    pub out: Output,
    pub results: tempfile::TempDir,
}

impl Run {
    pub fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    pub fn both(&self) -> String {
        format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout(),
            self.stderr()
        )
    }
    /// The only run folder under the results folder.
    pub fn run_dir(&self) -> Result<PathBuf, Failed> {
        let dirs = run_dirs(self.results.path());
        match dirs.as_slice() {
            [one] => Ok(one.clone()),
            other => {
                Err(format!("expected one run folder, found {other:?}\n{}", self.both()).into())
            }
        }
    }
    pub fn summary(&self) -> Result<Value, Failed> {
        let path = self.run_dir()?.join("summary.json");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(serde_json::from_str(&text).map_err(|e| e.to_string())?)
    }
    /// (name, outcome) of every summary entry.
    pub fn outcomes(&self) -> Result<Vec<(String, String)>, Failed> {
        let s = self.summary()?;
        Ok(s["trials"]
            .as_array()
            .ok_or("summary.json has no trials array")?
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap_or_default().to_string(),
                    t["outcome"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect())
    }
}

/// The run folders (not the `latest` link, not the hidden `.dfx-live-servers` state
/// folder) under a results folder, sorted.
pub fn run_dirs(results: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.is_symlink())
        .collect();
    dirs.sort();
    dirs
}

/// Runs the perf binary with `args` and extra environment.
pub fn perf(config: &str, args: &[&str], env: &[(&str, &str)]) -> Result<Run, Failed> {
    perf_unset(config, args, env, &[])
}

/// [`perf`], with the hermetic variables named in `unset` removed again (to test their
/// defaults).
pub fn perf_unset(
    config: &str,
    args: &[&str],
    env: &[(&str, &str)],
    unset: &[&str],
) -> Result<Run, Failed> {
    let results = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(perf_bin()?);
    cmd.current_dir(root()).args(args);
    hermetic(&mut cmd, config, results.path());
    cmd.envs(env.iter().copied());
    for k in unset {
        cmd.env_remove(k);
    }
    let out = cmd.output().map_err(|e| format!("cannot run perf: {e}"))?;
    Ok(Run { out, results })
}

/// Runs the perf binary like [`perf`], writing into the given results folder (to check
/// what a second run does to an existing one).
pub fn perf_in(results: &Path, config: &str, args: &[&str]) -> Result<Output, Failed> {
    let mut cmd = Command::new(perf_bin()?);
    cmd.current_dir(root()).args(args);
    hermetic(&mut cmd, config, results);
    Ok(cmd.output().map_err(|e| format!("cannot run perf: {e}"))?)
}

/// Starts the perf binary like [`perf`] without waiting (output piped); the results
/// folder comes back with the child.
pub fn perf_spawn(
    config: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<(Child, tempfile::TempDir), Failed> {
    let results = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(perf_bin()?);
    cmd.current_dir(root())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    hermetic(&mut cmd, config, results.path());
    cmd.envs(env.iter().copied());
    let child = cmd.spawn().map_err(|e| format!("cannot run perf: {e}"))?;
    Ok((child, results))
}

/// `cargo test -- <args>` exactly as a user types it, from the repository root.
pub fn cargo_test(args: &[&str], env: &[(&str, &str)]) -> Result<Run, Failed> {
    let results = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut cmd = cargo();
    cmd.arg("test").args(profile_args()).arg("--").args(args);
    hermetic(&mut cmd, &fixture("tts_small.json"), results.path());
    cmd.envs(env.iter().copied());
    let out = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    Ok(Run { out, results })
}

/// `Ok` when `cond` holds, else a failure with `what` and the run's output.
pub fn check(cond: bool, what: &str, run: &Run) -> Result<(), Failed> {
    if cond {
        Ok(())
    } else {
        Err(format!("{what}\n{}", run.both()).into())
    }
}

/// The `dfx-perf` binary with `args`, without the inherited history and upstream-copy
/// settings (each test names its own).
pub fn dfx_perf_tool(args: &[&str]) -> Result<Output, Failed> {
    Ok(Command::new(env!("CARGO_BIN_EXE_dfx-perf"))
        .args(args)
        .env_remove("DFX_HISTORY")
        .env_remove("DFX_UPSTREAM_RESULTS_DIR")
        .output()
        .map_err(|e| format!("cannot run dfx-perf: {e}"))?)
}

/// A process's exit status, stdout and stderr, for failure messages.
pub fn output_text(o: &Output) -> String {
    format!(
        "status {:?}\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Writes `script` to `path` and makes it executable (fake tools, hooks).
pub fn write_executable(path: &Path, script: &str) -> Result<(), Failed> {
    std::fs::write(path, script)?;
    let mut perms = std::fs::metadata(path)?.permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(path, perms)?;
    Ok(())
}

/// The flags of [`sim_native`]: the simulator at speed 5, the native bench, hardware `SIMx5`.
pub const SIM_NATIVE: [&str; 8] = [
    "--server",
    "sim",
    "--sim-speed",
    "5",
    "--bench",
    "native",
    "--hardware",
    "SIMx5",
];

/// The `perf` binary on fixture `name` against the simulator at speed 5 with the native
/// bench (label SIMx5), `extra` flags and `env` added; waits for it.
pub fn sim_native(
    name: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<(Output, tempfile::TempDir), Failed> {
    let mut args = SIM_NATIVE.to_vec();
    args.extend(extra);
    let (child, results) = perf_spawn(&fixture(name), &args, env)?;
    Ok((child.wait_with_output()?, results))
}

/// Every artefact of the run folder satisfies its schema in docs/schema/ (the schemas are
/// generated from dfx-core's types; a dfx-core test keeps docs/ equal to them), and the
/// folder matches its manifest.json.
pub fn check_schemas(run_dir: &Path) -> Result<(), Failed> {
    dfx_core::artefact::manifest::verify(run_dir)
        .map_err(|e| format!("the run folder must match its manifest: {e}"))?;
    match dfx_core::artefact::schema::check_run_dir(run_dir) {
        Ok(n) if n >= 3 => Ok(()),
        Ok(n) => Err(format!("only {n} artefacts in {}", run_dir.display()).into()),
        Err(problems) => Err(format!("schema violations:\n{}", problems.join("\n")).into()),
    }
}
