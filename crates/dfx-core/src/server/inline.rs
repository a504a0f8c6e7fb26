//! Inline files in `serve_args` (upstream's `*-inline` keys, e.g.
//! `"deploy-config-inline": {"type": "yaml", "content": {…}}`): the content is written to a
//! file in the server's folder and the key is passed without its `-inline` suffix, with the
//! file's path as value (`--deploy-config <server dir>/deploy-config.yaml`).

use serde_json::Value;

/// The suffix that marks an inline file key.
pub const INLINE_SUFFIX: &str = "-inline";

/// One inline file, rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineFile {
    /// The key without `-inline` (`deploy-config`): the flag the server gets.
    pub base: String,
    /// `yaml` or `jsonl`: the file's extension.
    pub ext: &'static str,
    /// The file's text: YAML in the content's key order, or one compact JSON line per item
    /// of a list (a non-list content is one item).
    pub text: String,
}

/// Why an inline value does not have upstream's shape.
#[derive(Debug, thiserror::Error)]
pub enum InlineError {
    /// The key is just `-inline`.
    #[error("an inline key needs a name before `-inline`")]
    NoName,
    /// The value is not an object.
    #[error("an inline file must be an object")]
    NotAnObject,
    /// No (or a null) `content`.
    #[error("missing `content`")]
    NoContent,
    /// A key besides `type` and `content`.
    #[error("unknown key `{0}`")]
    UnknownKey(String),
    /// The content cannot be written as YAML.
    #[error("content is not YAML: {0}")]
    NotYaml(#[source] yaml_serde::Error),
    /// A `type` other than `yaml` / `jsonl`.
    #[error("unknown type `{0}`")]
    UnknownType(String),
    /// No string `type`.
    #[error("missing `type` (a string)")]
    NoType,
}

/// What an inline value must look like, for error messages.
pub const ACCEPTED: &str = r#"{"type": "yaml" | "jsonl", "content": <object or list>}"#;

/// Renders `key: value` when `key` ends in `-inline`; `None` for other keys; an error
/// when the value does not have upstream's shape.
pub fn render(key: &str, value: &Value) -> Option<Result<InlineFile, InlineError>> {
    let base = key.strip_suffix(INLINE_SUFFIX)?;
    Some(render_value(base, value))
}

fn render_value(base: &str, value: &Value) -> Result<InlineFile, InlineError> {
    if base.is_empty() {
        return Err(InlineError::NoName);
    }
    let Value::Object(o) = value else {
        return Err(InlineError::NotAnObject);
    };
    let content = o
        .get("content")
        .filter(|c| !c.is_null())
        .ok_or(InlineError::NoContent)?;
    if let Some(k) = o.keys().find(|k| !matches!(k.as_str(), "type" | "content")) {
        return Err(InlineError::UnknownKey(k.clone()));
    }
    let (ext, text) = match o.get("type").and_then(Value::as_str) {
        Some("yaml") => (
            "yaml",
            yaml_serde::to_string(content).map_err(InlineError::NotYaml)?,
        ),
        Some("jsonl") => {
            let items = match content {
                Value::Array(a) => a.clone(),
                other => vec![other.clone()],
            };
            let lines: Vec<String> = items.iter().map(|i| format!("{i}\n")).collect();
            ("jsonl", lines.concat())
        }
        Some(other) => return Err(InlineError::UnknownType(other.into())),
        None => return Err(InlineError::NoType),
    };
    Ok(InlineFile {
        base: base.to_string(),
        ext,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_and_jsonl_and_errors() {
        let f = render(
            "deploy-config-inline",
            &json!({"type": "yaml", "content": {"z": 1, "a": [{"b": true}]}}),
        )
        .unwrap()
        .unwrap();
        assert_eq!((f.base.as_str(), f.ext), ("deploy-config", "yaml"));
        assert_eq!(f.text, "z: 1\na:\n- b: true\n");
        let f = render(
            "x-inline",
            &json!({"type": "jsonl", "content": [{"a": "é"}, 2]}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(f.text, "{\"a\":\"é\"}\n2\n");
        assert!(render("deploy-config", &json!({})).is_none());
        for (v, why) in [
            (json!("x"), "must be an object"),
            (json!({"type": "toml", "content": 1}), "unknown type `toml`"),
            (json!({"type": "yaml"}), "missing `content`"),
            (json!({"content": 1}), "missing `type`"),
            (
                json!({"type": "yaml", "content": 1, "x": 2}),
                "unknown key `x`",
            ),
        ] {
            let err = render("d-inline", &v).unwrap().unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
        }
    }
}
