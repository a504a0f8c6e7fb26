//! `baselines/<hardware>.json` through dfx-core's store (same validation as the suite
//! applies when it loads the file; written sorted with stable formatting).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dfx_core::baseline::{Store, parse_store, store_path};

use crate::ReportError;

/// Trial → metric → threshold.
pub(super) type StoreMap = BTreeMap<String, BTreeMap<String, f64>>;

/// `<dir>/<hardware>.json` (the label made safe as a file name).
pub fn store_file(dir: &Path, hardware: &str) -> PathBuf {
    store_path(dir, hardware)
}

/// Reads a store; a missing file is an empty store. Invalid content (bad JSON, unknown
/// metrics, non-numbers) is an error naming the file and the key.
pub fn read_store(path: &Path) -> Result<StoreMap, ReportError> {
    let text = match crate::error::read_text(path, dfx_core::bounds::MAX_CONFIG_BYTES) {
        Ok(t) => t,
        Err(ReportError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(StoreMap::new());
        }
        Err(e) => return Err(e),
    };
    parse_store(path, &text).map(|s| s.entries).map_err(|errs| {
        let lines: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        ReportError::Invalid(format!(
            "invalid baseline store:\n  - {}",
            lines.join("\n  - ")
        ))
    })
}

/// Writes a store atomically (trial names and metrics sorted, pretty, trailing newline).
pub fn write_store(path: &Path, store: &StoreMap) -> Result<(), ReportError> {
    let s = Store {
        file: path.to_path_buf(),
        entries: store.clone(),
    };
    s.write().map_err(|e| ReportError::io(path, e))
}
