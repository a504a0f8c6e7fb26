//! Config errors that name the file, the test, the entry index and the key, and say what
//! is accepted.

use std::fmt;
use std::path::PathBuf;

/// One problem in a config (or in a flag or baseline store that the plan depends on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// `test_name` of the case, when known.
    pub test_name: Option<String>,
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
            write!(f, ": test `{t}`")?;
        }
        if let Some(i) = self.entry_index {
            write!(f, ", benchmark_params[{i}]")?;
        }
        if let Some(k) = &self.key {
            write!(f, ", key `{k}`")?;
        }
        write!(f, ": {}", self.problem)?;
        if let Some(a) = &self.accepted {
            write!(f, " (accepted: {a})")?;
        }
        Ok(())
    }
}

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
