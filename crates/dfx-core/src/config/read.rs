//! Reading one config file: text → JSON → the top-level array of case values.

use std::path::Path;

use serde_json::Value;

use crate::bounds::MAX_CONFIG_BYTES;
use crate::diag::{ConfigError, json_type};

/// Reads `file` and returns its case values, or the one error that stops the whole file
/// (unreadable, invalid JSON with line and column, top level not an array).
pub(crate) fn read_cases(file: &Path) -> Result<Vec<Value>, Box<ConfigError>> {
    parse_cases(file, &read_bounded(file)?)
}

/// The text of a config (or `$ref`) file: a regular file of at most
/// [`MAX_CONFIG_BYTES`], never more read (a FIFO or `/dev/zero` must not hang or fill
/// memory).
pub(crate) fn read_bounded(file: &Path) -> Result<String, Box<ConfigError>> {
    crate::fsutil::read_text_bounded(file, MAX_CONFIG_BYTES).map_err(|e| {
        let problem = match &e {
            crate::fsutil::ReadError::Io { source, .. } => {
                format!("cannot read config file: {source}")
            }
            other => other.problem(),
        };
        Box::new(ConfigError::in_file(file, problem))
    })
}

/// Parses config text (see [`read_cases`]).
pub(crate) fn parse_cases(file: &Path, text: &str) -> Result<Vec<Value>, Box<ConfigError>> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        Box::new(ConfigError::in_file(
            file,
            format!(
                "invalid JSON at line {}, column {}: {}",
                e.line(),
                e.column(),
                strip_position(&e)
            ),
        ))
    })?;
    match root {
        Value::Array(cases) => Ok(cases),
        other => Err(Box::new(
            ConfigError::in_file(
                file,
                format!(
                    "top level must be an array of case objects, got {}",
                    json_type(&other)
                ),
            )
            .with_accepted(
                r#"[{"test_name": ..., "server_params": {...}, "benchmark_params": [...]}, ...]"#,
            ),
        )),
    }
}

/// serde_json's message without its own " at line L column C" tail (we print both).
fn strip_position(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    }
}
