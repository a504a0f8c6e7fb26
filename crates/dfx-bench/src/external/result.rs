//! Reading what `vllm bench` left: its result file (as an ordered document) and the tail
//! of `bench.log`.

use std::path::Path;

use dfx_core::diag::json_type;
use dfx_core::result::ResultDoc;
use serde_json::Value;

/// At most this many distinct request errors are reported.
pub(super) const MAX_ERRORS: usize = 10;
/// Longer error messages are cut to this many characters.
const MAX_ERROR_CHARS: usize = 300;
/// Lines of `bench.log` kept in the outcome.
pub(super) const TAIL_LINES: usize = 40;

/// Why a result file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ResultFileError {
    /// No file at the result path (the path, as shown).
    #[error("wrote no result file {0}")]
    Missing(String),
    /// The file exists but could not be read.
    #[error("result file {path} cannot be read: {source}")]
    Unreadable {
        /// The result path, as shown.
        path: String,
        /// The read error.
        source: std::io::Error,
    },
    /// The file is not valid JSON.
    #[error("result file {path} is not valid JSON: {source}")]
    Malformed {
        /// The result path, as shown.
        path: String,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The file's JSON is not an object.
    #[error("result file {path} holds JSON {kind}, not an object")]
    NotAnObject {
        /// The result path, as shown.
        path: String,
        /// The JSON type it holds (`array`, `string`, …).
        kind: &'static str,
    },
}

/// Reads a `vllm bench` result file: the keys in the order vllm wrote them, values as
/// written (integers stay integers, `"inf"` stays a string), plus `result_source: "vllm"`.
pub fn read_result(path: &Path) -> Result<ResultDoc, ResultFileError> {
    let shown = path.display().to_string();
    let read = dfx_core::fsutil::read_text_bounded(path, dfx_core::bounds::MAX_RUN_FILE_BYTES);
    let text = match read.map_err(dfx_core::fsutil::ReadError::into_io) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ResultFileError::Missing(shown));
        }
        Err(source) => {
            return Err(ResultFileError::Unreadable {
                path: shown,
                source,
            });
        }
    };
    let value: Value =
        serde_json::from_str(&text).map_err(|source| ResultFileError::Malformed {
            path: shown.clone(),
            source,
        })?;
    let Value::Object(mut doc) = value else {
        return Err(ResultFileError::NotAnObject {
            path: shown,
            kind: json_type(&value),
        });
    };
    doc.insert("result_source".into(), Value::from("vllm"));
    Ok(doc)
}

/// The first distinct non-empty entries of the per-request `errors` list (present in
/// `--save-detailed` files), at most `MAX_ERRORS`, each cut to a readable length.
pub fn request_errors(doc: &ResultDoc) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Some(Value::Array(items)) = doc.get("errors") else {
        return out;
    };
    for item in items {
        let text = match item {
            Value::String(s) => s.trim().to_string(),
            Value::Null => continue,
            other => other.to_string(),
        };
        if text.is_empty() || out.contains(&text) {
            continue;
        }
        out.push(cut(&text));
        if out.len() == MAX_ERRORS {
            break;
        }
    }
    out
}

fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_ERROR_CHARS {
        s.to_string()
    } else {
        let head: String = s.chars().take(MAX_ERROR_CHARS).collect();
        format!("{head}…")
    }
}

pub(super) use dfx_core::fsutil::log_tail;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_are_distinct_non_empty_and_bounded() {
        let mut doc = ResultDoc::new();
        let mut errors = vec![
            json!(""),
            json!("boom"),
            json!(null),
            json!("boom"),
            json!(" x "),
        ];
        errors.extend((0..20).map(|i| json!(format!("e{i}"))));
        doc.insert("errors".into(), Value::Array(errors));
        let got = request_errors(&doc);
        assert_eq!(got.len(), MAX_ERRORS);
        assert_eq!(&got[..3], ["boom", "x", "e0"]);
        assert!(request_errors(&ResultDoc::new()).is_empty());
    }
}
