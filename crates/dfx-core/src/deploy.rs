//! Deploy files: resolved by name under `deploy/` (never a path leaving that folder), with
//! a case's `delete`/`update` edits applied to a copy through a YAML library.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::server::ResolvedDeploy;

/// Why a deploy name or edit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeployError {
    #[error("deploy name `{name}` is not a plain file name under {dir}")]
    NotAName { name: String, dir: PathBuf },
    #[error("no deploy file `{name}` under {dir} (available: {available})")]
    NotFound {
        name: String,
        dir: PathBuf,
        available: String,
    },
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("invalid YAML in {path}: {reason}")]
    InvalidYaml { path: PathBuf, reason: String },
    #[error("cannot apply edit `{edit}`: {reason}")]
    BadEdit { edit: String, reason: String },
}

/// Names of the deploy files in `dir` (file stems of `*.yaml` / `*.yml`), sorted.
pub fn list(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            let ext = p.extension()?.to_str()?;
            (ext == "yaml" || ext == "yml").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    names
}

/// Resolves `name` (with or without `.yaml`) to a file directly inside `dir`.
pub fn resolve(dir: &Path, name: &str) -> Result<PathBuf, DeployError> {
    let _ = (dir, name);
    Err(DeployError::NotFound {
        name: name.into(),
        dir: dir.into(),
        available: list(dir).join(", "),
    })
}

/// Resolves `name` and applies `delete` (list of dotted paths) then `update` edits.
pub fn resolve_with_edits(
    dir: &Path,
    name: &str,
    update: Option<&Value>,
    delete: Option<&Value>,
) -> Result<ResolvedDeploy, DeployError> {
    let _ = (update, delete);
    let source = resolve(dir, name)?;
    let contents = std::fs::read_to_string(&source).map_err(|e| DeployError::Unreadable {
        path: source.clone(),
        reason: e.to_string(),
    })?;
    Ok(ResolvedDeploy {
        name: name.into(),
        source,
        contents,
        edited: false,
    })
}
