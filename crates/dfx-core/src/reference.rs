//! Where the upstream reference data lives: `tests/reference/` in the repository
//! (vllm-omni's perf configs, deploy files, result template and real `vllm bench` output;
//! see `tests/reference/README.md`), for the project's tests and scripts that compare
//! against it.

use std::path::{Path, PathBuf};

/// The environment variable that points at another reference folder (one with the same
/// layout, e.g. a refreshed copy under review).
pub const ENV: &str = "DFX_REFERENCE_DIR";

/// The copy shipped in the repository.
pub(crate) fn shipped_dir() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    repo.canonicalize().unwrap_or(repo).join("tests/reference")
}

/// Where the upstream reference data was looked for and not found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MissingReference {
    /// `$DFX_REFERENCE_DIR` names a folder without `upstream/`.
    #[error("{ENV}={} has no upstream/ folder", .0.display())]
    FromEnv(PathBuf),
    /// The shipped folder has no `upstream/`.
    #[error(
        "upstream reference data not found: {} has no upstream/ folder (it ships with \
         the repository; or set {ENV})",
        .0.display()
    )]
    Shipped(PathBuf),
}

/// `$DFX_REFERENCE_DIR` when set, else `shipped_dir`. The error says what is missing:
/// callers fail with it, because a comparison that silently does not run proves nothing.
pub fn reference_dir() -> Result<PathBuf, MissingReference> {
    if let Some(dir) = std::env::var_os(ENV) {
        let dir = PathBuf::from(dir);
        return if dir.join("upstream").is_dir() {
            Ok(dir)
        } else {
            Err(MissingReference::FromEnv(dir))
        };
    }
    let dir = shipped_dir();
    if dir.join("upstream").is_dir() {
        Ok(dir)
    } else {
        Err(MissingReference::Shipped(dir))
    }
}
