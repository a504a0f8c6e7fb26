//! `scripts/release-archive.sh`: the archive packs this build's executables with the
//! project folders, its checksum file verifies, and the unpacked archive runs the suite on
//! its own (`bin/dfx-perf run`: the simulator and guard beside it, the root its folder);
//! the release workflow that builds both on a tag is well formed.

use std::path::Path;
use std::process::Command;

use libtest_mimic::Failed;
use serde_json::Value;

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

/// The actions the release workflow may use, each pinned to a version that exists
/// (checked against the actions' repositories when the workflow was written).
const KNOWN_ACTIONS: [&str; 5] = [
    "actions/checkout@v4",
    "actions/upload-artifact@v4",
    "actions/download-artifact@v4",
    "PyO3/maturin-action@v1.51.0",
    "softprops/action-gh-release@v2",
];

/// `.github/workflows/release.yml` cannot run here: it parses, runs on version tags, builds
/// both architectures on native runners, uses only the known pinned actions, and pins the
/// same maturin as pyproject.toml and `.ci/run`.
pub fn release_workflow_parses_and_pins_what_ci_pins() -> Result<(), Failed> {
    let text = std::fs::read_to_string(root().join(".github/workflows/release.yml"))?;
    let doc: Value = yaml_serde::from_str(&text).map_err(|e| format!("release.yml: {e}"))?;
    if doc["on"]["push"]["tags"] != serde_json::json!(["v*"]) {
        return Err(format!("release.yml must run on v* tags: {}", doc["on"]).into());
    }
    let include = doc["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .ok_or("release.yml: no build matrix")?;
    let builds: Vec<(&str, &str)> = include
        .iter()
        .map(|m| {
            (
                m["target"].as_str().unwrap_or(""),
                m["runner"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let expected = [
        ("x86_64-unknown-linux-gnu", "ubuntu-24.04"),
        ("aarch64-unknown-linux-gnu", "ubuntu-24.04-arm"),
    ];
    if builds != expected {
        return Err(format!("release.yml builds {builds:?}, expected {expected:?}").into());
    }
    let jobs = doc["jobs"].as_object().ok_or("release.yml: no jobs")?;
    let steps: Vec<&Value> = jobs
        .values()
        .flat_map(|j| j["steps"].as_array().into_iter().flatten())
        .collect();
    for uses in steps.iter().filter_map(|s| s["uses"].as_str()) {
        if !KNOWN_ACTIONS.contains(&uses) {
            return Err(format!("release.yml uses {uses}, not one of {KNOWN_ACTIONS:?}").into());
        }
    }
    if doc["jobs"]["release"]["needs"] != "build"
        || doc["jobs"]["release"]["permissions"]["contents"] != "write"
    {
        return Err("the release job needs the builds and may write the release".into());
    }

    let pyproject = std::fs::read_to_string(root().join("pyproject.toml"))?;
    let pin = pyproject
        .lines()
        .find_map(|l| l.trim().strip_prefix("requires = [\"maturin=="))
        .and_then(|rest| rest.strip_suffix("\"]"))
        .ok_or("pyproject.toml: no exact maturin pin in [build-system] requires")?;
    let maturin = steps
        .iter()
        .find_map(|s| s["with"]["maturin-version"].as_str())
        .ok_or("release.yml: no maturin-version")?;
    let ci = std::fs::read_to_string(root().join(".ci/run"))?;
    if maturin != format!("v{pin}") || !ci.contains(&format!("maturin=={pin}")) {
        return Err(format!(
            "maturin pins differ: pyproject.toml {pin}, release.yml {maturin}, .ci/run must say maturin=={pin}"
        )
        .into());
    }
    let runs: String = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    if !runs.contains("scripts/release-archive.sh") || !runs.contains("dfx-perf run") {
        return Err(
            "release.yml must pack with scripts/release-archive.sh and run the suite".into(),
        );
    }
    Ok(())
}
