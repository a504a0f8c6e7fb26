//! The SQLite backend (rusqlite, SQLite compiled in): one file, nothing to install.

use std::path::Path;

use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use rusqlite::{Connection, ToSql};

use super::sql::{Backend, Val, WRITE_LOCK_WAIT};
use crate::HistoryError;

/// A SQLite history file.
pub struct Sqlite {
    conn: Connection,
    name: String,
}

impl Sqlite {
    /// Opens (creating it and its folder when missing) the SQLite file at `path`.
    pub fn open(path: &Path) -> Result<Self, HistoryError> {
        let name = format!("sqlite:{}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| HistoryError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let err = |source| sqlite_error(&name, source);
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(WRITE_LOCK_WAIT).map_err(err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(err)?;
        Ok(Sqlite { conn, name })
    }

    fn err(&self, source: rusqlite::Error) -> HistoryError {
        sqlite_error(&self.name, source)
    }
}

/// rusqlite's error as the history's: a busy database (the busy timeout passed) is
/// [`HistoryError::Locked`], a damaged file [`HistoryError::Damaged`].
fn sqlite_error(db: &str, source: rusqlite::Error) -> HistoryError {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseCorrupt, NotADatabase};
    match source.sqlite_error_code() {
        Some(DatabaseBusy) => HistoryError::Locked {
            db: db.to_string(),
            waited: WRITE_LOCK_WAIT,
        },
        Some(DatabaseCorrupt | NotADatabase) => HistoryError::Damaged {
            db: db.to_string(),
            problem: source.to_string(),
        },
        _ => HistoryError::Sqlite {
            db: db.to_string(),
            source,
        },
    }
}

/// Longest part of SQLite's integrity report quoted in an error.
const MAX_INTEGRITY_LINES: usize = 5;

impl ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Val::Null => ToSqlOutput::Owned(SqlValue::Null),
            Val::Int(i) => ToSqlOutput::Owned(SqlValue::Integer(*i)),
            Val::Real(x) => ToSqlOutput::Owned(SqlValue::Real(*x)),
            Val::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        })
    }
}

fn from_ref(v: ValueRef<'_>) -> Val {
    match v {
        ValueRef::Null => Val::Null,
        ValueRef::Integer(i) => Val::Int(i),
        ValueRef::Real(x) => Val::Real(x),
        ValueRef::Text(t) | ValueRef::Blob(t) => Val::Text(String::from_utf8_lossy(t).into()),
    }
}

impl Backend for Sqlite {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn batch(&mut self, sql: &str) -> Result<(), HistoryError> {
        self.conn.execute_batch(sql).map_err(|e| self.err(e))
    }

    /// `BEGIN IMMEDIATE`: the write lock at once (waiting up to the busy timeout), so two
    /// connections never both read an old version and then both migrate.
    fn begin_exclusive(&mut self) -> Result<(), HistoryError> {
        self.batch("BEGIN IMMEDIATE")
    }

    /// `PRAGMA quick_check`: every page and index structure readable and consistent
    /// (linear in the file's size, without the index-content cross-check of
    /// `integrity_check`).
    fn check_integrity(&mut self) -> Result<(), HistoryError> {
        let rows = self.query("PRAGMA quick_check", &[])?;
        let lines: Vec<String> = rows
            .iter()
            .filter_map(|r| r.first().and_then(Val::text).map(str::to_string))
            .collect();
        if lines.len() == 1 && lines[0] == "ok" {
            return Ok(());
        }
        let mut problem = lines
            .iter()
            .take(MAX_INTEGRITY_LINES)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ");
        if lines.len() > MAX_INTEGRITY_LINES {
            problem.push_str(&format!("; and {} more", lines.len() - MAX_INTEGRITY_LINES));
        }
        Err(HistoryError::Damaged {
            db: self.name.clone(),
            problem: format!("PRAGMA quick_check: {problem}"),
        })
    }

    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, HistoryError> {
        self.conn
            .execute(sql, rusqlite::params_from_iter(params))
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, HistoryError> {
        let run = || -> rusqlite::Result<Vec<Vec<Val>>> {
            let mut stmt = self.conn.prepare(sql)?;
            let n = stmt.column_count();
            let rows = stmt.query_map(rusqlite::params_from_iter(params), |row| {
                (0..n).map(|i| row.get_ref(i).map(from_ref)).collect()
            })?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(c: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(c), None)
    }

    /// The busy timeout passing, or a damaged file, is said in words naming the file.
    #[test]
    fn busy_and_damaged_name_the_file_and_the_bound() {
        let locked = sqlite_error("sqlite:/h/history.sqlite", code(rusqlite::ffi::SQLITE_BUSY));
        assert!(matches!(locked, HistoryError::Locked { .. }), "{locked:?}");
        let text = locked.to_string();
        assert!(text.contains("sqlite:/h/history.sqlite"), "{text}");
        assert!(text.contains("more than 60 s"), "{text}");
        let damaged = sqlite_error(
            "sqlite:/h/history.sqlite",
            code(rusqlite::ffi::SQLITE_CORRUPT),
        );
        assert!(
            matches!(damaged, HistoryError::Damaged { .. }),
            "{damaged:?}"
        );
        assert!(damaged.to_string().contains("is damaged"), "{damaged}");
    }
}
