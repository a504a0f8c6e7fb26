//! `server_params.delete` / `update` applied to a parsed deploy tree.
//!
//! Shapes (upstream vllm-omni `modify_stage_config`, tests/dfx):
//! - `delete`: a list of dotted paths (`["connectors.x.extra.codec_chunk_frames"]`), or the
//!   upstream object form: `{"<dotted.path>": null, "<top_key>": null,
//!   "stage_args": {"<stage id>": ["<path in stage>", …]}}`.
//! - `update`: an object of top-level keys (`{"async_chunk": false}`), dotted paths
//!   (`{"connectors.x.extra.codec_chunk_frames": 75}`, missing intermediate mappings are
//!   created), and `{"stage_args": {"<stage id>": {"<path in stage>": value}}}` (`stages`
//!   is accepted as the same key), which edits the element of the file's `stages` list
//!   (or legacy `stage_args` list) whose `stage_id` equals the id.
//! - In a dotted path, a segment of digits indexes a list (`stages.1.max_num_seqs`).
//!
//! Deliberately stricter than upstream (which printed and continued): deleting a path that
//! does not exist, naming a stage id that does not exist, or descending into a scalar is an
//! error naming the edit, so a typo cannot silently benchmark the unedited file.

use serde_json::Value as Json;
use yaml_serde::{Mapping, Value as Yaml};

use super::DeployError;

/// Why a dotted path cannot be set or deleted in a deploy tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// `a..b`, `.a` or `a.`.
    #[error("`{path}` has an empty path segment")]
    EmptySegment {
        /// The dotted path.
        path: String,
    },
    /// A non-numeric segment under a list.
    #[error("`{here}`: `{seg}` is not a list index (the parent is a list)")]
    NotAnIndex {
        /// The path up to and including `seg`.
        here: String,
        /// The segment.
        seg: String,
    },
    /// A segment under a scalar.
    #[error("cannot descend into `{here}`: it is a {kind}")]
    Scalar {
        /// The path of the scalar.
        here: String,
        /// What it is (`string`, `number`, …).
        kind: &'static str,
    },
    /// A path to delete that is not in the tree.
    #[error("`{here}` does not exist")]
    Missing {
        /// The path that is missing.
        here: String,
    },
    /// A list index past the end.
    #[error("`{here}`: no index `{seg}` in a list of {len}")]
    NoIndex {
        /// The path (up to the list element).
        here: String,
        /// The index segment.
        seg: String,
        /// The list's length.
        len: usize,
    },
    /// The parent of the path to delete is a scalar.
    #[error("cannot delete `{path}`: the parent is a {kind}")]
    ScalarParent {
        /// The dotted path.
        path: String,
        /// What the parent is.
        kind: &'static str,
    },
}

/// The edit error for a path that does not fit the tree.
fn bad_path(edit: &str) -> impl FnOnce(PathError) -> DeployError + '_ {
    move |source| DeployError::BadPath {
        edit: edit.into(),
        source,
    }
}

/// Applies a `delete` edit (list of dotted paths or the upstream object form).
pub(crate) fn apply_deletes(tree: &mut Yaml, delete: &Json) -> Result<(), DeployError> {
    match delete {
        Json::Array(paths) => {
            for p in paths {
                let Json::String(path) = p else {
                    return Err(bad(
                        &format!("delete {p}"),
                        "delete entries must be dotted paths (strings)",
                    ));
                };
                delete_path(tree, path).map_err(bad_path(&format!("delete {path}")))?;
            }
            Ok(())
        }
        Json::Object(map) => {
            for (key, value) in map {
                let edit = format!("delete {key}");
                if is_stage_key(key) {
                    for (id, paths) in stage_edits(value, &edit)? {
                        let stage = find_stage(tree, id, &edit)?;
                        for path in string_list(paths, &edit)? {
                            delete_path(stage, &path)
                                .map_err(bad_path(&format!("delete stage {id}: {path}")))?;
                        }
                    }
                } else if key.contains('.') || value.is_null() {
                    delete_path(tree, key).map_err(bad_path(&edit))?;
                } else {
                    return Err(bad(
                        &edit,
                        "the value of a top-level key to delete must be null",
                    ));
                }
            }
            Ok(())
        }
        other => Err(bad(
            &format!("delete {other}"),
            "`delete` must be a list of dotted paths or an object",
        )),
    }
}

