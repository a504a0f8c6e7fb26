//! Reading the diffusion script's `--output-file`: its keys in order (`duration`,
//! `completed_requests`, `failed_requests`, `throughput_qps`, `latency_*` in seconds,
//! `peak_memory_mb_*`, `stage_durations_*`, …), plus the keys upstream's record adds
//! that the verdict reads: `completed` / `failed` (copies of `completed_requests` /
//! `failed_requests`) and `result_source: "diffusion"`.

use std::path::Path;

use dfx_core::result::ResultDoc;
use serde_json::Value;

use crate::external::{ResultFileError, read_result};

/// Reads the output file (errors as for the vllm result file).
pub(crate) fn read(path: &Path) -> Result<ResultDoc, ResultFileError> {
    let mut doc = read_result(path)?;
    doc.insert("result_source".into(), Value::from("diffusion"));
    for (from, to) in [
        ("completed_requests", "completed"),
        ("failed_requests", "failed"),
    ] {
        if !doc.contains_key(to)
            && let Some(v) = doc.get(from).cloned()
        {
            doc.insert(to.into(), v);
        }
    }
    Ok(doc)
}
