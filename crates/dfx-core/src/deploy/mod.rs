//! Deploy files: resolved by name under `deploy/` (never a path leaving that folder), with
//! a case's `delete`/`update` edits applied to a copy through a YAML library.
//!
//! Edit semantics follow upstream vllm-omni's `modify_stage_config` (tests/dfx), see
//! `edit`: deletes first, then updates; dotted paths descend into mappings, digit
//! segments index lists; `{"stage_args": {"<stage id>": {...}}}` targets the element of the
//! `stages` list (or legacy `stage_args` list) whose `stage_id` equals that id.

pub(crate) mod edit;
pub(crate) mod header;

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::server::ResolvedDeploy;

pub use edit::PathError;
pub use header::{DeployHeader, HeaderError, TreeChange, tree_diff};

/// Why a deploy name or edit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeployError {
    /// The name has a path separator, `..` or is absolute, or it resolves (through a
    /// symlink) to a file outside the deploy folder.
    #[error(
        "deploy name `{name}` is not a plain file name under {dir} (give a name such as `qwen3_tts` or `qwen3_tts.yaml`; paths are refused)"
    )]
    NotAName {
        /// The name as the case gives it (`stage_config_name`).
        name: String,
        /// The deploy folder.
        dir: PathBuf,
    },
    /// No `<name>.yaml` / `<name>.yml` file in the deploy folder.
    #[error("no deploy file `{name}` under {dir} (available: {available})")]
    NotFound {
        /// The name as the case gives it.
        name: String,
        /// The deploy folder.
        dir: PathBuf,
        /// The names that do exist, comma-separated.
        available: String,
    },
    /// The folder or the file cannot be read or canonicalised.
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The folder or file.
        path: PathBuf,
        /// The I/O error's text.
        reason: String,
    },
    /// The file (or the edited tree, when serialised again) is not valid YAML.
    #[error("invalid YAML in {path}: {reason}")]
    InvalidYaml {
        /// The deploy file.
        path: PathBuf,
        /// The YAML library's message.
        reason: String,
    },
    /// A `delete` / `update` edit does not fit the file's tree.
    #[error("cannot apply edit `{edit}`: {reason}")]
    BadEdit {
        /// The edit, as shown in the message (`delete stage 1: engine_args.x`).
        edit: String,
        /// Why it cannot be applied.
        reason: String,
    },
    /// A dotted path of a `delete` / `update` edit does not fit the file's tree.
    #[error("cannot apply edit `{edit}`: {source}")]
    BadPath {
        /// The edit, as shown in the message (`delete stage 1: engine_args.x`).
        edit: String,
        /// Which segment does not fit, and why.
        #[source]
        source: edit::PathError,
    },
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

/// Resolves `name` (with or without `.yaml` / `.yml`) to a file directly inside `dir` and
/// returns its canonical path. Refuses anything that is not a plain file name (`/`, `..`,
/// absolute paths) and symlinks whose target lies outside `dir`.
pub fn resolve(dir: &Path, name: &str) -> Result<PathBuf, DeployError> {
    let not_a_name = || DeployError::NotAName {
        name: name.into(),
        dir: dir.into(),
    };
    if !is_plain_name(name) {
        return Err(not_a_name());
    }
    let candidates: Vec<String> = if name.ends_with(".yaml") || name.ends_with(".yml") {
        vec![name.to_string()]
    } else {
        vec![format!("{name}.yaml"), format!("{name}.yml")]
    };
    let Some(found) = candidates.iter().map(|c| dir.join(c)).find(|p| p.is_file()) else {
        return Err(DeployError::NotFound {
            name: name.into(),
            dir: dir.into(),
            available: available(dir),
        });
    };
    let unreadable = |path: &Path, e: std::io::Error| DeployError::Unreadable {
        path: path.into(),
        reason: e.to_string(),
    };
    let canon_dir = dir.canonicalize().map_err(|e| unreadable(dir, e))?;
    let canon = found.canonicalize().map_err(|e| unreadable(&found, e))?;
    if canon.parent() != Some(canon_dir.as_path()) {
        return Err(not_a_name());
    }
    Ok(canon)
}

/// Resolves `name` and applies `delete` then `update` edits (see `edit` for the accepted
/// shapes). Without edits, `contents` is the file itself; with edits, it is the edited tree
/// serialised as YAML behind a comment naming the source and the edits.
pub fn resolve_with_edits(
    dir: &Path,
    name: &str,
    update: Option<&Value>,
    delete: Option<&Value>,
) -> Result<ResolvedDeploy, DeployError> {
    let source = resolve(dir, name)?;
    let contents = crate::fsutil::read_text_bounded(&source, crate::bounds::MAX_CONFIG_BYTES)
        .map_err(|e| DeployError::Unreadable {
            path: source.clone(),
            reason: e.problem(),
        })?;
    let update = update.filter(|v| !is_empty_edit(v));
    let delete = delete.filter(|v| !is_empty_edit(v));
    if update.is_none() && delete.is_none() {
        return Ok(ResolvedDeploy {
            name: name.into(),
            source,
            contents,
            edited: false,
        });
    }
    let mut tree: yaml_serde::Value =
        yaml_serde::from_str(&contents).map_err(|e| DeployError::InvalidYaml {
            path: source.clone(),
            reason: e.to_string(),
        })?;
    if let Some(d) = delete {
        edit::apply_deletes(&mut tree, d)?;
    }
    if let Some(u) = update {
        edit::apply_updates(&mut tree, u)?;
    }
    let body = yaml_serde::to_string(&tree).map_err(|e| DeployError::InvalidYaml {
        path: source.clone(),
        reason: e.to_string(),
    })?;
    let compact = |v: Option<&Value>| v.map_or_else(|| "none".to_string(), Value::to_string);
    let contents = format!(
        "# dfx-perf: edited copy of {} (delete: {}; update: {})\n{body}",
        source.display(),
        compact(delete),
        compact(update),
    );
    Ok(ResolvedDeploy {
        name: name.into(),
        source,
        contents,
        edited: true,
    })
}

/// The one-line summary of a deploy file's `# dfx-perf:` header, or a note that it has none.
pub fn summary(path: &Path) -> String {
    match crate::fsutil::read_text_bounded(path, crate::bounds::MAX_CONFIG_BYTES) {
        Ok(text) => match DeployHeader::parse(&text) {
            Ok(Some(h)) => h.summary(),
            Ok(None) => "(no dfx-perf header)".into(),
            Err(e) => format!("(bad dfx-perf header: {e})"),
        },
        Err(e) => format!("(unreadable: {})", e.problem()),
    }
}

fn available(dir: &Path) -> String {
    let names = list(dir);
    if names.is_empty() {
        format!("none; {} has no *.yaml files", dir.display())
    } else {
        names.join(", ")
    }
}

fn is_plain_name(name: &str) -> bool {
    let p = Path::new(name);
    !name.is_empty()
        && !name.contains(['/', '\\', '\0'])
        && p.components().count() == 1
        && matches!(p.components().next(), Some(Component::Normal(_)))
}

/// `null`, `{}` and `[]` mean "no edit" (upstream passed them through as no-ops).
fn is_empty_edit(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
