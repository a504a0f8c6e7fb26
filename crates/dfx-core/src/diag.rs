//! Load-time diagnostics shared by config parsing ([`crate::config`]) and the baseline
//! shapes and store ([`crate::baseline`]): errors that name the file, the test, the entry
//! index and the key, and say what is accepted. Both modules depend on this one, never on
//! each other's error types.

use std::fmt;
use std::path::PathBuf;

/// One problem in a config (or in a flag or baseline store that the plan depends on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file the problem is in (the config, or the baseline store); first in the message.
    pub file: PathBuf,
    /// `test_name` of the case, when known.
    pub test_name: Option<String>,
    /// Index of the case in the file's top-level array; shown when the `test_name` is not
    /// known (missing or invalid).
    pub case_index: Option<usize>,
    /// Entry index as written in `benchmark_params`, when the problem is inside an entry.
    pub entry_index: Option<usize>,
    /// The offending key (dotted path), when there is one.
    pub key: Option<String>,
    /// What is wrong.
    pub problem: String,
    /// What would be accepted.
    pub accepted: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(t) = &self.test_name {
            write!(f, ": test `{}`", clip(t))?;
        } else if let Some(c) = self.case_index {
            write!(f, ": case [{c}]")?;
        }
        if let Some(i) = self.entry_index {
            write!(f, ", benchmark_params[{i}]")?;
        }
        if let Some(k) = &self.key {
            write!(f, ", key `{}`", clip(k))?;
        }
        write!(f, ": {}", clip(&self.problem))?;
        if let Some(a) = &self.accepted {
            write!(f, " (accepted: {})", clip(a))?;
        }
        Ok(())
    }
}

/// Longest text of a problem shown: hostile values (a 10 MB string) are cut, not echoed.
const SHOWN_CHARS: usize = 2000;

/// `text`, cut to `SHOWN_CHARS` characters with a note of how much was left out.
pub fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(SHOWN_CHARS) {
        None => text.into(),
        Some((at, _)) => format!("{}… ({} more bytes)", &text[..at], text.len() - at).into(),
    }
}

/// `text` with every line cut by [`clip`]: a message that quotes a hostile value (a
/// 10 MB flag value in a command-line parser's error) keeps its other lines whole.
pub fn clip_lines(text: &str) -> String {
    text.split_inclusive('\n').map(|l| clip(l)).collect()
}

/// Collects errors while a check runs.
pub(crate) type Errs = Vec<ConfigError>;

/// Every problem found while loading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} config error(s):", self.0.len())?;
        for e in &self.0 {
            writeln!(f, "  - {e}")?;
        }
        Ok(())
    }
}

impl ConfigError {
    /// A problem with a whole file (unreadable, invalid JSON, wrong top level).
    pub fn in_file(file: impl Into<PathBuf>, problem: impl Into<String>) -> Self {
        ConfigError {
            file: file.into(),
            test_name: None,
            case_index: None,
            entry_index: None,
            key: None,
            problem: problem.into(),
            accepted: None,
        }
    }

    /// A problem with a command-line flag (e.g. `--mark`); the flag takes the place of the
    /// file in the message.
    pub fn flag(flag: &str, problem: impl Into<String>) -> Self {
        ConfigError::in_file(flag, problem)
    }

    /// Sets the `test_name`.
    pub(crate) fn with_test(mut self, test_name: Option<&str>) -> Self {
        self.test_name = test_name.map(String::from);
        self
    }

    /// Sets the case index.
    pub(crate) fn with_case(mut self, index: Option<usize>) -> Self {
        self.case_index = index;
        self
    }

    /// Sets the raw entry index.
    pub fn with_entry(mut self, index: Option<usize>) -> Self {
        self.entry_index = index;
        self
    }

    /// Sets the offending key.
    pub(crate) fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets what would be accepted.
    pub(crate) fn with_accepted(mut self, accepted: impl Into<String>) -> Self {
        self.accepted = Some(accepted.into());
        self
    }
}

/// Where in a config a check runs: the file, the case's `test_name` and the raw entry
/// index, so every error built from it names them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub file: &'a std::path::Path,
    pub test_name: Option<&'a str>,
    pub case_index: Option<usize>,
    pub entry_index: Option<usize>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(file: &'a std::path::Path) -> Self {
        Ctx {
            file,
            test_name: None,
            case_index: None,
            entry_index: None,
        }
    }

    pub(crate) fn case(self, index: usize) -> Self {
        Ctx {
            case_index: Some(index),
            ..self
        }
    }

    pub(crate) fn test(self, test_name: Option<&'a str>) -> Self {
        Ctx { test_name, ..self }
    }

    pub(crate) fn entry(self, index: usize) -> Self {
        Ctx {
            entry_index: Some(index),
            ..self
        }
    }

    /// An error at `key` (dotted path) with what is accepted.
    pub(crate) fn err(&self, key: &str, problem: impl Into<String>, accepted: &str) -> ConfigError {
        let mut e = ConfigError::in_file(self.file, problem)
            .with_test(self.test_name)
            .with_case(self.case_index)
            .with_entry(self.entry_index);
        if !key.is_empty() {
            e = e.with_key(key);
        }
        if !accepted.is_empty() {
            e = e.with_accepted(accepted);
        }
        e
    }
}

/// The JSON type of a value with its article, for messages ("got a string", "got null").
pub fn json_type(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The JSON type's bare name ("string", "null"), for messages that put their own words
/// around it.
pub fn json_type_name(v: &serde_json::Value) -> &'static str {
    let t = json_type(v);
    t.strip_prefix("an ")
        .or_else(|| t.strip_prefix("a "))
        .unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_type_with_and_without_article() {
        let cases = [
            (json!(null), "null", "null"),
            (json!(true), "a boolean", "boolean"),
            (json!(1.5), "a number", "number"),
            (json!("x"), "a string", "string"),
            (json!([1]), "an array", "array"),
            (json!({"a": 1}), "an object", "object"),
        ];
        for (v, with, bare) in cases {
            assert_eq!(json_type(&v), with, "{v}");
            assert_eq!(json_type_name(&v), bare, "{v}");
        }
    }
}
