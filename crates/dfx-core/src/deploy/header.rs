//! The `# dfx-perf:` header of a project deploy file and the YAML tree diff that keeps it
//! honest.
//!
//! Accepted forms (first line of the file):
//!
//! ```text
//! # dfx-perf: stock file of vllm-omni 0.30, no changes
//! ```
//!
//! ```text
//! # dfx-perf: changes vs stock qwen3_tts.yaml:
//! #   connectors.connector_of_shared_memory.extra.codec_chunk_frames: 25 -> 75
//! #   stages.1.max_num_seqs: 64 -> 128
//! #   some.new_key: absent -> true
//! ```
//!
//! Paths are dotted, list elements by index (lists of mappings only; a list of scalars is
//! one value); values are YAML flow scalars/collections, with `absent` for a key that one
//! side lacks.

use std::fmt;

use yaml_serde::Value as Yaml;

const PREFIX: &str = "# dfx-perf:";
const CHANGES_VS: &str = "changes vs stock ";
const ABSENT: &str = "absent";

/// One difference between two YAML trees (`None` = the key is absent on that side).
#[derive(Debug, Clone, PartialEq)]
pub struct TreeChange {
    /// Dotted path; list elements by index (`stages.1.max_num_seqs`).
    pub path: String,
    /// The value in the old (stock) tree.
    pub old: Option<Yaml>,
    /// The value in the new (project) tree.
    pub new: Option<Yaml>,
}

impl fmt::Display for TreeChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Option<Yaml>| match v {
            None => ABSENT.to_string(),
            Some(v) => flow(v),
        };
        write!(
            f,
            "{}: {} -> {}",
            self.path,
            show(&self.old),
            show(&self.new)
        )
    }
}

/// A deploy file's parsed header.
#[derive(Debug, Clone, PartialEq)]
pub enum DeployHeader {
    /// An unchanged upstream file; `note` is the header text after `# dfx-perf:`.
    Stock {
        /// The text after `# dfx-perf:` (`stock file of vllm-omni 0.30, no changes`).
        note: String,
    },
    /// A variant of the stock file `base` (a file name in the same folder).
    Changes {
        /// The stock file's name after `changes vs stock ` (`qwen3_tts.yaml`).
        base: String,
        /// The `#   <path>: <old> -> <new>` lines, in header order (at least one).
        changes: Vec<TreeChange>,
    },
}

/// A malformed `# dfx-perf:` header line.
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    /// `changes vs stock <file>` without the colon.
    #[error("`{0}`: expected `changes vs stock <file>:`")]
    NoColon(String),
    /// A `changes vs stock` header with no change line after it.
    #[error("`{0}` lists no changes (expected lines `#   <path>: <old> -> <new>`)")]
    NoChanges(String),
    /// A change line not of the form `<path>: <old> -> <new>`.
    #[error("`{0}`: expected `<path>: <old> -> <new>`")]
    Malformed(String),
    /// A change line whose old or new value is not YAML.
    #[error("`{line}`: value `{value}` is not YAML: {source}")]
    NotYaml {
        /// The change line.
        line: String,
        /// The value text.
        value: String,
        /// The YAML parser's error.
        #[source]
        source: yaml_serde::Error,
    },
}

impl DeployHeader {
    /// Parses the header at the top of `text`. `Ok(None)` when the file has no
    /// `# dfx-perf:` first line; `Err` names the malformed line.
    pub fn parse(text: &str) -> Result<Option<DeployHeader>, HeaderError> {
        let mut lines = text.lines();
        let Some(first) = lines.next().and_then(|l| l.strip_prefix(PREFIX)) else {
            return Ok(None);
        };
        let first = first.trim();
        let Some(rest) = first.strip_prefix(CHANGES_VS) else {
            return Ok(Some(DeployHeader::Stock { note: first.into() }));
        };
        let base = rest
            .strip_suffix(':')
            .ok_or_else(|| HeaderError::NoColon(first.into()))?
            .trim()
            .to_string();
        let changes = lines
            .map_while(|l| l.strip_prefix("#   "))
            .map(parse_change)
            .collect::<Result<Vec<_>, _>>()?;
        if changes.is_empty() {
            return Err(HeaderError::NoChanges(first.into()));
        }
        Ok(Some(DeployHeader::Changes { base, changes }))
    }

    /// One line for listings.
    pub fn summary(&self) -> String {
        match self {
            DeployHeader::Stock { note } => note.clone(),
            DeployHeader::Changes { base, changes } => {
                let list: Vec<String> = changes.iter().map(ToString::to_string).collect();
                format!("changes vs stock {base}: {}", list.join("; "))
            }
        }
    }
}

fn parse_change(line: &str) -> Result<TreeChange, HeaderError> {
    let malformed = || HeaderError::Malformed(line.into());
    let (path, values) = line.split_once(": ").ok_or_else(malformed)?;
    let (old, new) = values.split_once(" -> ").ok_or_else(malformed)?;
    let value = |s: &str| -> Result<Option<Yaml>, HeaderError> {
        let s = s.trim();
        if s == ABSENT {
            return Ok(None);
        }
        yaml_serde::from_str(s)
            .map(Some)
            .map_err(|source| HeaderError::NotYaml {
                line: line.into(),
                value: s.into(),
                source,
            })
    };
    Ok(TreeChange {
        path: path.trim().into(),
        old: value(old)?,
        new: value(new)?,
    })
}

/// Compact one-line rendering of a YAML value (JSON flow syntax, which YAML parses back).
pub(crate) fn flow(v: &Yaml) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| format!("{v:?}"))
}

/// Every leaf difference between `old` and `new`, in document order.
pub fn tree_diff(old: &Yaml, new: &Yaml) -> Vec<TreeChange> {
    let mut out = Vec::new();
    diff_into(&mut out, "", old, new);
    out
}

fn join(prefix: &str, seg: &str) -> String {
    if prefix.is_empty() {
        seg.into()
    } else {
        format!("{prefix}.{seg}")
    }
}

fn key_text(k: &Yaml) -> String {
    match k {
        Yaml::String(s) => s.clone(),
        other => flow(other),
    }
}

fn has_records(items: &[Yaml]) -> bool {
    items
        .iter()
        .any(|v| matches!(v, Yaml::Mapping(_) | Yaml::Sequence(_)))
}

fn diff_into(out: &mut Vec<TreeChange>, path: &str, old: &Yaml, new: &Yaml) {
    let change = |p: String, o: Option<&Yaml>, n: Option<&Yaml>| TreeChange {
        path: p,
        old: o.cloned(),
        new: n.cloned(),
    };
    match (old, new) {
        (Yaml::Mapping(a), Yaml::Mapping(b)) => {
            for (k, va) in a {
                let p = join(path, &key_text(k));
                match b.get(k) {
                    Some(vb) => diff_into(out, &p, va, vb),
                    None => out.push(change(p, Some(va), None)),
                }
            }
            for (k, vb) in b.iter().filter(|(k, _)| !a.contains_key(*k)) {
                out.push(change(join(path, &key_text(k)), None, Some(vb)));
            }
        }
        // Lists of records (`stages`) are compared element by element; lists of scalars
        // (`decode_cudagraph_capture_sizes`) change as one value.
        (Yaml::Sequence(a), Yaml::Sequence(b)) if a.len() == b.len() && has_records(a) => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                diff_into(out, &join(path, &i.to_string()), va, vb);
            }
        }
        _ if old != new => out.push(change(path.into(), Some(old), Some(new))),
        _ => {}
    }
}
