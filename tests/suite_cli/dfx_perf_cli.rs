//! The `dfx-perf` binary's non-test commands, as a shell user calls them.

use std::process::Command;

use libtest_mimic::Failed;

use crate::support::root;

/// Runs the built `dfx-perf` from the repository root.
pub fn dfx_perf(args: &[&str]) -> Result<std::process::Output, Failed> {
    Command::new(env!("CARGO_BIN_EXE_dfx-perf"))
        .current_dir(root())
        .env_remove("DFX_DEPLOY_DIR")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run dfx-perf: {e}").into())
}

/// `--deploy-config "$(dfx-perf deploy qwen3_tts_tuned)"`: the path alone, absolute, of
/// the file under deploy/; an unknown name exits 2 and lists what exists.
pub fn deploy_lookup_prints_a_path_for_the_shell() -> Result<(), Failed> {
    let out = dfx_perf(&["deploy", "qwen3_tts_tuned"])?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let path = std::path::Path::new(stdout.trim_end_matches('\n'));
    if !out.status.success() || stdout.lines().count() != 1 || !path.is_absolute() {
        return Err(format!(
            "expected one absolute path, got {:?} ({})",
            stdout, out.status
        )
        .into());
    }
    let expected = root()
        .join("deploy/qwen3_tts_tuned.yaml")
        .canonicalize()
        .map_err(|e| e.to_string())?;
    if path != expected {
        return Err(format!("{} is not {}", path.display(), expected.display()).into());
    }

    let list = dfx_perf(&["deploy"])?;
    let listed = String::from_utf8_lossy(&list.stdout);
    for name in ["qwen3_tts", "qwen3_tts_tuned", "voxcpm2"] {
        if !listed
            .lines()
            .any(|l| l.split_whitespace().next() == Some(name))
        {
            return Err(format!("`dfx-perf deploy` does not list {name}:\n{listed}").into());
        }
    }

    let bad = dfx_perf(&["deploy", "../etc/passwd"])?;
    let unknown = dfx_perf(&["deploy", "nope"])?;
    for (what, o) in [("a path", bad), ("an unknown name", unknown)] {
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(2) || !o.stdout.is_empty() || !err.contains("qwen3_tts_tuned") {
            return Err(format!(
                "{what}: expected exit 2, nothing on stdout, the available names on stderr; got {} {:?} {err}",
                o.status,
                String::from_utf8_lossy(&o.stdout)
            )
            .into());
        }
    }
    Ok(())
}

/// `dfx-perf … | head`: output to a reader that has gone away is dropped quietly, and the
/// command exits with its own status (0 here), as ripgrep does; no panic message.
pub fn output_to_a_closed_pipe_is_quiet() -> Result<(), Failed> {
    for args in [&["deploy"][..], &["deploy", "qwen3_tts_tuned"], &["--help"]] {
        let (reader, writer) = std::io::pipe().map_err(|e| e.to_string())?;
        // The reader is gone before dfx-perf writes its first byte.
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_dfx-perf"))
            .current_dir(root())
            .env_remove("DFX_DEPLOY_DIR")
            .args(args)
            .stdout(writer)
            .output()
            .map_err(|e| format!("cannot run dfx-perf: {e}"))?;
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(0) || !err.is_empty() {
            return Err(format!(
                "dfx-perf {args:?} with stdout closed: expected exit 0 and a silent stderr, got {} {err:?}",
                out.status
            )
            .into());
        }
    }
    Ok(())
}

/// `recalibrate --dry-run` on a run without thresholds and without `--metrics`: the empty
/// table is followed by why it is empty and what to pass.
pub fn recalibrate_dry_run_says_why_it_is_empty() -> Result<(), Failed> {
    let tmp = tempfile::tempdir()?;
    let baselines = tmp.path().display().to_string();
    let run = "crates/dfx-report/tests/fixtures/runs/sim-x4-passing";
    let out = dfx_perf(&[
        "recalibrate",
        "--dry-run",
        "--baselines-dir",
        &baselines,
        run,
    ])?;
    let text = crate::support::output_text(&out);
    let why = "nothing to calibrate: no trial of these runs has a threshold for `SIMx4`";
    if !out.status.success() || !text.contains(why) || !text.contains("--metrics median_") {
        return Err(format!("the empty result does not say why:\n{text}").into());
    }
    Ok(())
}

/// The suite binary's own `--help` (cargo's hashed file name) names how to call it and
/// starts with examples.
pub fn suite_help_names_the_cargo_command() -> Result<(), Failed> {
    let out = Command::new(crate::support::perf_bin()?)
        .arg("--help")
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let usage = format!("Usage: {}", dfx_harness::cli::USAGE);
    let lines: Vec<&str> = text.lines().collect();
    if !out.status.success()
        || lines.get(2) != Some(&usage.as_str())
        || lines.get(4) != Some(&"Examples:")
    {
        return Err(format!("--help head:\n{text}").into());
    }
    Ok(())
}
