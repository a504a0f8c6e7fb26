//! Run folders that prove themselves (`manifest.json`), against the real folders of the
//! shard/merge end-to-end test: the suite's and `merge`'s folders verify; a copy of a
//! shard with an edited, truncated or extra file, or a deleted trial folder, is refused by
//! `merge` naming the file; `report`, `compare` and `history add` refuse a tampered
//! folder and, with `--no-verify`, warn and go on; `report` keeps the manifest current.

use std::path::{Path, PathBuf};

use dfx_core::artefact::manifest;
use libtest_mimic::Failed;

use crate::support::{dfx_perf_tool, output_text};

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// A real copy (never hard links: tampering the copy must leave the original intact).
pub fn copy_tree(src: &Path, dst: &Path) -> Result<(), Failed> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &to)?;
        } else {
            std::fs::copy(entry.path(), &to)?;
        }
    }
    Ok(())
}

/// The first `trials/<name>/result.json` of a run folder, relative.
fn a_result(dir: &Path) -> Result<String, Failed> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("trials"))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| dir.join("trials").join(n).join("result.json").is_file())
        .collect();
    names.sort();
    let first = names.first().ok_or("no trial with a result.json")?;
    Ok(format!("trials/{first}/result.json"))
}

/// One way of tampering a copy; what the refusal must say.
type Tamper = fn(&Path, &str) -> Result<String, Failed>;

fn edit(dir: &Path, rel: &str) -> Result<String, Failed> {
    let p = dir.join(rel);
    let text = std::fs::read_to_string(&p)?;
    // Same length, one digit changed: only the hash can tell.
    let i = text.find(|c: char| c.is_ascii_digit()).ok_or("no digit")?;
    let d = if &text[i..=i] == "9" { "8" } else { "9" };
    std::fs::write(&p, format!("{}{d}{}", &text[..i], &text[i + 1..]))?;
    Ok(format!("{rel}: edited"))
}

fn truncate(dir: &Path, rel: &str) -> Result<String, Failed> {
    let p = dir.join(rel);
    let len = std::fs::metadata(&p)?.len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)?
        .set_len(len / 2)?;
    Ok(format!("{rel}: truncated"))
}

fn delete_trial(dir: &Path, rel: &str) -> Result<String, Failed> {
    let trial = Path::new(rel).parent().ok_or("no trial folder")?;
    std::fs::remove_dir_all(dir.join(trial))?;
    Ok(format!("{rel}: missing"))
}

fn extra(dir: &Path, rel: &str) -> Result<String, Failed> {
    let trial = Path::new(rel).parent().ok_or("no trial folder")?;
    let added = trial.join("notes.txt");
    std::fs::write(dir.join(&added), "added later")?;
    Ok(format!("{}: not in the manifest", added.display()))
}

const TAMPERS: [(&str, Tamper); 4] = [
    ("edit", edit),
    ("truncate", truncate),
    ("delete a trial folder", delete_trial),
    ("add a file", extra),
];

fn expect(args: &[&str], ok: bool, says: &[&str], what: &str) -> Result<String, Failed> {
    let out = dfx_perf_tool(args)?;
    let text = output_text(&out);
    let status_ok = if ok {
        out.status.code() != Some(1) && out.status.success()
    } else {
        out.status.code() == Some(1)
    };
    if !status_ok || says.iter().any(|s| !text.contains(s)) {
        return Err(format!("{what}: expected {says:?}, got {text}").into());
    }
    Ok(text)
}

/// `shard1` and `shard2` are the shards' folders, `merged` the merged one, `tmp` scratch.
pub fn tampered_folders_are_refused(
    shard1: &Path,
    shard2: &Path,
    merged: &Path,
    tmp: &Path,
) -> Result<(), Failed> {
    for dir in [shard1, shard2, merged] {
        manifest::verify(dir).map_err(|e| format!("a written folder must verify: {e}"))?;
    }
    let rel = a_result(shard1)?;
    for (i, (name, tamper)) in TAMPERS.iter().enumerate() {
        let copy = tmp.join(format!("tampered-{i}"));
        copy_tree(shard1, &copy)?;
        let says = tamper(&copy, &rel)?;
        let out = tmp.join(format!("merged-{i}"));
        let (c, s2, o) = (path(&copy), path(shard2), path(&out));
        expect(&["merge", &c, &s2, "--out", &o], false, &[&c, &says], name)?;
        if out.exists() {
            return Err(format!("{name}: merge wrote {o} though it refused").into());
        }
    }
    let copy = tmp.join("tampered-0");
    let c = path(&copy);
    let no_manifest = tmp.join("no-manifest");
    copy_tree(shard2, &no_manifest)?;
    std::fs::remove_file(no_manifest.join("manifest.json"))?;
    let n = path(&no_manifest);
    expect(
        &["merge", &n, &path(shard1), "--out", &path(&tmp.join("m"))],
        false,
        &["no manifest.json", "--no-verify"],
        "a shard without a manifest",
    )?;
    readers_refuse_and_no_verify_warns(&c, [&path(shard1), &path(shard2)], tmp)
}

/// `report`, `compare` (against its original, `shards[0]`), `history add` and `merge`
/// (with `shards[1]`) on the edited copy `c` of shard 1: refused, then accepted with
/// `--no-verify` and a warning on stderr.
fn readers_refuse_and_no_verify_warns(
    c: &str,
    shards: [&str; 2],
    tmp: &Path,
) -> Result<(), Failed> {
    let db = path(&tmp.join("h.sqlite"));
    let cmp = path(&tmp.join("cmp"));
    let merged = path(&tmp.join("merged-anyway"));
    let commands: [Vec<&str>; 4] = [
        vec!["report", c],
        vec!["compare", c, shards[0], "--out", &cmp],
        vec!["history", "--history", &db, "add", c],
        vec!["merge", c, shards[1], "--out", &merged],
    ];
    for args in commands {
        let what = args.join(" ");
        expect(&args, false, &[c, "edited", "--no-verify"], &what)?;
        let mut anyway = args.clone();
        anyway.push("--no-verify");
        expect(&anyway, true, &["WARNING: --no-verify", "edited"], &what)?;
    }
    // `report` rewrote three files: they are listed anew, the edit is still caught.
    match manifest::verify(Path::new(c)) {
        Err(manifest::ManifestError::Mismatch { problems, .. }) if problems.len() == 1 => {}
        other => return Err(format!("after report --no-verify: {other:?}").into()),
    }
    manifest::verify(Path::new(&merged)).map_err(|e| format!("merged anyway: {e}"))?;
    Ok(())
}

/// `dfx-perf report` on an intact folder keeps its manifest verifying.
pub fn report_keeps_the_manifest_current(run: &Path, tmp: &Path) -> Result<(), Failed> {
    let copy: PathBuf = tmp.join("report-copy");
    copy_tree(run, &copy)?;
    expect(&["report", &path(&copy)], true, &["report.html"], "report")?;
    manifest::verify(&copy).map_err(|e| format!("after report: {e}"))?;
    Ok(())
}