/// Applies an `update` edit (object of top-level keys, dotted paths and `stage_args`).
pub(crate) fn apply_updates(tree: &mut Yaml, update: &Json) -> Result<(), DeployError> {
    let Json::Object(map) = update else {
        return Err(bad(
            &format!("update {update}"),
            "`update` must be an object of keys or dotted paths",
        ));
    };
    for (key, value) in map {
        let edit = format!("update {key}");
        if is_stage_key(key) {
            for (id, changes) in stage_edits(value, &edit)? {
                let Json::Object(changes) = changes else {
                    return Err(bad(
                        &edit,
                        &format!("stage {id}: expected an object of paths to values"),
                    ));
                };
                let stage = find_stage(tree, id, &edit)?;
                for (path, v) in changes {
                    let e = format!("update stage {id}: {path}");
                    set_path(stage, path, to_yaml(v, &e)?).map_err(bad_path(&e))?;
                }
            }
        } else {
            set_path(tree, key, to_yaml(value, &edit)?).map_err(bad_path(&edit))?;
        }
    }
    Ok(())
}

fn bad(edit: &str, reason: &str) -> DeployError {
    DeployError::BadEdit {
        edit: edit.into(),
        reason: reason.into(),
    }
}

fn is_stage_key(key: &str) -> bool {
    key == "stage_args" || key == "stages"
}

fn to_yaml(v: &Json, edit: &str) -> Result<Yaml, DeployError> {
    yaml_serde::to_value(v).map_err(|e| bad(edit, &e.to_string()))
}

/// `{"<stage id>": x}` → `[(id, x)]`, ids parsed as integers.
fn stage_edits<'a>(value: &'a Json, edit: &str) -> Result<Vec<(i64, &'a Json)>, DeployError> {
    let Json::Object(map) = value else {
        return Err(bad(
            edit,
            "expected an object keyed by stage id, e.g. {\"1\": {\"max_num_seqs\": 8}}",
        ));
    };
    map.iter()
        .map(|(k, v)| {
            k.trim()
                .parse::<i64>()
                .map(|id| (id, v))
                .map_err(|_| bad(edit, &format!("stage id `{k}` is not an integer")))
        })
        .collect()
}

fn string_list(value: &Json, edit: &str) -> Result<Vec<String>, DeployError> {
    match value {
        Json::String(s) => Ok(vec![s.clone()]),
        Json::Array(items) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(String::from)
                    .ok_or_else(|| bad(edit, "stage delete paths must be strings"))
            })
            .collect(),
        _ => Err(bad(edit, "expected a list of paths for each stage id")),
    }
}

/// The element of `stages` (else `stage_args`) whose `stage_id` is `id`.
fn find_stage<'a>(tree: &'a mut Yaml, id: i64, edit: &str) -> Result<&'a mut Yaml, DeployError> {
    let list_key = if tree.get("stages").is_some() {
        "stages"
    } else {
        "stage_args"
    };
    let Some(Yaml::Sequence(stages)) = tree.get_mut(list_key) else {
        return Err(bad(edit, "the deploy file has no `stages` list"));
    };
    let ids: Vec<String> = stages
        .iter()
        .filter_map(|s| s.get("stage_id").map(render))
        .collect();
    stages
        .iter_mut()
        .find(|s| s.get("stage_id").and_then(Yaml::as_i64) == Some(id))
        .ok_or_else(|| {
            bad(
                edit,
                &format!(
                    "no stage with stage_id {id} (available: {})",
                    ids.join(", ")
                ),
            )
        })
}

fn render(v: &Yaml) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| format!("{v:?}"))
}

