//! `dfx-perf run`: the suite without cargo, as an installed binary runs it (from any
//! folder, the project found through `--root` / `DFX_ROOT` or the current folder), checked
//! against the `perf` test binary on the same arguments.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{NESTED, output_text, perf_bin, root, run_dirs};

/// A fast shipped trial (20 prompts at concurrency 1) and the simulator flags it runs with.
pub const TRIAL: &str = "test_qwen3_tts_customvoice::default_voice_latency_seed-tts-text::c1";
pub const SIM: [&str; 6] = ["--server", "sim", "--sim-speed", "4", "--bench", "native"];

/// `cmd` without inherited `DFX_*` settings (the shipped perf-configs are the default).
pub fn clean(mut cmd: Command, cwd: &Path) -> Command {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("DFX_") {
            cmd.env_remove(&k);
        }
    }
    cmd.current_dir(cwd).env(NESTED, "1");
    cmd
}

pub fn output(mut cmd: Command, args: &[&str]) -> Result<Output, Failed> {
    Ok(cmd
        .args(args)
        .output()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?)
}

/// `dfx-perf run ARGS` in `cwd`.
fn dfx_perf_run(cwd: &Path, args: &[&str]) -> Result<Output, Failed> {
    let mut cmd = clean(Command::new(env!("CARGO_BIN_EXE_dfx-perf")), cwd);
    cmd.arg("run");
    output(cmd, args)
}

/// The `perf` test binary with ARGS, from the repository root (as cargo runs it).
pub fn perf_direct(args: &[&str]) -> Result<Output, Failed> {
    output(clean(Command::new(perf_bin()?), root()), args)
}

fn same(what: &str, reference: &Output, got: &Output) -> Result<(), Failed> {
    if reference.status.code() == got.status.code()
        && reference.stdout == got.stdout
        && reference.stderr == got.stderr
    {
        return Ok(());
    }
    Err(format!(
        "{what}: differs from the test binary\n--- perf ---\n{}\n--- dfx-perf run ---\n{}",
        output_text(reference),
        output_text(got)
    )
    .into())
}

/// `dfx-perf run --list` (and `-- --list`, `--list-verbose`) prints what the test binary
/// prints, from the repository, from elsewhere with `--root`, and with `DFX_ROOT`.
pub fn list_equals_the_test_binary_list() -> Result<(), Failed> {
    let elsewhere = tempfile::tempdir()?;
    let repo = root().display().to_string();
    for args in [&["--list"][..], &["--list-verbose", "--server", "sim"]] {
        let reference = perf_direct(args)?;
        let listed = String::from_utf8_lossy(&reference.stdout);
        if !reference.status.success() || !listed.contains(": test") {
            return Err(format!("the test binary's listing\n{}", output_text(&reference)).into());
        }
        same(
            "from the repository",
            &reference,
            &dfx_perf_run(root(), args)?,
        )?;
        let mut rooted = vec!["--", "--root", repo.as_str()];
        rooted.extend(args);
        same(
            "-- --root REPO",
            &reference,
            &dfx_perf_run(elsewhere.path(), &rooted)?,
        )?;
        let mut cmd = clean(
            Command::new(env!("CARGO_BIN_EXE_dfx-perf")),
            elsewhere.path(),
        );
        cmd.env("DFX_ROOT", &repo).arg("run");
        same("DFX_ROOT=REPO", &reference, &output(cmd, args)?)?;
    }
    Ok(())
}

/// One shipped trial against the simulator: `dfx-perf run --root REPO` from another
/// folder passes like the test binary, writes its run folder where told (nothing into the
/// current folder) and its result.json has the test binary's keys.
pub fn sim_trial_from_another_folder_matches_the_test_binary() -> Result<(), Failed> {
    let elsewhere = tempfile::tempdir()?;
    let (ours, theirs) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let repo = root().display().to_string();
    let trial_args = |results: &Path| -> Vec<String> {
        let mut v: Vec<String> = ["--exact", TRIAL, "--results-dir"]
            .into_iter()
            .map(String::from)
            .collect();
        v.push(results.display().to_string());
        v.extend(SIM.iter().map(|s| s.to_string()));
        v
    };
    let reference_args = trial_args(theirs.path());
    let reference = perf_direct(
        &reference_args
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )?;
    let mut run_args = vec!["--root".to_string(), repo];
    run_args.extend(trial_args(ours.path()));
    let got = dfx_perf_run(
        elsewhere.path(),
        &run_args.iter().map(String::as_str).collect::<Vec<_>>(),
    )?;
    for (who, out) in [("perf", &reference), ("dfx-perf run", &got)] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !stdout.contains("test result: ok. 1 passed") {
            return Err(format!("{who}: one passed trial expected\n{}", output_text(out)).into());
        }
    }
    let leftovers: Vec<_> = std::fs::read_dir(elsewhere.path())?.flatten().collect();
    if !leftovers.is_empty() {
        return Err(format!("dfx-perf run wrote into the current folder: {leftovers:?}").into());
    }
    let (keys_theirs, keys_ours) = (result_keys(theirs.path())?, result_keys(ours.path())?);
    if keys_ours != keys_theirs || !keys_ours.contains("verdict") {
        return Err(format!(
            "result.json keys differ\nperf:         {keys_theirs:?}\ndfx-perf run: {keys_ours:?}"
        )
        .into());
    }
    Ok(())
}

