//! The history store: a [`HistoryStore`] trait with one implementation over any
//! [`Backend`] (SQLite or PostgreSQL), so both share the schema ([`schema`]) and every
//! statement.

mod ops;
mod postgres;
pub mod schema;
pub(crate) mod sql;
mod sqlite;

use std::path::PathBuf;

pub use ops::SqlStore;
pub use postgres::{Postgres, redact};
pub use sql::{Backend, Val, WRITE_LOCK_WAIT};
pub use sqlite::Sqlite;

use crate::HistoryError;
use crate::model::RunRecord;

/// What adding a run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOutcome {
    /// The run was new.
    Added,
    /// The same run (same id and content hash) was already stored: nothing changed.
    Unchanged,
    /// A run with this id but other content was stored; it was replaced.
    Replaced,
}

/// One line of `history list`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunListing {
    /// Run id.
    pub run_id: String,
    /// Hardware identity.
    pub hardware: String,
    /// Start time as recorded.
    pub started: Option<String>,
    /// Closed by a signal.
    pub interrupted: bool,
    /// Commit.
    pub git_sha: Option<String>,
    /// Trials stored / failed among them.
    pub trials: i64,
    /// Failed trials.
    pub failed: i64,
}

/// A place runs are stored in and read back from.
pub trait HistoryStore {
    /// `sqlite:<path>` or `postgres:<host>/<db>`, for messages.
    fn describe(&self) -> String;
    /// The schema version of the database.
    fn schema_version(&mut self) -> Result<i64, HistoryError>;
    /// Stores `run`; adding the same run twice stores it once.
    fn add(&mut self, run: &RunRecord) -> Result<AddOutcome, HistoryError>;
    /// Every stored run, oldest first.
    fn list(&mut self) -> Result<Vec<RunListing>, HistoryError>;
    /// The stored runs (of one hardware identity when given), oldest first.
    fn load(&mut self, hardware: Option<&str>) -> Result<Vec<RunRecord>, HistoryError>;
}

/// Where the history lives, parsed from `--history` / `DFX_HISTORY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistorySpec {
    /// A SQLite file (created when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL connection string.
    Postgres(String),
}

impl HistorySpec {
    /// `postgres://…` / `postgresql://…` (or a libpq `host=… dbname=…` string) is
    /// PostgreSQL, anything else a SQLite path.
    pub fn parse(s: &str) -> Result<Self, HistoryError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(HistoryError::BadSpec {
                spec: s.into(),
                problem: "empty".into(),
            });
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") || s.starts_with("host=")
        {
            return Ok(HistorySpec::Postgres(s.to_string()));
        }
        if s.contains("://") {
            return Err(HistoryError::BadSpec {
                spec: redact(s),
                problem: "unknown scheme".into(),
            });
        }
        Ok(HistorySpec::Sqlite(PathBuf::from(s)))
    }
}

/// Opens the history at `spec` and brings its schema to the newest version.
pub fn open(spec: &HistorySpec) -> Result<Box<dyn HistoryStore>, HistoryError> {
    Ok(match spec {
        HistorySpec::Sqlite(p) => Box::new(SqlStore::new(Sqlite::open(p)?)?),
        HistorySpec::Postgres(url) => Box::new(SqlStore::new(Postgres::connect(url)?)?),
    })
}