fn kind(v: &Yaml) -> &'static str {
    match v {
        Yaml::Null => "null",
        Yaml::Bool(_) => "boolean",
        Yaml::Number(_) => "number",
        Yaml::String(_) => "string",
        Yaml::Sequence(_) => "list",
        Yaml::Mapping(_) => "mapping",
        Yaml::Tagged(_) => "tagged value",
    }
}

fn segments(path: &str) -> Result<Vec<&str>, PathError> {
    let segs: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(PathError::EmptySegment { path: path.into() });
    }
    Ok(segs)
}

fn index_of(seg: &str) -> Option<usize> {
    (!seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()))
        .then(|| seg.parse().ok())
        .flatten()
}

/// The key of `map` that `seg` names: the string itself, else the same integer key.
fn map_key(map: &Mapping, seg: &str) -> Yaml {
    let as_str = Yaml::String(seg.into());
    if map.contains_key(&as_str) {
        return as_str;
    }
    if let Ok(n) = seg.parse::<i64>() {
        let as_num = Yaml::Number(n.into());
        if map.contains_key(&as_num) {
            return as_num;
        }
    }
    as_str
}

/// Sets `path` to `value`, creating missing intermediate mappings (or lists when the next
/// segment is an index).
pub(crate) fn set_path(root: &mut Yaml, path: &str, value: Yaml) -> Result<(), PathError> {
    let segs = segments(path)?;
    let mut node = root;
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        let here = segs[..=i].join(".");
        let fresh = || match segs.get(i + 1).and_then(|s| index_of(s)) {
            Some(_) => Yaml::Sequence(Vec::new()),
            None => Yaml::Mapping(Mapping::new()),
        };
        let slot: &mut Yaml = match node {
            Yaml::Mapping(map) => {
                let key = map_key(map, seg);
                map.entry(key).or_insert(Yaml::Null)
            }
            Yaml::Sequence(list) => {
                let idx = index_of(seg).ok_or_else(|| PathError::NotAnIndex {
                    here: here.clone(),
                    seg: seg.to_string(),
                })?;
                if idx >= list.len() {
                    list.resize(idx + 1, Yaml::Null);
                }
                &mut list[idx]
            }
            other => {
                return Err(PathError::Scalar {
                    here: segs[..i].join("."),
                    kind: kind(other),
                });
            }
        };
        if last {
            *slot = value;
            return Ok(());
        }
        if slot.is_null() {
            *slot = fresh();
        }
        node = slot;
    }
    Ok(())
}

/// Deletes `path`; every segment must exist.
pub(crate) fn delete_path(root: &mut Yaml, path: &str) -> Result<(), PathError> {
    let segs = segments(path)?;
    let (last, parents) = segs.split_last().expect("segments are never empty");
    let mut node = root;
    for (i, seg) in parents.iter().enumerate() {
        let here = segs[..=i].join(".");
        node = match node {
            Yaml::Mapping(map) => {
                let key = map_key(map, seg);
                map.get_mut(&key)
                    .ok_or_else(|| PathError::Missing { here: here.clone() })?
            }
            Yaml::Sequence(list) => {
                let len = list.len();
                index_of(seg)
                    .and_then(|idx| list.get_mut(idx))
                    .ok_or_else(|| PathError::NoIndex {
                        here: here.clone(),
                        seg: seg.to_string(),
                        len,
                    })?
            }
            other => {
                return Err(PathError::Scalar {
                    here,
                    kind: kind(other),
                });
            }
        };
    }
    match node {
        Yaml::Mapping(map) => {
            let key = map_key(map, last);
            map.shift_remove(&key)
                .map(|_| ())
                .ok_or_else(|| PathError::Missing { here: path.into() })
        }
        Yaml::Sequence(list) => match index_of(last) {
            Some(idx) if idx < list.len() => {
                list.remove(idx);
                Ok(())
            }
            _ => Err(PathError::NoIndex {
                here: path.into(),
                seg: last.to_string(),
                len: list.len(),
            }),
        },
        other => Err(PathError::ScalarParent {
            path: path.into(),
            kind: kind(other),
        }),
    }
}
