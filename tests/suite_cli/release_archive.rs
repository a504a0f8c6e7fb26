//! `scripts/release-archive.sh`: the archive packs this build's executables with the
//! project folders, its checksum file verifies, and the unpacked archive runs the suite on
//! its own (`bin/dfx-perf run`: the simulator and guard beside it, the root its folder).

use std::path::Path;
use std::process::Command;

use libtest_mimic::Failed;

use crate::installed_run::{SIM, TRIAL, clean, output, perf_direct};
use crate::support::{output_text, root};

const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Packs the built executables (the folder of `CARGO_BIN_EXE_dfx-perf`), checks the
/// checksum and the contents, then lists and runs one trial from the unpacked archive.
pub fn archive_unpacks_and_runs_the_suite() -> Result<(), Failed> {
    if std::env::consts::ARCH != "x86_64" {
        return Ok(()); // The script refuses executables of another machine (checked below).
    }
    let work = tempfile::tempdir()?;
    let (dist, unpacked) = (work.path().join("dist"), work.path().join("unpacked"));
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_dfx-perf"))
        .parent()
        .ok_or("no parent")?;
    let script = root().join("scripts/release-archive.sh");
    let packed = output(Command::new(&script), &[TARGET, &s(bin_dir), &s(&dist)])?;
    let archive = String::from_utf8_lossy(&packed.stdout).trim().to_string();
    let version = env!("CARGO_PKG_VERSION");
    let name = format!("dfx-perf-{version}-{TARGET}");
    if !packed.status.success() || archive != s(&dist.join(format!("{name}.tar.gz"))) {
        return Err(format!("packing\n{}", output_text(&packed)).into());
    }
    let mut sum = Command::new("sha256sum");
    sum.current_dir(&dist);
    let verified = output(sum, &["-c", &format!("{name}.tar.gz.sha256")])?;
    std::fs::create_dir(&unpacked)?;
    let untar = output(
        Command::new("tar"),
        &["-xzf", &archive, "-C", &s(&unpacked)],
    )?;
    for (what, o) in [("sha256sum -c", &verified), ("tar -x", &untar)] {
        if !o.status.success() {
            return Err(format!("{what}\n{}", output_text(o)).into());
        }
    }
    let top = unpacked.join(&name);
    for part in [
        "bin/dfx-perf",
        "bin/dfx-perf-sim",
        "bin/dfx-perf-guard",
        "perf-configs/test_tts.json",
        "deploy/qwen3_tts.yaml",
        "baselines/SIM.json",
    ] {
        if !top.join(part).is_file() {
            return Err(format!("the archive has no {name}/{part}").into());
        }
    }

    let unpacked_run = |cwd: &Path, args: &[&str]| {
        let mut cmd = clean(Command::new(top.join("bin/dfx-perf")), cwd);
        cmd.env("PATH", "/usr/bin:/bin").arg("run");
        output(cmd, args)
    };
    let reference = perf_direct(&["--list"])?;
    let inside = unpacked_run(&top, &["--list"])?;
    let rooted = unpacked_run(work.path(), &["--root", &s(&top), "--list"])?;
    for (what, got) in [("from its folder", &inside), ("with --root", &rooted)] {
        if !got.status.success() || got.stdout != reference.stdout {
            return Err(format!(
                "the unpacked archive's --list ({what}) differs from the test binary's\n{}\n{}",
                output_text(got),
                output_text(&reference)
            )
            .into());
        }
    }

    let results = s(&work.path().join("results"));
    let args = [&["--exact", TRIAL, "--results-dir", &results][..], &SIM].concat();
    let trial = unpacked_run(&top, &args)?;
    if !trial.status.success() || !String::from_utf8_lossy(&trial.stdout).contains("1 passed") {
        return Err(format!("a trial from the archive\n{}", output_text(&trial)).into());
    }

    let wrong = output(
        Command::new(&script),
        &["aarch64-unknown-linux-gnu", &s(bin_dir), &s(&dist)],
    )?;
    let err = String::from_utf8_lossy(&wrong.stderr);
    if wrong.status.code() != Some(2) || !err.contains("not an ELF executable for aarch64") {
        return Err(format!(
            "x86_64 executables packed as aarch64\n{}",
            output_text(&wrong)
        )
        .into());
    }
    Ok(())
}

fn s(p: &Path) -> String {
    p.display().to_string()
}
