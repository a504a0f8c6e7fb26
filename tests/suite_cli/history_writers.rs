//! `dfx-perf history add` as real processes on one SQLite file: eight at a time for twenty
//! rounds, every run stored exactly once (without the write lock taken up front, some
//! fail with "database is locked"); then garbage written into the middle of that file
//! makes `history add` refuse it, naming the file, instead of reporting success.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use libtest_mimic::Failed;
use serde_json::Value;

use crate::manifest::copy_tree;
use crate::support::{check, dfx_perf_tool, fixture, output_text, perf};

const WRITERS: usize = 8;
const ROUNDS: usize = 20;

/// A copy of the run folder `src` as run `id` (its summary and run.json say so), with a
/// fresh manifest.
fn copy_as(src: &Path, dir: &Path, id: &str) -> Result<PathBuf, Failed> {
    let dst = dir.join(id);
    copy_tree(src, &dst)?;
    for f in ["summary.json", "run.json"] {
        let p = dst.join(f);
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p)?)?;
        v["run_id"] = id.into();
        std::fs::write(&p, serde_json::to_vec_pretty(&v)?)?;
    }
    dfx_core::artefact::manifest::write(&dst)?;
    Ok(dst)
}

fn add(db: &str, run: &Path) -> Result<std::process::Child, Failed> {
    Ok(Command::new(env!("CARGO_BIN_EXE_dfx-perf"))
        .args(["history", "--history", db, "add"])
        .arg(run)
        .env_remove("DFX_HISTORY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run dfx-perf: {e}"))?)
}

pub fn concurrent_adds_then_a_damaged_file() -> Result<(), Failed> {
    let run = perf(&fixture("tts_small.json"), &["test_qwen3_tts_base"], &[])?;
    check(run.code() == Some(0), "the run passes", &run)?;
    let src = run.run_dir()?;
    let tmp = tempfile::tempdir()?;
    let db = tmp.path().join("history.sqlite");
    let d = db.display().to_string();
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        let runs = (0..WRITERS)
            .map(|w| {
                copy_as(
                    &src,
                    tmp.path(),
                    &format!("20260102-{w:02}{round:02}00-H100"),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let children = runs
            .iter()
            .map(|r| add(&d, r))
            .collect::<Result<Vec<_>, _>>()?;
        for child in children {
            let out: Output = child.wait_with_output()?;
            if !out.status.success() {
                failures.push(output_text(&out));
            }
        }
        for r in runs {
            std::fs::remove_dir_all(r)?;
        }
    }
    if !failures.is_empty() {
        return Err(format!("{} add(s) failed:\n{}", failures.len(), failures.join("\n")).into());
    }
    let list = dfx_perf_tool(&["history", "--history", &d, "list"])?;
    let text = String::from_utf8_lossy(&list.stdout).into_owned();
    let want = format!("{} run(s)", WRITERS * ROUNDS);
    let rows = text.lines().filter(|l| l.starts_with("20260102-")).count();
    if !text.contains(&want) || rows != WRITERS * ROUNDS {
        return Err(format!("expected {want}, one line each: {}", output_text(&list)).into());
    }
    damaged_file_is_refused(&db, &src)
}

/// 8 KiB of garbage, page-aligned, into the middle of the history file: `history add`
/// exits 1 naming the file and saying it is damaged.
fn damaged_file_is_refused(db: &Path, src: &Path) -> Result<(), Failed> {
    use std::io::{Seek, SeekFrom, Write};
    let len = std::fs::metadata(db)?.len();
    let at = (len / 2) & !4095;
    let mut f = std::fs::OpenOptions::new().write(true).open(db)?;
    f.seek(SeekFrom::Start(at))?;
    f.write_all(&[0xA5; 8192])?;
    drop(f);
    let d = db.display().to_string();
    let out = dfx_perf_tool(&[
        "history",
        "--history",
        &d,
        "add",
        &src.display().to_string(),
    ])?;
    let text = output_text(&out);
    if out.status.code() != Some(1) || !text.contains(&d) || !text.contains("damaged") {
        return Err(format!("a damaged history ({len} bytes, garbage at {at}): {text}").into());
    }
    Ok(())
}
