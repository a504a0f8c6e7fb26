//! `--partition` and `dfx-perf merge` end to end against the simulator: a three-group
//! fixture (`sim_shards.json`: groups a (c1, c2), b, c) run whole and as two `count`
//! shards (shard 2 through `DFX_PARTITION`), the shards merged; the merged run must hold
//! exactly the whole run's trials in plan order, with summary, reports, JUnit, the
//! upstream export and a history entry. Then the refusals of `merge` through the CLI, and
//! the manifests of the folders (`manifest.rs`).

use std::path::{Path, PathBuf};

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{Run, check, dfx_perf_tool, fixture, output_text, perf_unset};

/// Runs the suite with the simulator's own hardware label (SIMx10).
fn perf(config: &str, args: &[&str], env: &[(&str, &str)]) -> Result<Run, Failed> {
    perf_unset(config, args, env, &["DFX_HARDWARE"])
}

const TRIALS: [&str; 4] = [
    "test_shard_a::default_voice_seed-tts-text::c1",
    "test_shard_a::default_voice_seed-tts-text::c2",
    "test_shard_b::default_voice_seed-tts-text::c2",
    "test_shard_c::default_voice_seed-tts-text::c2",
];

const SIM: [&str; 6] = ["--server", "sim", "--sim-speed", "10", "--bench", "native"];

fn read(path: &Path) -> Result<Value, Failed> {
    let t = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(serde_json::from_str(&t)?)
}

/// (name, outcome) of every trial of a summary.json.
fn trial_set(summary: &Value) -> Vec<(String, String)> {
    summary["trials"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or_default().to_string();
            (s("name"), s("outcome"))
        })
        .collect()
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

fn shard(spec: &str, through_env: bool) -> Result<Run, Failed> {
    let config = fixture("sim_shards.json");
    let mut args = SIM.to_vec();
    let env: Vec<(&str, &str)> = if through_env {
        vec![("DFX_PARTITION", spec)]
    } else {
        args.extend(["--partition", spec]);
        vec![]
    };
    let run = perf(&config, &args, &env)?;
    check(run.code() == Some(0), &format!("shard {spec} passes"), &run)?;
    let info = read(&run.run_dir()?.join("run.json"))?;
    check(
        info["partition"]["spec"] == spec,
        "run.json records the partition",
        &run,
    )?;
    Ok(run)
}

