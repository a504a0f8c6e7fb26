//! Building the merged run folder beside `--out`, then renaming it into place.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dfx_core::fsutil::write_json_atomic;
use serde_json::{Map, Value, json};

use super::{MergeError, Merged, Shard, check, copy, entries, file_name, read_shard};

/// The run folder's copy for upstream's report tools (written by the harness).
const UPSTREAM: &str = "upstream";

/// Merges the run folders `runs` into the new run folder `out` (see the module docs).
/// Nothing is written when a check fails; on any later error the half-built folder is
/// removed again.
pub fn merge(runs: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    if runs.is_empty() {
        return Err(MergeError::Empty);
    }
    check_out(out)?;
    let mut shards = runs
        .iter()
        .map(|d| read_shard(d))
        .collect::<Result<Vec<_>, _>>()?;
    distinct_folders(&shards)?;
    shards.sort_by_key(|s| s.partition.as_ref().map_or(0, |p| p.shard));
    check(&shards)?;
    let run_id = file_name(out);
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| MergeError::io(&parent, e))?;
    let tmp = parent.join(format!(".{run_id}.merging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let built = build(&shards, &tmp, &run_id).and_then(|m| {
        if out.is_dir() {
            std::fs::remove_dir(out).map_err(|e| MergeError::io(out, e))?;
        }
        std::fs::rename(&tmp, out).map_err(|e| MergeError::io(out, e))?;
        Ok(m)
    });
    match built {
        Ok(m) => Ok(Merged {
            dir: out.to_path_buf(),
            ..m
        }),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

/// `--out` must be new, or an empty folder, and name a usable run id.
fn check_out(out: &Path) -> Result<(), MergeError> {
    let id = file_name(out);
    if id.is_empty() || id.starts_with('.') || id.len() > 200 {
        return Err(MergeError::NotARun {
            path: out.to_path_buf(),
            why: "--out must end in a folder name (the merged run id, at most 200 characters, not starting with `.`)".into(),
        });
    }
    let taken = match std::fs::read_dir(out) {
        Ok(mut listing) => listing.next().is_some(),
        Err(_) => out.symlink_metadata().is_ok(),
    };
    if taken {
        return Err(MergeError::OutExists {
            path: out.to_path_buf(),
        });
    }
    Ok(())
}

fn distinct_folders(shards: &[Shard]) -> Result<(), MergeError> {
    let mut seen: BTreeMap<&Path, &Path> = BTreeMap::new();
    for s in shards {
        if let Some(prev) = seen.insert(&s.canonical, &s.dir) {
            return Err(MergeError::Overlap {
                what: "run folder",
                name: s.canonical.display().to_string(),
                a: prev.to_path_buf(),
                b: s.dir.clone(),
            });
        }
    }
    Ok(())
}

fn build(shards: &[Shard], tmp: &Path, run_id: &str) -> Result<Merged, MergeError> {
    let trials_dir = tmp.join("trials");
    std::fs::create_dir_all(&trials_dir).map_err(|e| MergeError::io(&trials_dir, e))?;
    for s in shards {
        for name in entries(&s.dir.join("trials")) {
            copy::tree(&s.dir.join("trials").join(&name), &trials_dir.join(&name))?;
        }
    }
    let servers = servers(shards, &tmp.join("servers"))?;
    upstream(shards, &tmp.join(UPSTREAM))?;
    for s in shards {
        let storage = s.dir.join("storage");
        if !entries(&storage).is_empty() {
            copy::tree(&storage, &tmp.join("storage").join(s.run_id()))?;
        }
    }
    let missing = missing_shards(shards);
    let summary = summary(shards, &servers, run_id, &missing);
    let count = |o: &str| {
        summary["trials"]
            .as_array()
            .map_or(0, |t| t.iter().filter(|t| t["outcome"] == o).count())
    };
    let merged = Merged {
        dir: tmp.to_path_buf(),
        run_id: run_id.to_string(),
        passed: count("passed"),
        failed: count("failed"),
        ignored: count("ignored"),
        interrupted: !summary["interrupted"].is_null(),
        missing_shards: missing.clone(),
    };
    write(&tmp.join("summary.json"), &summary)?;
    write(&tmp.join("run.json"), &run_json(shards, run_id, &missing))?;
    crate::write_run_reports(tmp)?;
    dfx_core::artefact::manifest::write(tmp).map_err(crate::ReportError::from)?;
    Ok(merged)
}

fn write(path: &Path, v: &Value) -> Result<(), MergeError> {
    write_json_atomic(path, v).map_err(|e| MergeError::io(path, e))
}

/// Copies every shard's `servers/NN-<name>` as the next start numbers, in shard order
/// (a judge folder `NN-<name>-judge` keeps its main server's number); per shard, the old
/// folder name → the new one.
fn servers(shards: &[Shard], dst: &Path) -> Result<Vec<BTreeMap<String, String>>, MergeError> {
    let mut next = 0;
    let mut maps = Vec::new();
    for s in shards {
        let mut numbers: BTreeMap<String, usize> = BTreeMap::new();
        let mut map = BTreeMap::new();
        for name in entries(&s.dir.join("servers")) {
            let (nn, rest) = name.split_once('-').unwrap_or(("", &name));
            let new = if nn.is_empty() || !nn.chars().all(|c| c.is_ascii_digit()) {
                format!("{}-{name}", s.run_id())
            } else {
                let n = *numbers.entry(nn.to_string()).or_insert_with(|| {
                    next += 1;
                    next
                });
                format!("{n:02}-{rest}")
            };
            std::fs::create_dir_all(dst).map_err(|e| MergeError::io(dst, e))?;
            copy::tree(&s.dir.join("servers").join(&name), &dst.join(&new))?;
            map.insert(name, new);
        }
        maps.push(map);
    }
    Ok(maps)
}

/// Copies every shard's `upstream/` files; two shards' diffusion session files of the
/// same name (JSON arrays) are concatenated, any other clash is an overlap.
fn upstream(shards: &[Shard], dst: &Path) -> Result<(), MergeError> {
    let mut from: BTreeMap<String, PathBuf> = BTreeMap::new();
    for s in shards {
        let src = s.dir.join(UPSTREAM);
        for name in entries(&src) {
            std::fs::create_dir_all(dst).map_err(|e| MergeError::io(dst, e))?;
            let target = dst.join(&name);
            match from.get(&name) {
                None => copy::tree(&src.join(&name), &target)?,
                Some(prev) => append_records(&src.join(&name), &target, &name, prev, &s.dir)?,
            }
            from.insert(name, s.dir.clone());
        }
    }
    Ok(())
}

fn append_records(
    src: &Path,
    target: &Path,
    name: &str,
    prev: &Path,
    dir: &Path,
) -> Result<(), MergeError> {
    let read = |p: &Path| -> Option<Vec<Value>> {
        let cap = dfx_core::bounds::MAX_RUN_FILE_BYTES;
        serde_json::from_str(&dfx_core::fsutil::read_text_bounded(p, cap).ok()?).ok()
    };
    match (read(target), read(src)) {
        (Some(mut a), Some(b)) => {
            a.extend(b);
            // Replace (never modify) the file: it may be a hard link to a shard's file.
            write(target, &Value::Array(a))
        }
        _ => Err(MergeError::Overlap {
            what: "upstream file",
            name: name.to_string(),
            a: prev.to_path_buf(),
            b: dir.to_path_buf(),
        }),
    }
}

/// The shards `K` of a partition that were not given.
fn missing_shards(shards: &[Shard]) -> Vec<u64> {
    let Some(total) = shards[0].partition.as_ref().map(|p| p.total) else {
        return Vec::new();
    };
    (1..=total)
        .filter(|k| {
            !shards
                .iter()
                .any(|s| s.partition.as_ref().is_some_and(|p| p.shard == *k))
        })
        .collect()
}

fn num(m: &Map<String, Value>, key: &str) -> Option<u64> {
    m.get(key).and_then(Value::as_u64)
}

/// `summary.json` of the merged run: every shard's trials in plan order (by their
/// `plan_index`; shard order where it is missing), server folders renamed, counts redone.
fn summary(
    shards: &[Shard],
    servers: &[BTreeMap<String, String>],
    run_id: &str,
    missing: &[u64],
) -> Value {
    let mut trials: Vec<Value> = Vec::new();
    for (s, map) in shards.iter().zip(servers) {
        for t in s.trials() {
            let mut t = t.clone();
            if let Some(old) = t["server"]
                .as_str()
                .and_then(|p| p.strip_prefix("servers/"))
                && let Some(new) = map.get(old)
            {
                t["server"] = json!(format!("servers/{new}"));
            }
            trials.push(t);
        }
    }
    trials.sort_by_key(|t| t["plan_index"].as_u64().unwrap_or(u64::MAX));
    let count = |o: &str| trials.iter().filter(|t| t["outcome"] == o).count();
    let first = &shards[0];
    let mut notes: Vec<Value> = Vec::new();
    for s in shards {
        for n in s
            .summary
            .get("notes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            notes.push(json!(format!(
                "{}: {}",
                s.label(),
                n.as_str().unwrap_or_default()
            )));
        }
    }
    if !missing.is_empty() {
        notes.push(json!(missing_note(first, missing)));
    }
    json!({
        "run_id": run_id,
        "hardware": first.summary.get("hardware"),
        "assert_baseline": first.summary.get("assert_baseline"),
        "passed": count("passed"),
        "failed": count("failed"),
        "ignored": count("ignored"),
        "needs_data": trials.iter().filter(|t| t["needs_data"] == true).count(),
        "filtered_out": filtered_out(shards),
        "server_starts": shards.iter().filter_map(|s| num(&s.summary, "server_starts")).sum::<u64>(),
        "notes": notes,
        "interrupted": interruption(shards),
        "trials": trials,
    })
}

