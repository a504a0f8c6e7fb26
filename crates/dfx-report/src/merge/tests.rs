use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;

/// A finished shard run folder: `trials` are (name, plan index, outcome), each with a
/// result file and a server folder of its own.
fn shard(root: &Path, id: &str, spec: Option<(u64, u64)>, trials: &[(&str, u64, &str)]) -> PathBuf {
    let dir = root.join(id);
    let mut entries = Vec::new();
    for (n, (name, idx, outcome)) in trials.iter().enumerate() {
        let folder = name.replace("::", "__");
        let t = dir.join("trials").join(&folder);
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(t.join("result.json"), r#"{"completed": 2, "failed": 0}"#).unwrap();
        let server = format!("{:02}-test", n + 1);
        std::fs::create_dir_all(dir.join("servers").join(&server)).unwrap();
        std::fs::write(dir.join("servers").join(&server).join("server.log"), id).unwrap();
        entries.push(json!({
            "name": name, "plan_index": idx, "test_name": "test", "suffix": "s",
            "step": "c1", "kind": "concurrency", "max_concurrency": 1, "num_prompts": 2,
            "outcome": outcome, "failures": [], "breaches": [], "warnings": [],
            "thresholds": [], "needs_data": true,
            "metrics": {"completed": 2, "failed": 0},
            "result": format!("trials/{folder}/result.json"),
            "server": format!("servers/{server}"), "server_started": true, "seconds": 1.0,
        }));
    }
    std::fs::create_dir_all(dir.join("upstream")).unwrap();
    std::fs::write(dir.join("upstream").join(format!("result_{id}.json")), "{}").unwrap();
    let partition = spec.map(|(k, n)| {
        json!({"spec": format!("count:{k}/{n}"), "method": "count", "shard": k, "total": n,
               "server_groups": 3, "server_groups_in_shard": trials.len()})
    });
    let run = json!({
        "run_id": id, "hardware": "SIMx5", "sim_speed": 5.0, "bench_tool": "native",
        "assert_baseline": false, "hostname": format!("host-{id}"),
        "flags": [{"flag": "--partition", "value": "x", "source": "cli"},
                  {"flag": "--server", "value": "sim", "source": "cli"}],
        "config_files": ["/runner/perf-configs/a.json"],
        "config_hashes": {"/runner/perf-configs/a.json": "abc"},
        "started": format!("2026-12-01T00:00:0{}+00:00", spec.map_or(0, |s| s.0)),
        "finished": "2026-12-01T00:01:00+00:00", "interrupted": false,
        "trials_planned": 4, "trials_selected": trials.len(), "warnings": ["w"],
        "server_versions": {"dfx-perf-sim": "0.1.0"}, "partition": partition,
    });
    let summary = json!({
        "run_id": id, "hardware": "SIMx5", "assert_baseline": false,
        "passed": 0, "failed": 0, "ignored": 0, "needs_data": 0,
        "filtered_out": 4 - trials.len(), "server_starts": trials.len(),
        "notes": ["a note"], "interrupted": null, "trials": entries,
    });
    std::fs::write(dir.join("run.json"), run.to_string()).unwrap();
    std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
    dir
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn edit(dir: &Path, file: &str, f: impl FnOnce(&mut Value)) {
    let mut v = read(&dir.join(file));
    f(&mut v);
    std::fs::write(dir.join(file), v.to_string()).unwrap();
}

fn two_shards(root: &Path) -> (PathBuf, PathBuf) {
    let a = shard(
        root,
        "r1",
        Some((1, 2)),
        &[("t::a::c1", 0, "passed"), ("t::c::c1", 2, "passed")],
    );
    let b = shard(root, "r2", Some((2, 2)), &[("t::b::c1", 1, "failed")]);
    (a, b)
}

/// Nothing at `out`, and no half-built folder beside it.
fn nothing_written(root: &Path, out: &Path) {
    assert!(!out.exists());
    let stray: Vec<String> = entries(root)
        .into_iter()
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

#[test]
fn two_shards_become_one_run_in_plan_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = two_shards(tmp.path());
    let out = tmp.path().join("merged");
    // Given in any order: shard order decides.
    let m = merge(&[b.clone(), a.clone()], &out).unwrap();
    assert_eq!((m.passed, m.failed, m.ignored), (2, 1, 0));
    assert!(!m.passed() && m.missing_shards.is_empty() && m.run_id == "merged");
    let s = read(&out.join("summary.json"));
    let names: Vec<&str> = s["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["t::a::c1", "t::b::c1", "t::c::c1"]);
    assert_eq!(
        (s["failed"].as_u64(), s["filtered_out"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(s["server_starts"], 3);
    // Shard 1's servers keep 01, 02; shard 2's 01 becomes 03.
    assert_eq!(s["trials"][1]["server"], "servers/03-test");
    assert_eq!(
        std::fs::read_to_string(out.join("servers/03-test/server.log")).unwrap(),
        "r2"
    );
    assert_eq!(s["notes"][0], "shard count:1/2: a note");
    for f in [
        "trials/t__b__c1/result.json",
        "upstream/result_r1.json",
        "upstream/result_r2.json",
        "report.md",
        "report.html",
        "junit.xml",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let run = read(&out.join("run.json"));
    assert_eq!(run["run_id"], "merged");
    assert_eq!(run["partition"], Value::Null);
    assert_eq!(run["trials_selected"], 3);
    assert_eq!(run["hostname"], "host-r1, host-r2");
    assert_eq!(run["started"], "2026-12-01T00:00:01+00:00");
    assert_eq!(
        run["flags"].as_array().unwrap().len(),
        1,
        "--partition dropped"
    );
    let from: Vec<&str> = run["merged_from"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(from, ["r1", "r2"]);
    assert_eq!(run["merged_from"][1]["partition"]["spec"], "count:2/2");
    // The shards are left as they were.
    assert!(a.join("summary.json").is_file() && !a.join("report.md").exists());
}

#[test]
fn one_run_merges_and_a_missing_shard_is_noted() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = shard(tmp.path(), "whole", None, &[("t::a::c1", 0, "passed")]);
    let m = merge(&[whole], &tmp.path().join("m1")).unwrap();
    assert!(m.passed());
    let (a, _) = two_shards(tmp.path());
    std::fs::create_dir(tmp.path().join("m2")).unwrap(); // an empty folder is fine
    let m = merge(&[a], &tmp.path().join("m2")).unwrap();
    assert_eq!(m.missing_shards, [2]);
    assert!(!m.passed());
    let s = read(&tmp.path().join("m2/summary.json"));
    assert!(
        s["notes"]
            .to_string()
            .contains("incomplete: shard(s) 2 of 2"),
        "{s}"
    );
}

#[test]
fn refusals_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("runs");
    std::fs::create_dir(&root).unwrap();
    let (a, b) = two_shards(&root);
    let out = tmp.path().join("out").join("merged");
    let refused = |runs: &[PathBuf], want: &str| {
        let e = merge(runs, &out).unwrap_err().to_string();
        assert!(e.contains(want), "{want}: {e}");
        nothing_written(tmp.path(), &out);
        assert!(!tmp.path().join("out").exists());
    };
    refused(&[a.clone(), a.clone()], "run folder");
    refused(
        &[tmp.path().join("nope")],
        "not a finished dfx-perf run folder",
    );
    refused(std::slice::from_ref(&root), "run.json");
    refused(&[], "no run folder");

    let c = shard(&root, "r3", Some((2, 2)), &[("t::a::c1", 0, "passed")]);
    refused(&[a.clone(), c], "trial `t::a::c1` is in both");
    let f = shard(&root, "r6", Some((1, 2)), &[("t::f::c1", 3, "passed")]);
    refused(&[a.clone(), f], "shard `count:1/2` is in both");

    let d = shard(&root, "r4", Some((2, 3)), &[("t::d::c1", 3, "passed")]);
    refused(&[a.clone(), d], "differ in partition");
    let e = shard(&root, "r5", Some((2, 2)), &[("t::e::c1", 3, "passed")]);
    edit(&e, "run.json", |r| r["hardware"] = json!("H100"));
    refused(&[a.clone(), e.clone()], "differ in hardware label");
    edit(&e, "run.json", |r| r["hardware"] = json!("SIMx5"));
    edit(&e, "run.json", |r| {
        r["config_hashes"]["/runner/perf-configs/a.json"] = json!("def")
    });
    refused(&[a.clone(), e.clone()], "differ in config files");
    // Another path to the same file contents is the same config.
    edit(&e, "run.json", |r| {
        r["config_files"] = json!(["/other/perf-configs/a.json"]);
        r["config_hashes"] = json!({"/other/perf-configs/a.json": "abc"});
    });
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("x"), "").unwrap();
    let err = merge(&[a.clone(), e.clone()], &out)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not an empty folder"), "{err}");
    std::fs::remove_dir_all(tmp.path().join("out")).unwrap();
    merge(&[a, e], &out).unwrap();
    assert!(b.is_dir());
}

/// The merged run keeps every shard's own flags and real folder: its `flags` are only
/// those all shards share, `merged_from` has each shard's flags, argv and canonical
/// folder (a `latest` link resolved), and the report shows them.
#[test]
fn every_shard_keeps_its_flags_and_resolved_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = two_shards(tmp.path());
    for (dir, results) in [(&a, "/ci/shard1"), (&b, "/ci/shard2")] {
        edit(dir, "run.json", |r| {
            let flags = r["flags"].as_array_mut().unwrap();
            flags.push(json!({"flag": "--results-dir", "value": results, "source": "cli"}));
            flags.push(json!({"flag": "--history", "value": "/ci/h.sqlite", "source": "env"}));
            r["argv"] = json!(["perf", "--results-dir", results]);
        });
    }
    let latest = tmp.path().join("latest");
    std::os::unix::fs::symlink(&b, &latest).unwrap();
    let out = tmp.path().join("merged");
    merge(&[a.clone(), latest.clone()], &out).unwrap();
    let run = read(&out.join("run.json"));
    let flags: Vec<&str> = run["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["flag"].as_str().unwrap())
        .collect();
    assert_eq!(flags, ["--server", "--history"], "only the shared flags");
    assert_eq!(run["argv"], json!([]));
    let from = run["merged_from"].as_array().unwrap();
    assert_eq!(from[0]["flags"][2]["value"], "/ci/shard1");
    assert_eq!(from[1]["flags"][2]["value"], "/ci/shard2");
    assert_eq!(from[1]["argv"][2], "/ci/shard2");
    let real_b = b.canonicalize().unwrap();
    assert_eq!(
        from[1]["dir"],
        real_b.display().to_string(),
        "the link resolved"
    );
    assert_eq!(
        from[0]["dir"],
        a.canonicalize().unwrap().display().to_string()
    );
    // the typed model reads it, and the report shows each shard
    let loaded = crate::load_run(&out).unwrap();
    assert_eq!(loaded.info.merged_from.len(), 2);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| flags (every shard) | --server sim --history /ci/h.sqlite |"),
        "{md}"
    );
    for (dir, results) in [(&a, "/ci/shard1"), (&real_b, "/ci/shard2")] {
        let row = md
            .lines()
            .find(|l| l.contains(&format!("--results-dir {results}")))
            .unwrap_or_else(|| panic!("no shard row for {results}:\n{md}"));
        assert!(row.starts_with("| shard | count:"), "{row}");
        assert!(
            row.contains(&dir.canonicalize().unwrap().display().to_string()),
            "{row}"
        );
    }
    assert!(!md.contains("latest"), "{md}");
}
