//! What can go wrong while setting up a group's supervision (its guard, its state file).

use std::path::PathBuf;

/// Problems while setting up supervision; they are reported as warnings, never fatal (the
/// group still runs and is still torn down by this process).
#[derive(Debug, thiserror::Error)]
pub enum SupervisionError {
    #[error("cannot start the guard {bin}: {source}")]
    GuardSpawn {
        bin: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the state file {path}: {source}")]
    StateFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("process {0} is not in /proc (exited before it could be supervised?)")]
    NoProcess(i32),
}
