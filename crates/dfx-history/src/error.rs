//! Typed errors of the history crate. Every variant names the database, file or value it
//! is about and, for bad input, what is accepted.

use std::path::PathBuf;

/// What can go wrong while reading runs, storing them or analysing the history.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// A run folder could not be read (wraps dfx-report's loader error).
    #[error(transparent)]
    Run(#[from] dfx_report::ReportError),
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder (a run's result file, or the SQLite file's folder being
        /// created).
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A run folder holds something the history cannot store.
    #[error("{}: {problem}", path.display())]
    BadRun {
        /// The run folder, or the result file in it.
        path: PathBuf,
        /// What is wrong, and what is accepted.
        problem: String,
    },
    /// The `--history` / `DFX_HISTORY` value is not a usable database location.
    #[error(
        "invalid history database `{spec}`: {problem} (accepted: a SQLite file path, e.g. target/dfx-perf/history.sqlite, or postgres://user@host/db)"
    )]
    BadSpec {
        /// The value, trimmed (a password in a URL is left out).
        spec: String,
        /// Why it is refused (empty, unknown scheme, or the postgres parser's message).
        problem: String,
    },
    /// The SQLite database reported an error.
    #[error("history database {db}: {source}")]
    Sqlite {
        /// The database, as `sqlite:<path>`.
        db: String,
        /// rusqlite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The PostgreSQL server reported an error.
    #[error("history database {db}: {}", pg_text(source))]
    Postgres {
        /// The database, as `postgres:<host>/<dbname>` (no user or password).
        db: String,
        /// The client's error (shown with the server's severity, message and SQLSTATE).
        #[source]
        source: postgres::Error,
    },
    /// The database holds a schema newer than this dfx-perf knows.
    #[error(
        "history database {db}: schema version {found} is newer than this dfx-perf's {known}; upgrade dfx-perf"
    )]
    SchemaTooNew {
        /// The database, as `sqlite:<path>` or `postgres:<host>/<dbname>`.
        db: String,
        /// The schema version stored in the database.
        found: i64,
        /// The newest schema version this build migrates to.
        known: i64,
    },
    /// A stored row does not have the expected shape.
    #[error("history database {db}: {problem}")]
    Corrupt {
        /// The database, as `sqlite:<path>` or `postgres:<host>/<dbname>`.
        db: String,
        /// Which row or column is off, and how.
        problem: String,
    },
    /// Other writers held the write lock longer than the bound; nothing was written.
    #[error(
        "history database {db}: another writer held the write lock for more than {} s; nothing was written (try again once it is done)",
        waited.as_secs()
    )]
    Locked {
        /// The database, as `sqlite:<path>` or `postgres:<host>/<dbname>`.
        db: String,
        /// How long this writer waited ([`crate::store::WRITE_LOCK_WAIT`]).
        waited: std::time::Duration,
    },
    /// The database file is damaged (SQLite's integrity check failed); nothing was written.
    #[error(
        "history database {db} is damaged, nothing was written: {problem} (restore it from a backup, or move it aside and add the run folders again with `dfx-perf history add`)"
    )]
    Damaged {
        /// The database, as `sqlite:<path>`.
        db: String,
        /// What the integrity check (or SQLite) reported.
        problem: String,
    },
    /// A command-line value is invalid; the message names the flag and what is accepted.
    #[error("{0}")]
    Invalid(String),
}

/// `postgres::Error` displays a bare "db error" for server errors; the server's message,
/// severity and SQLSTATE are what a user needs.
fn pg_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!(
            "{}: {} (SQLSTATE {})",
            d.severity(),
            d.message(),
            d.code().code()
        ),
        None => e.to_string(),
    }
}