fn missing_note(first: &Shard, missing: &[u64]) -> String {
    let p = first.partition.as_ref().map_or(0, |p| p.total);
    let list: Vec<String> = missing.iter().map(u64::to_string).collect();
    format!(
        "incomplete: shard(s) {} of {p} not merged; their trials are missing",
        list.join(", ")
    )
}

/// Planned trials that no shard selected: the plan size less every shard's selection.
fn filtered_out(shards: &[Shard]) -> u64 {
    let planned = num(&shards[0].run, "trials_planned");
    let selected: Option<u64> = shards.iter().map(|s| num(&s.run, "trials_selected")).sum();
    match (planned, selected) {
        (Some(p), Some(s)) => p.saturating_sub(s),
        _ => shards
            .iter()
            .filter_map(|s| num(&s.summary, "filtered_out"))
            .min()
            .unwrap_or(0),
    }
}

/// The shards' interruptions as one: the first interrupted trial, every trial not run.
fn interruption(shards: &[Shard]) -> Value {
    let all: Vec<&Value> = shards
        .iter()
        .filter_map(|s| s.summary.get("interrupted"))
        .filter(|v| !v.is_null())
        .collect();
    let Some(first) = all.first() else {
        return Value::Null;
    };
    let not_run: Vec<Value> = all
        .iter()
        .filter_map(|v| v["not_run"].as_array())
        .flatten()
        .cloned()
        .collect();
    json!({"trial": first["trial"], "trial_seconds": first["trial_seconds"], "not_run": not_run})
}