pub fn shards_merge_into_the_whole_run() -> Result<(), Failed> {
    let config = fixture("sim_shards.json");
    listing_shows_the_shard(&config)?;
    let whole = perf(&config, &SIM, &[])?;
    check(whole.code() == Some(0), "the whole run passes", &whole)?;
    let whole_dir = whole.run_dir()?;
    let want = trial_set(&whole.summary()?);
    let names: Vec<&str> = want.iter().map(|(n, _)| n.as_str()).collect();
    check(names == TRIALS, "the whole run holds the plan", &whole)?;
    let one = shard("count:1/2", false)?;
    let two = shard("count:2/2", true)?;
    let (d1, d2) = (one.run_dir()?, two.run_dir()?);
    let shard_names = |r: &Run| -> Result<Vec<String>, Failed> {
        Ok(trial_set(&r.summary()?).into_iter().map(|t| t.0).collect())
    };
    // Groups a and c go to shard 1, b to shard 2; a's two trials stay together.
    check(
        shard_names(&one)? == [TRIALS[0], TRIALS[1], TRIALS[3]]
            && shard_names(&two)? == [TRIALS[2]],
        "count deals the groups round-robin",
        &two,
    )?;
    let tmp = tempfile::tempdir()?;
    let out = tmp.path().join("merged");
    let db = tmp.path().join("history.sqlite");
    // shard 2 given as its results folder's `latest` link: the merge records the folder
    let latest2 = d2
        .parent()
        .ok_or("run folder without parent")?
        .join("latest");
    let (o, d, h) = (path(&out), path(&db), [path(&latest2), path(&d1)]);
    let merged = dfx_perf_tool(&["merge", &h[0], &h[1], "--out", &o, "--history", &d])?;
    let shown = output_text(&merged);
    if merged.status.code() != Some(0) || !shown.contains("history: merged added") {
        return Err(format!("merge: {shown}").into());
    }
    let summary = read(&out.join("summary.json"))?;
    if trial_set(&summary) != want {
        return Err(format!("merged {:?} != whole {want:?}", trial_set(&summary)).into());
    }
    merged_folder_is_complete(&out, &whole_dir)?;
    merged_run_records_every_shard(&out, [&d1, &d2])?;
    let list = dfx_perf_tool(&["history", "--history", &d, "list"])?;
    if !String::from_utf8_lossy(&list.stdout).contains("1 run(s)") {
        return Err(format!("history list: {}", output_text(&list)).into());
    }
    refusals(tmp.path(), &d1, &whole_dir)?;
    crate::manifest::report_keeps_the_manifest_current(&whole_dir, tmp.path())?;
    crate::manifest::tampered_folders_are_refused(&d1, &d2, &out, tmp.path())
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// `--list` of a shard prints its trials only and starts nothing.
fn listing_shows_the_shard(config: &str) -> Result<(), Failed> {
    let run = perf(config, &["--list", "--partition", "count:2/2"], &[])?;
    let lines: Vec<String> = run
        .stdout()
        .lines()
        .filter(|l| l.ends_with(": test"))
        .map(str::to_string)
        .collect();
    check(
        lines == [format!("{}: test", TRIALS[2])] && run.code() == Some(0),
        "--list shows the shard's trials",
        &run,
    )?;
    let bad = perf(config, &["--list", "--partition", "count:3/2"], &[])?;
    check(
        bad.code() == Some(2) && bad.stderr().contains("--partition (DFX_PARTITION)"),
        "a bad --partition is a flag error",
        &bad,
    )
}

fn merged_folder_is_complete(out: &Path, whole: &Path) -> Result<(), Failed> {
    for f in ["run.json", "report.md", "report.html", "junit.xml"] {
        if !out.join(f).is_file() {
            return Err(format!("merged folder has no {f}").into());
        }
    }
    let junit = std::fs::read_to_string(out.join("junit.xml"))?;
    if junit.matches("<testcase ").count() != TRIALS.len() {
        return Err(format!("junit.xml: {junit}").into());
    }
    let upstream = count_files(&out.join("upstream"));
    if upstream != count_files(&whole.join("upstream")) || upstream != TRIALS.len() {
        return Err(format!("{upstream} upstream files").into());
    }
    if count_files(&out.join("servers")) != 3 {
        return Err("three server folders expected".into());
    }
    let run = read(&out.join("run.json"))?;
    let from = run["merged_from"].as_array().map_or(0, Vec::len);
    if from != 2 || !run["partition"].is_null() {
        return Err(format!("merged run.json: {run}").into());
    }
    Ok(())
}

/// `merged_from` holds each shard's canonical folder and its own `--results-dir`; the
/// merged run's flags do not claim one shard's results folder; the report shows both.
fn merged_run_records_every_shard(out: &Path, shards: [&Path; 2]) -> Result<(), Failed> {
    let run = read(&out.join("run.json"))?;
    let md = std::fs::read_to_string(out.join("report.md"))?;
    let results_dir = |flags: &Value| -> Option<String> {
        flags
            .as_array()?
            .iter()
            .find(|f| f["flag"] == "--results-dir")?["value"]
            .as_str()
            .map(str::to_string)
    };
    if results_dir(&run["flags"]).is_some() {
        return Err(format!("the merged run claims a shard's --results-dir: {run}").into());
    }
    for (i, dir) in shards.iter().enumerate() {
        let entry = &run["merged_from"][i];
        let real = dir.canonicalize()?.display().to_string();
        let own = results_dir(&entry["flags"])
            .and_then(|r| Path::new(&r).canonicalize().ok())
            .ok_or_else(|| format!("shard {i} has no --results-dir: {entry}"))?;
        let parent = dir.parent().and_then(|p| p.canonicalize().ok());
        if entry["dir"] != real.as_str() || Some(own) != parent {
            return Err(format!("shard {i} recorded as {entry}, is {real}").into());
        }
        if !md.contains(&real) {
            return Err(format!("report.md does not show {real}:\n{md}").into());
        }
    }
    Ok(())
}

/// Overlapping shards, a folder that is not a run and an existing `--out` are refused
/// with status 1, and nothing is written.
fn refusals(tmp: &Path, shard1: &Path, whole: &Path) -> Result<(), Failed> {
    let out = tmp.join("refused");
    let o = path(&out);
    let cases: [(Vec<String>, &str); 3] = [
        (vec![path(shard1), path(whole)], "shards must not overlap"),
        (
            vec![path(shard1), path(tmp), "--no-verify".into()],
            "not a finished dfx-perf run folder",
        ),
        (
            vec![path(shard1), "--out".into(), path(&tmp.join("merged"))],
            "not an empty folder",
        ),
    ];
    for (runs, want) in cases {
        let mut args: Vec<&str> = vec!["merge"];
        args.extend(runs.iter().map(String::as_str));
        if !runs.iter().any(|r| r == "--out") {
            args.extend(["--out", &o]);
        }
        let res = dfx_perf_tool(&args)?;
        if res.status.code() != Some(1) || !output_text(&res).contains(want) || out.exists() {
            return Err(format!("{want}: {}", output_text(&res)).into());
        }
    }
    let stray: Vec<PathBuf> = std::fs::read_dir(tmp)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    if !stray.is_empty() {
        return Err(format!("left behind: {stray:?}").into());
    }
    Ok(())
}
