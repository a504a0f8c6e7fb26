//! The PostgreSQL backend (the synchronous `postgres` client), for teams whose runners
//! report to one place. Plain connections only (Unix socket or TCP without TLS).

use std::error::Error;

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, NoTls};

use super::sql::{Backend, Val, WRITE_LOCK_WAIT};
use crate::HistoryError;

/// A PostgreSQL history database.
pub struct Postgres {
    client: Client,
    name: String,
}

impl Postgres {
    /// Connects to `url` (`postgres://user@host:port/db`, `host=/run/pg user=… dbname=…`).
    pub fn connect(url: &str) -> Result<Self, HistoryError> {
        let config: postgres::Config =
            url.parse()
                .map_err(|e: postgres::Error| HistoryError::BadSpec {
                    spec: redact(url),
                    problem: e.to_string(),
                })?;
        Self::connect_config(&config)
    }

    /// Connects with a parsed configuration.
    pub fn connect_config(config: &postgres::Config) -> Result<Self, HistoryError> {
        let name = format!(
            "postgres:{}/{}",
            config
                .get_hosts()
                .first()
                .map(host_text)
                .unwrap_or_default(),
            config.get_dbname().unwrap_or("")
        );
        let client = config
            .connect(NoTls)
            .map_err(|source| HistoryError::Postgres {
                db: name.clone(),
                source,
            })?;
        Ok(Postgres { client, name })
    }

    fn err(&self, source: postgres::Error) -> HistoryError {
        if source.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) {
            return HistoryError::Locked {
                db: self.name.clone(),
                waited: WRITE_LOCK_WAIT,
            };
        }
        HistoryError::Postgres {
            db: self.name.clone(),
            source,
        }
    }
}

fn host_text(h: &postgres::config::Host) -> String {
    match h {
        postgres::config::Host::Tcp(s) => s.clone(),
        postgres::config::Host::Unix(p) => p.display().to_string(),
    }
}

/// `url` without a password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{user}{}", &url[..s + 3], &url[at..])
        }
        _ => url.to_string(),
    }
}

impl ToSql for Val {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Val::Null => Ok(IsNull::Yes),
            Val::Int(i) => i.to_sql(ty, out),
            Val::Real(x) => x.to_sql(ty, out),
            Val::Text(s) => s.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [Type::INT8, Type::FLOAT8, Type::TEXT, Type::VARCHAR].contains(ty)
    }

    to_sql_checked!();
}

fn column(row: &postgres::Row, i: usize) -> Result<Val, postgres::Error> {
    let ty = row.columns()[i].type_().clone();
    Ok(if ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?
            .map_or(Val::Null, Val::Int)
    } else if ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?
            .map_or(Val::Null, |v| Val::Int(v.into()))
    } else if ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i)?
            .map_or(Val::Null, Val::Real)
    } else {
        row.try_get::<_, Option<String>>(i)?
            .map_or(Val::Null, Val::Text)
    })
}

/// The advisory lock key of writers and schema migrations (`dfx-hist` as ASCII bytes).
const MIGRATION_LOCK_KEY: i64 = 0x6466_782d_6869_7374;

impl Backend for Postgres {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn batch(&mut self, sql: &str) -> Result<(), HistoryError> {
        self.client.batch_execute(sql).map_err(|e| self.err(e))
    }

    /// `BEGIN` plus a transaction-scoped advisory lock on one fixed key, waited for at
    /// most [`WRITE_LOCK_WAIT`] (`lock_timeout`): concurrent writers and migrations (and
    /// `CREATE TABLE IF NOT EXISTS`, which races in PostgreSQL) queue.
    fn begin_exclusive(&mut self) -> Result<(), HistoryError> {
        let ms = WRITE_LOCK_WAIT.as_millis();
        let taken = self.batch(&format!(
            "BEGIN; SET LOCAL lock_timeout = {ms}; SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"
        ));
        if taken.is_err() {
            let _ = self.batch("ROLLBACK");
        }
        taken
    }

    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, HistoryError> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        self.client.execute(sql, &refs).map_err(|e| self.err(e))
    }

    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, HistoryError> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        let rows = self.client.query(sql, &refs).map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| (0..r.len()).map(|i| column(r, i)).collect())
            .collect::<Result<_, _>>()
            .map_err(|e| self.err(e))
    }
}
