//! The versioned schema, one text for both backends (types both understand: `TEXT`,
//! `BIGINT`, `DOUBLE PRECISION`), applied in order and recorded in
//! `dfx_history_migrations`. A migration is never edited once released; a change is a
//! new migration at the end of [`MIGRATIONS`].

use super::sql::{Backend, Val};
use crate::HistoryError;

/// One schema step.
pub struct Migration {
    /// Its version, 1, 2, … in order.
    pub version: i64,
    /// What it does.
    pub name: &'static str,
    /// Its statements, separated by `;`.
    pub sql: &'static str,
}

/// Every migration, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "runs, trials, metrics, thresholds",
        sql: "
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    hardware TEXT NOT NULL,
    sort_key TEXT NOT NULL,
    started TEXT,
    finished TEXT,
    interrupted BIGINT NOT NULL,
    git_sha TEXT,
    fingerprint TEXT NOT NULL,
    added_at TEXT NOT NULL
);
CREATE TABLE trials (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    trial TEXT NOT NULL,
    seq BIGINT NOT NULL,
    outcome TEXT NOT NULL,
    interrupted BIGINT NOT NULL,
    unclean TEXT,
    failures TEXT NOT NULL,
    PRIMARY KEY (run_id, trial)
);
CREATE TABLE metrics (
    run_id TEXT NOT NULL,
    trial TEXT NOT NULL,
    metric TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, trial, metric),
    FOREIGN KEY (run_id, trial) REFERENCES trials (run_id, trial)
);
CREATE TABLE thresholds (
    run_id TEXT NOT NULL,
    trial TEXT NOT NULL,
    metric TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    direction TEXT NOT NULL,
    source TEXT NOT NULL,
    PRIMARY KEY (run_id, trial, metric),
    FOREIGN KEY (run_id, trial) REFERENCES trials (run_id, trial)
)",
    },
    Migration {
        version: 2,
        name: "trials.needs_data, series indexes",
        sql: "
ALTER TABLE trials ADD COLUMN needs_data BIGINT NOT NULL DEFAULT 0;
CREATE INDEX runs_by_hardware ON runs (hardware, sort_key);
CREATE INDEX metrics_by_series ON metrics (trial, metric)",
    },
    Migration {
        version: 3,
        name: "repeat_values: each repeat's value of a step run as repeats",
        sql: "
CREATE TABLE repeat_values (
    run_id TEXT NOT NULL,
    trial TEXT NOT NULL,
    metric TEXT NOT NULL,
    repeat BIGINT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, trial, metric, repeat),
    FOREIGN KEY (run_id, trial) REFERENCES trials (run_id, trial)
)",
    },
    Migration {
        version: 4,
        name: "trials.failure_class: the class verdict.json gives a failed trial",
        sql: "ALTER TABLE trials ADD COLUMN failure_class TEXT",
    },
];

/// The newest schema version this build knows.
pub fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

const BOOKKEEPING: &str = "CREATE TABLE IF NOT EXISTS dfx_history_migrations (
    version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)";

/// The schema version of `db` (0 for an empty database).
pub fn version(db: &mut dyn Backend) -> Result<i64, HistoryError> {
    locked(db, |db| stored_version(db))
}

/// The highest applied migration; creates the bookkeeping table when missing. Call it
/// inside [`locked`].
fn stored_version(db: &mut dyn Backend) -> Result<i64, HistoryError> {
    db.batch(BOOKKEEPING)?;
    let rows = db.query("SELECT MAX(version) FROM dfx_history_migrations", &[])?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(Val::int)
        .unwrap_or(0))
}

/// Runs `f` in one exclusive transaction: committed when it succeeds, rolled back when
/// not.
fn locked<T>(
    db: &mut dyn Backend,
    f: impl FnOnce(&mut dyn Backend) -> Result<T, HistoryError>,
) -> Result<T, HistoryError> {
    db.begin_exclusive()?;
    match f(db) {
        Ok(v) => {
            db.batch("COMMIT")?;
            Ok(v)
        }
        Err(e) => {
            let _ = db.batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Applies every migration above the database's version up to `target`, each in its own
/// exclusive transaction that re-reads the version first: another runner that migrated
/// in the meantime leaves nothing to do. Refuses a database newer than this build.
pub(crate) fn migrate_to(db: &mut dyn Backend, target: i64) -> Result<i64, HistoryError> {
    let too_new = |db: &mut dyn Backend, current: i64| {
        (current > latest()).then(|| HistoryError::SchemaTooNew {
            db: db.describe(),
            found: current,
            known: latest(),
        })
    };
    let current = version(db)?;
    if let Some(e) = too_new(db, current) {
        return Err(e);
    }
    for m in MIGRATIONS
        .iter()
        .filter(|m| m.version > current && m.version <= target)
    {
        locked(db, |db| {
            let now = stored_version(db)?;
            if let Some(e) = too_new(db, now) {
                return Err(e);
            }
            if now >= m.version {
                return Ok(());
            }
            db.batch(m.sql)?;
            db.exec(
                "INSERT INTO dfx_history_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                &[
                    m.version.into(),
                    m.name.into(),
                    chrono::Utc::now().to_rfc3339().into(),
                ],
            )
            .map(|_| ())
        })?;
    }
    version(db)
}