/// `run.json` of the merged run: the first shard's, with the run id, the earliest start,
/// the latest finish, the shards' selections, warnings and server versions combined,
/// `flags` = the flags every shard shares (without `--partition`), no `argv`, and
/// `merged_from` listing every shard run with its canonical folder, flags and argv.
fn run_json(shards: &[Shard], run_id: &str, missing: &[u64]) -> Value {
    let mut run = shards[0].run.clone();
    let strings = |key: &str| -> Vec<String> {
        shards
            .iter()
            .filter_map(|s| s.run.get(key)?.as_str().map(str::to_string))
            .collect()
    };
    let finished = strings("finished");
    let mut hosts = strings("hostname");
    hosts.sort();
    hosts.dedup();
    let mut warnings: Vec<Value> = Vec::new();
    let mut versions = Map::new();
    for s in shards {
        for w in s
            .run
            .get("warnings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
        if let Some(v) = s.run.get("server_versions").and_then(Value::as_object) {
            versions.extend(v.clone());
        }
    }
    let flags_of = |s: &Shard| -> Vec<Value> {
        s.run
            .get("flags")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    // a flag is the merged run's own only when every shard ran with it, as given
    let flags: Vec<Value> = flags_of(&shards[0])
        .into_iter()
        .filter(|f| f["flag"] != "--partition")
        .filter(|f| shards.iter().all(|s| flags_of(s).contains(f)))
        .collect();
    let set = |run: &mut Map<String, Value>, k: &str, v: Value| {
        run.insert(k.to_string(), v);
    };
    set(&mut run, "run_id", json!(run_id));
    set(&mut run, "flags", Value::from(flags));
    set(&mut run, "argv", json!([]));
    set(&mut run, "hostname", json!(hosts.join(", ")));
    set(
        &mut run,
        "started",
        json!(strings("started").into_iter().min()),
    );
    let all_finished = finished.len() == shards.len();
    set(
        &mut run,
        "finished",
        json!(finished.into_iter().max().filter(|_| all_finished)),
    );
    let interrupted = shards
        .iter()
        .any(|s| s.run.get("interrupted") == Some(&json!(true)));
    set(&mut run, "interrupted", json!(interrupted));
    let selected: u64 = shards
        .iter()
        .filter_map(|s| num(&s.run, "trials_selected"))
        .sum();
    set(&mut run, "trials_selected", json!(selected));
    set(&mut run, "warnings", Value::from(warnings));
    set(&mut run, "server_versions", Value::Object(versions));
    set(&mut run, "partition", Value::Null);
    set(
        &mut run,
        "merged_from",
        Value::from(shards.iter().map(shard_entry).collect::<Vec<_>>()),
    );
    set(&mut run, "shards_missing", json!(missing));
    Value::Object(run)
}

fn shard_entry(s: &Shard) -> Value {
    json!({
        "run_id": s.run_id(),
        "dir": s.canonical.display().to_string(),
        "partition": s.run.get("partition").cloned().unwrap_or(Value::Null),
        "hostname": s.run.get("hostname"),
        "started": s.run.get("started"),
        "finished": s.run.get("finished"),
        "trials": s.trials().len(),
        "flags": s.run.get("flags").cloned().unwrap_or_else(|| json!([])),
        "argv": s.run.get("argv").cloned().unwrap_or_else(|| json!([])),
    })
}
