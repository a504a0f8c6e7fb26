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
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A run folder holds something the history cannot store.
    #[error("{}: {problem}", path.display())]
    BadRun { path: PathBuf, problem: String },
    /// The `--history` / `DFX_HISTORY` value is not a usable database location.
    #[error(
        "invalid history database `{spec}`: {problem} (accepted: a SQLite file path, e.g. target/dfx-perf/history.sqlite, or postgres://user@host/db)"
    )]
    BadSpec { spec: String, problem: String },
    /// The SQLite database reported an error.
    #[error("history database {db}: {source}")]
    Sqlite {
        db: String,
        #[source]
        source: rusqlite::Error,
    },
    /// The PostgreSQL server reported an error.
    #[error("history database {db}: {}", pg_text(source))]
    Postgres {
        db: String,
        #[source]
        source: postgres::Error,
    },
    /// The database holds a schema newer than this dfx-perf knows.
    #[error(
        "history database {db}: schema version {found} is newer than this dfx-perf's {known}; upgrade dfx-perf"
    )]
    SchemaTooNew { db: String, found: i64, known: i64 },
    /// A stored row does not have the expected shape.
    #[error("history database {db}: {problem}")]
    Corrupt { db: String, problem: String },
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