/// Top-level keys of the one trial's result.json in the one run folder under `results`.
fn result_keys(results: &Path) -> Result<BTreeSet<String>, Failed> {
    let dirs = run_dirs(results);
    let [run] = dirs.as_slice() else {
        return Err(format!("expected one run folder under {}", results.display()).into());
    };
    let trials: Vec<_> = std::fs::read_dir(run.join("trials"))?.flatten().collect();
    let [trial] = trials.as_slice() else {
        return Err(format!("expected one trial folder in {}", run.display()).into());
    };
    let path = trial.path().join("result.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(v.as_object()
        .ok_or("result.json is not an object")?
        .keys()
        .cloned()
        .collect())
}

/// A folder that is no project (no `--root`) and a `--root` that does not exist: exit 2
/// naming what was looked for; a `dfx-perf` without its simulator or guard beside it.
pub fn a_missing_root_or_simulator_is_named() -> Result<(), Failed> {
    let empty = tempfile::tempdir()?;
    let here = dfx_perf_run(empty.path(), &["--list"])?;
    let looked_for = empty.path().join("perf-configs").display().to_string();
    expect_usage_error("no project here", &here, &["--root", &looked_for])?;
    let gone = empty.path().join("gone").display().to_string();
    let missing = dfx_perf_run(root(), &["--root", &gone, "--list"])?;
    expect_usage_error("a missing --root", &missing, &[&gone, "no such folder"])?;

    // A lone dfx-perf (same file, nothing beside it, nothing on PATH): the simulator's
    // trial is ignored naming where it was looked for; with the simulator beside it but no
    // guard, the run is refused before anything starts.
    let exe = Path::new(env!("CARGO_BIN_EXE_dfx-perf"));
    let bin_dir = exe.parent().ok_or("no parent")?;
    let alone = tempfile::tempdir_in(bin_dir)?;
    let link = |name: &str| -> Result<(), Failed> {
        let (from, to) = (bin_dir.join(name), alone.path().join(name));
        std::fs::hard_link(&from, &to).or_else(|_| std::fs::copy(&from, &to).map(|_| ()))?;
        Ok(())
    };
    link("dfx-perf")?;
    let repo = root().display().to_string();
    let results = empty.path().join("results").display().to_string();
    let args = [
        &["--root", &repo, "--exact", TRIAL, "--results-dir", &results][..],
        &SIM,
    ]
    .concat();
    let lone = || {
        let mut cmd = clean(Command::new(alone.path().join("dfx-perf")), empty.path());
        cmd.env("PATH", "/nonexistent").arg("run");
        output(cmd, &args)
    };
    let out = lone()?;
    let sim = alone.path().join("dfx-perf-sim").display().to_string();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if out.status.code() != Some(0) || !stdout.contains("1 ignored") || !stderr.contains(&sim) {
        return Err(format!(
            "no simulator: the trial ignored naming {sim}\n{}",
            output_text(&out)
        )
        .into());
    }
    link("dfx-perf-sim")?;
    let guard = alone.path().join("dfx-perf-guard").display().to_string();
    expect_usage_error("no guard", &lone()?, &["dfx-perf-guard", &guard, "PATH"])?;
    if Path::new(&results).exists() {
        return Err("a run that started nothing wrote a results folder".into());
    }
    Ok(())
}

fn expect_usage_error(what: &str, out: &Output, needles: &[&str]) -> Result<(), Failed> {
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(2)
        && out.stdout.is_empty()
        && needles.iter().all(|n| err.contains(n))
        && err.contains("nothing was started")
    {
        return Ok(());
    }
    Err(format!(
        "{what}: exit 2 naming {needles:?} expected\n{}",
        output_text(out)
    )
    .into())
}
