//! `dfx-perf merge RUN… --out DIR`: the run folders of the shards of one run
//! (`--partition count:K/N` / `hash:K/N`) combined into one run folder, as if one runner
//! had run the whole plan: trial folders (hard-linked where possible, else copied), the
//! server folders renumbered in shard order, `upstream/`, a merged `summary.json`
//! (trials back in plan order) and `run.json` (listing the shard runs), then the reports.
//!
//! Refused, with nothing written, when a folder is not a finished run folder (no
//! `run.json` / `summary.json`), when the runs differ in hardware label, simulator speed,
//! bench tool, `--assert-baseline`, config files (name and sha256) or partition
//! (method and N), when a shard is given twice, or when two runs hold the same trial.
//! The merged folder is built beside `--out` and renamed into place at the end.

mod build;
mod copy;

pub use build::merge;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Why runs cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A folder that is not a finished dfx-perf run folder.
    #[error("{}: not a finished dfx-perf run folder: {why}", path.display())]
    NotARun {
        /// The folder (a shard given as a run, or `--out`).
        path: PathBuf,
        /// What is missing or malformed (`run.json`, `summary.json`, its `trials`), or
        /// why `--out` cannot name the merged run.
        why: String,
    },
    /// The runs are not shards of one run.
    #[error("the runs differ in {what}, so they are not shards of one run:\n{detail}")]
    Differ {
        /// What differs: `hardware label`, `simulator speed`, `bench tool`,
        /// `--assert-baseline`, `config files` or `partition (method and N)`.
        what: &'static str,
        /// One line per shard folder with its value, JSON-encoded.
        detail: String,
    },
    /// Two runs hold the same trial (or trial folder).
    #[error("{what} `{name}` is in both {} and {}; shards must not overlap", a.display(), b.display())]
    Overlap {
        /// What is held twice: `trial`, `trial folder`, `shard`, `run folder` or
        /// `upstream file`.
        what: &'static str,
        /// Its name (the trial, folder or file name, the shard's `K/N` spec, or the
        /// canonical path of a run folder given twice).
        name: String,
        /// The shard folder that held it first.
        a: PathBuf,
        /// The shard folder that holds it again.
        b: PathBuf,
    },
    /// `--out` exists and is not an empty folder.
    #[error("{}: exists and is not an empty folder; merge writes a new run folder", path.display())]
    OutExists {
        /// The `--out` folder.
        path: PathBuf,
    },
    /// No run folder given.
    #[error("no run folder to merge")]
    Empty,
    /// A file could not be read, copied or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The reports of the merged folder could not be written.
    #[error("reports: {0}")]
    Report(#[from] crate::ReportError),
}

impl MergeError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        MergeError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What was merged.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// The merged run folder (`--out`).
    pub dir: PathBuf,
    /// The merged run's id: the last component of `--out`.
    pub run_id: String,
    /// Trials of the merged `summary.json` whose outcome is `passed`.
    pub passed: usize,
    /// Trials whose outcome is `failed`.
    pub failed: usize,
    /// Trials whose outcome is `ignored`.
    pub ignored: usize,
    /// A shard was interrupted.
    pub interrupted: bool,
    /// Shards `K` of the partition that were not given (the merged run is incomplete).
    pub missing_shards: Vec<u64>,
}

impl Merged {
    /// Every trial passed or was ignored, no shard was interrupted or missing.
    pub fn passed(&self) -> bool {
        self.failed == 0 && !self.interrupted && self.missing_shards.is_empty()
    }
}

/// One shard's partition as its `run.json` records it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShardOf {
    pub spec: String,
    pub method: String,
    pub shard: u64,
    pub total: u64,
}

/// One run folder to merge, read.
#[derive(Debug, Clone)]
pub(crate) struct Shard {
    pub dir: PathBuf,
    /// `dir` resolved (a `latest` link followed): what the merged run records.
    pub canonical: PathBuf,
    pub run: Map<String, Value>,
    pub summary: Map<String, Value>,
    pub partition: Option<ShardOf>,
}

