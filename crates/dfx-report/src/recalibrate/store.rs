//! `baselines/<hardware>.json`: `{"<trial name>": {"<metric>": number}}`, written sorted
//! with stable formatting (two-space indent, trailing newline) so diffs stay small.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::ReportError;

/// Trial → metric → threshold.
pub type StoreMap = BTreeMap<String, BTreeMap<String, f64>>;

/// `<dir>/<hardware>.json` (the label made safe as a file name).
pub fn store_file(dir: &Path, hardware: &str) -> PathBuf {
    dir.join(format!("{}.json", dfx_core::fsutil::sanitize_component(hardware)))
}

/// Reads a store; a missing file is an empty store.
pub fn read_store(path: &Path) -> Result<StoreMap, ReportError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoreMap::new()),
        Err(e) => return Err(ReportError::io(path, e)),
    };
    serde_json::from_str(&text).map_err(|e| {
        ReportError::format(
            path,
            format!("not a baseline store ({e}); accepted: {{\"<trial name>\": {{\"<metric>\": <number>}}}}"),
        )
    })
}

/// Writes a store atomically.
pub fn write_store(path: &Path, store: &StoreMap) -> Result<(), ReportError> {
    dfx_core::fsutil::write_json_atomic(path, store).map_err(|e| ReportError::io(path, e))
}
