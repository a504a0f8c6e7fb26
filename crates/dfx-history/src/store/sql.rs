//! The little SQL both backends speak: one statement text for SQLite and PostgreSQL
//! (`$1`-style parameters, which SQLite binds by position too), values of four kinds.

use crate::HistoryError;

/// A parameter or column value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// SQL NULL.
    Null,
    /// `BIGINT`.
    Int(i64),
    /// `DOUBLE PRECISION`.
    Real(f64),
    /// `TEXT`.
    Text(String),
}

impl Val {
    /// Text, or `None` for NULL / other kinds.
    pub fn text(&self) -> Option<&str> {
        match self {
            Val::Text(s) => Some(s),
            _ => None,
        }
    }

    /// An integer (NULL / other kinds: `None`).
    pub fn int(&self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// A number (integers widen).
    pub fn real(&self) -> Option<f64> {
        match self {
            Val::Real(x) => Some(*x),
            Val::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl From<&str> for Val {
    fn from(s: &str) -> Self {
        Val::Text(s.to_string())
    }
}

impl From<String> for Val {
    fn from(s: String) -> Self {
        Val::Text(s)
    }
}

impl From<Option<String>> for Val {
    fn from(s: Option<String>) -> Self {
        s.map_or(Val::Null, Val::Text)
    }
}

impl From<f64> for Val {
    fn from(x: f64) -> Self {
        Val::Real(x)
    }
}

impl From<Option<f64>> for Val {
    fn from(x: Option<f64>) -> Self {
        x.map_or(Val::Null, Val::Real)
    }
}

impl From<i64> for Val {
    fn from(i: i64) -> Self {
        Val::Int(i)
    }
}

impl From<bool> for Val {
    fn from(b: bool) -> Self {
        Val::Int(i64::from(b))
    }
}

/// A database connection the store runs its statements on.
pub trait Backend {
    /// `sqlite:<path>` / `postgres://host/db` (no password): for messages.
    fn describe(&self) -> String;
    /// Runs statements without parameters or results (DDL, `BEGIN`, `COMMIT`).
    fn batch(&mut self, sql: &str) -> Result<(), HistoryError>;
    /// Runs one statement; the number of rows it changed.
    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, HistoryError>;
    /// Runs one query; its rows.
    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, HistoryError>;
    /// Begins a transaction that excludes every other writer (and every other schema
    /// migration) until `COMMIT` / `ROLLBACK`, so that runners opening one database at
    /// the same time migrate it once. Plain `BEGIN` by default.
    fn begin_exclusive(&mut self) -> Result<(), HistoryError> {
        self.batch("BEGIN")
    }
    /// Checks the database's own integrity before a write (SQLite `PRAGMA quick_check`);
    /// a damaged database is [`HistoryError::Damaged`]. Nothing to check by default (a
    /// PostgreSQL server guards its own pages).
    fn check_integrity(&mut self) -> Result<(), HistoryError> {
        Ok(())
    }
}

/// How long a writer waits for the write lock held by other writers (SQLite's busy
/// timeout, PostgreSQL's `lock_timeout` on the advisory lock) before giving up with
/// [`HistoryError::Locked`]. An add holds the lock for milliseconds to seconds.
pub const WRITE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);
