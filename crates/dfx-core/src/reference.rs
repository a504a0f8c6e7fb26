//! Where the upstream reference data lives (`shared/reference`: vllm-omni's perf configs,
//! deploy files, result template and real `vllm bench` output), for the project's tests
//! and scripts that compare against it.

use std::path::{Path, PathBuf};

/// The environment variable that points at the reference folder explicitly.
pub const ENV: &str = "DFX_REFERENCE_DIR";

/// `$DFX_REFERENCE_DIR` when set, else `shared/reference` beside the repository or one of
/// its ancestors (CI copies `shared/` beside the clone; worktrees sit deeper). The error
/// says where it looked: callers fail with it, because a comparison that silently does not
/// run proves nothing.
pub fn reference_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os(ENV) {
        let dir = PathBuf::from(dir);
        return if dir.join("upstream").is_dir() {
            Ok(dir)
        } else {
            Err(format!("{ENV}={} has no upstream/ folder", dir.display()))
        };
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repo = repo.canonicalize().unwrap_or(repo);
    repo.ancestors()
        .map(|a| a.join("shared/reference"))
        .find(|d| d.join("upstream").is_dir())
        .ok_or_else(|| {
            format!(
                "upstream reference data not found: no shared/reference/upstream beside {} or \
                 any of its parents (CI copies shared/ beside the clone); or set {ENV}",
                repo.display()
            )
        })
}
