//! The run folder's `upstream/` copy: each trial's result under the file name upstream's
//! runner gives it, so upstream's nightly report tools (`tools/nightly/
//! generate_nightly_perf_{excel,html}.py --input-dir <run>/upstream`) read the run unchanged.
//!
//! - omni trials: `result_test_<test>[_<name>][_<hw>]_<dataset>_<flow>_<n>_in<ri>_out<ro>_<stamp>.json`
//!   ([`dfx_bench::external::upstream_file_name`]), the trial's `result.json` document;
//! - diffusion trials: one record each, appended to the JSON array
//!   `diffusion_result_<config stem>[_<hw>]_<run stamp>.json` (upstream's per-config
//!   session file): `test_name`, `name`, `endpoint`, `baseline`, `result` (the script's
//!   document), `Hardware`, `Task`, `Dataset`, `completed`, `failed`, the headline
//!   metrics, `source_file`.
//!
//! A name already taken (same step in the same second) gets nothing: the first file wins
//! and the trial's own `result.json` still holds the result.

use std::path::{Path, PathBuf};

use dfx_core::fsutil::write_json_atomic;
use dfx_core::plan::{Dialect, Trial};
use dfx_core::result::ResultDoc;
use serde_json::{Map, Value, json};

/// The folder name inside the run folder.
pub(crate) const DIR_NAME: &str = "upstream";

/// Metrics copied to the top level of a diffusion record, as upstream's runner does.
const DIFFUSION_COLUMNS: &[&str] = &[
    "throughput_qps",
    "latency_mean",
    "latency_median",
    "latency_p99",
    "latency_p95",
    "latency_p50",
    "peak_memory_mb_max",
    "peak_memory_mb_mean",
    "peak_memory_mb_median",
];

/// Why the upstream-format copy of a result was not written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CopyError {
    /// The folder cannot be created.
    #[error("cannot create {}: {source}", path.display())]
    Create {
        /// The folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file exists (a result is never overwritten).
    #[error("{} exists already; not overwritten", .0.display())]
    Exists(PathBuf),
    /// The file cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// Writes `doc` (the trial's completed result) into `dir`; the path written, or why not.
pub(crate) fn write(
    dir: &Path,
    trial: &Trial,
    hardware: &str,
    doc: &ResultDoc,
    run_stamp: &str,
    stamp: &str,
) -> Result<PathBuf, CopyError> {
    std::fs::create_dir_all(dir).map_err(|source| CopyError::Create {
        path: dir.to_path_buf(),
        source,
    })?;
    if trial.entry.dialect == Dialect::Diffusion {
        return append_diffusion(dir, trial, hardware, doc, run_stamp);
    }
    let path = dir.join(dfx_bench::external::upstream_file_name(
        trial, hardware, stamp,
    ));
    if path.exists() {
        return Err(CopyError::Exists(path));
    }
    let mut doc = doc.clone();
    doc.remove("verdict");
    doc.remove("thresholds");
    write_json_atomic(&path, &doc).map_err(|source| CopyError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

fn append_diffusion(
    dir: &Path,
    trial: &Trial,
    hardware: &str,
    doc: &ResultDoc,
    run_stamp: &str,
) -> Result<PathBuf, CopyError> {
    let stem = trial
        .source
        .file
        .file_stem()
        .map_or("config".into(), |s| s.to_string_lossy().into_owned());
    let hw = match hardware {
        "H100" => String::new(),
        "" => "_na".into(),
        h => format!("_{}", dfx_core::fsutil::sanitize_component(h)),
    };
    let path = dir.join(format!("diffusion_result_{stem}{hw}_{run_stamp}.json"));
    let read = dfx_core::fsutil::read_text_bounded(&path, dfx_core::bounds::MAX_RUN_FILE_BYTES);
    let mut records: Vec<Value> = match read {
        Ok(text) => serde_json::from_str(&text).unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let mut result = doc.clone();
    result.remove("verdict");
    result.remove("thresholds");
    let get = |k: &str| doc.get(k).cloned().unwrap_or(Value::Null);
    let mut rec = Map::new();
    rec.insert("test_name".into(), json!(trial.test_name));
    rec.insert("name".into(), json!(trial.entry.name));
    rec.insert("endpoint".into(), json!(trial.entry.endpoint));
    rec.insert("baseline".into(), get("baseline"));
    rec.insert("result".into(), Value::Object(result));
    rec.insert("Model".into(), json!(trial.server.model));
    rec.insert("Hardware".into(), get("Hardware"));
    rec.insert("Task".into(), json!(trial.entry.task));
    rec.insert("Dataset".into(), json!(trial.entry.dataset_name));
    rec.insert(
        "max_concurrency".into(),
        json!(trial.step.max_concurrency()),
    );
    rec.insert("completed".into(), get("completed"));
    rec.insert("failed".into(), get("failed"));
    for k in DIFFUSION_COLUMNS {
        rec.insert((*k).into(), get(k));
    }
    rec.insert(
        "source_file".into(),
        json!(trial.source.file.file_name().map(|n| n.to_string_lossy())),
    );
    records.push(Value::Object(rec));
    write_json_atomic(&path, &Value::Array(records)).map_err(|source| CopyError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}