impl Shard {
    /// `run.json`'s `run_id`, else the folder name.
    pub(crate) fn run_id(&self) -> String {
        self.run
            .get("run_id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| file_name(&self.dir))
    }

    /// The trials of `summary.json`.
    pub(crate) fn trials(&self) -> &[Value] {
        self.summary
            .get("trials")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// `count:1/2`, or the run id of a whole run (for notes).
    pub(crate) fn label(&self) -> String {
        self.partition
            .as_ref()
            .map_or_else(|| self.run_id(), |p| format!("shard {}", p.spec))
    }
}

pub(crate) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads one folder: `run.json` and `summary.json` must be JSON objects, the summary with
/// a `trials` array.
pub(crate) fn read_shard(dir: &Path) -> Result<Shard, MergeError> {
    let not = |why: String| MergeError::NotARun {
        path: dir.to_path_buf(),
        why,
    };
    if !dir.is_dir() {
        return Err(not("no such folder".into()));
    }
    let object = |name: &str| -> Result<Map<String, Value>, MergeError> {
        let path = dir.join(name);
        let text = dfx_core::fsutil::read_text_bounded(&path, dfx_core::bounds::MAX_RUN_FILE_BYTES)
            .map_err(|e| not(format!("{name}: {}", e.problem())))?;
        match serde_json::from_str(&text) {
            Ok(Value::Object(o)) => Ok(o),
            Ok(_) => Err(not(format!("{name} is not a JSON object"))),
            Err(e) => Err(not(format!("{name}: {e}"))),
        }
    };
    let canonical = dir.canonicalize().map_err(|e| MergeError::io(dir, e))?;
    let run = object("run.json")?;
    let summary = object("summary.json")?;
    if !summary.get("trials").is_some_and(Value::is_array) {
        return Err(not("summary.json has no `trials` array".into()));
    }
    let partition = run.get("partition").and_then(shard_of);
    Ok(Shard {
        dir: dir.to_path_buf(),
        canonical,
        run,
        summary,
        partition,
    })
}

fn shard_of(v: &Value) -> Option<ShardOf> {
    Some(ShardOf {
        spec: v.get("spec")?.as_str()?.to_string(),
        method: v.get("method")?.as_str()?.to_string(),
        shard: v.get("shard")?.as_u64()?,
        total: v.get("total")?.as_u64()?,
    })
}

/// Every refusal that can be found before anything is written.
pub(crate) fn check(shards: &[Shard]) -> Result<(), MergeError> {
    for (what, key) in [
        ("hardware label", "hardware"),
        ("simulator speed", "sim_speed"),
        ("bench tool", "bench_tool"),
        ("--assert-baseline", "assert_baseline"),
    ] {
        same(shards, what, |s| {
            s.run.get(key).cloned().unwrap_or(Value::Null)
        })?;
    }
    same(shards, "config files", |s| config_identity(&s.run))?;
    no_overlap(shards, "trial", |s| {
        s.trials()
            .iter()
            .filter_map(|t| t.get("name")?.as_str().map(str::to_string))
            .collect()
    })?;
    no_overlap(shards, "trial folder", |s| entries(&s.dir.join("trials")))?;
    same(shards, "partition (method and N)", |s| {
        s.partition.as_ref().map_or(Value::Null, |p| {
            Value::String(format!("{}/{}", p.method, p.total))
        })
    })?;
    no_overlap(shards, "shard", |s| {
        s.partition.iter().map(|p| p.spec.clone()).collect()
    })?;
    Ok(())
}

/// The config files by file name, with their sha256 where recorded (`config_hashes`, or
/// objects in `config_files`): paths differ between runners, contents must not.
fn config_identity(run: &Map<String, Value>) -> Value {
    let hashes: BTreeMap<String, String> = run
        .get("config_hashes")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let mut files: Vec<String> = run
        .get("config_files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let (path, hash) = match f {
                Value::String(p) => (p.clone(), hashes.get(p).cloned()),
                Value::Object(o) => (
                    o.get("path")?.as_str()?.to_string(),
                    o.get("sha256").and_then(Value::as_str).map(str::to_string),
                ),
                _ => return None,
            };
            let name = file_name(Path::new(&path));
            Some(hash.map_or(name.clone(), |h| format!("{name} sha256:{h}")))
        })
        .collect();
    files.sort();
    Value::from(files)
}

fn same(
    shards: &[Shard],
    what: &'static str,
    key: impl Fn(&Shard) -> Value,
) -> Result<(), MergeError> {
    let first = key(&shards[0]);
    if shards.iter().all(|s| key(s) == first) {
        return Ok(());
    }
    let detail = shards
        .iter()
        .map(|s| format!("  {}: {}", s.dir.display(), key(s)))
        .collect::<Vec<_>>()
        .join("\n");
    Err(MergeError::Differ { what, detail })
}

fn no_overlap(
    shards: &[Shard],
    what: &'static str,
    names: impl Fn(&Shard) -> Vec<String>,
) -> Result<(), MergeError> {
    let mut seen: BTreeMap<String, &Path> = BTreeMap::new();
    for s in shards {
        for name in names(s) {
            if let Some(prev) = seen.insert(name.clone(), &s.dir) {
                return Err(MergeError::Overlap {
                    what,
                    name,
                    a: prev.to_path_buf(),
                    b: s.dir.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The names in a folder, sorted (none when it does not exist).
pub(crate) fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests;
