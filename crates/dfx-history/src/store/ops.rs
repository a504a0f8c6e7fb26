//! The store's statements, written once for every [`Backend`].

use std::collections::BTreeMap;

use super::schema;
use super::sql::{Backend, Val};
use super::{AddOutcome, HistoryStore, RunListing};
use crate::HistoryError;
use crate::model::{Fingerprint, RunRecord, Threshold, TrialOutcome, TrialRecord};

/// A [`HistoryStore`] on a SQL backend.
pub struct SqlStore<B: Backend> {
    db: B,
}

impl<B: Backend> SqlStore<B> {
    /// Wraps `db` and migrates it to the newest schema.
    pub fn new(db: B) -> Result<Self, HistoryError> {
        Self::at_version(db, schema::latest())
    }

    /// Wraps `db` and migrates it to `version` only (tests of migrations).
    pub fn at_version(mut db: B, version: i64) -> Result<Self, HistoryError> {
        schema::migrate_to(&mut db, version)?;
        Ok(SqlStore { db })
    }

    /// The backend, for statements the store does not offer (tests).
    pub fn backend(&mut self) -> &mut B {
        &mut self.db
    }

    fn corrupt(&self, problem: impl Into<String>) -> HistoryError {
        HistoryError::Corrupt {
            db: self.db.describe(),
            problem: problem.into(),
        }
    }

    fn stored_hash(&mut self, run_id: &str) -> Result<Option<String>, HistoryError> {
        let rows = self.db.query(
            "SELECT content_hash FROM runs WHERE run_id = $1",
            &[run_id.into()],
        )?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .and_then(Val::text)
            .map(str::to_string))
    }

    fn delete(&mut self, run_id: &str) -> Result<(), HistoryError> {
        for table in ["repeat_values", "metrics", "thresholds", "trials", "runs"] {
            self.db.exec(
                &format!("DELETE FROM {table} WHERE run_id = $1"),
                &[run_id.into()],
            )?;
        }
        Ok(())
    }

    fn insert(&mut self, run: &RunRecord, hash: &str) -> Result<(), HistoryError> {
        let fingerprint = serde_json::to_string(&run.fingerprint).unwrap_or_default();
        self.db.exec(
            "INSERT INTO runs (run_id, content_hash, hardware, sort_key, started, finished, \
             interrupted, git_sha, fingerprint, added_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                run.run_id.as_str().into(),
                hash.into(),
                run.hardware_identity.as_str().into(),
                run.sort_key.as_str().into(),
                run.started.clone().into(),
                run.finished.clone().into(),
                run.interrupted.into(),
                run.fingerprint.git_sha.clone().into(),
                fingerprint.into(),
                chrono::Utc::now().to_rfc3339().into(),
            ],
        )?;
        for t in &run.trials {
            self.insert_trial(&run.run_id, t)?;
        }
        Ok(())
    }

    fn insert_trial(&mut self, run_id: &str, t: &TrialRecord) -> Result<(), HistoryError> {
        let failures = serde_json::to_string(&t.failures).unwrap_or_default();
        self.db.exec(
            "INSERT INTO trials (run_id, trial, seq, outcome, interrupted, unclean, failures, \
             needs_data, failure_class) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            &[
                run_id.into(),
                t.name.as_str().into(),
                t.seq.into(),
                t.outcome.as_str().into(),
                t.interrupted.into(),
                t.unclean.clone().into(),
                failures.into(),
                t.needs_data.into(),
                t.failure_class.clone().into(),
            ],
        )?;
        for (metric, value) in &t.metrics {
            self.db.exec(
                "INSERT INTO metrics (run_id, trial, metric, value) VALUES ($1, $2, $3, $4)",
                &[
                    run_id.into(),
                    t.name.as_str().into(),
                    metric.as_str().into(),
                    (*value).into(),
                ],
            )?;
        }
        for (metric, values) in &t.repeats {
            for (k, value) in values.iter().enumerate() {
                self.db.exec(
                    "INSERT INTO repeat_values (run_id, trial, metric, repeat, value) \
                     VALUES ($1, $2, $3, $4, $5)",
                    &[
                        run_id.into(),
                        t.name.as_str().into(),
                        metric.as_str().into(),
                        (k as i64 + 1).into(),
                        (*value).into(),
                    ],
                )?;
            }
        }
        for th in &t.thresholds {
            self.db.exec(
                "INSERT INTO thresholds (run_id, trial, metric, value, direction, source) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    run_id.into(),
                    t.name.as_str().into(),
                    th.metric.as_str().into(),
                    th.value.into(),
                    th.direction.as_str().into(),
                    th.source.as_str().into(),
                ],
            )?;
        }
        Ok(())
    }

    /// Runs `f` holding the write lock (taken up front: [`Backend::begin_exclusive`]),
    /// after checking the database's integrity: committed when `f` succeeds, rolled back
    /// when not.
    fn in_write_transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        self.db.begin_exclusive()?;
        match self.db.check_integrity().and_then(|()| f(self)) {
            Ok(v) => {
                self.db.batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.db.batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

type Key = (String, String);

impl<B: Backend> SqlStore<B> {
    fn load_runs(&mut self, hw: &[Val], filter: &str) -> Result<Vec<RunRecord>, HistoryError> {
        let rows = self.db.query(
            &format!(
                "SELECT run_id, hardware, sort_key, started, finished, interrupted, fingerprint \
                 FROM runs {filter} ORDER BY sort_key, run_id"
            ),
            hw,
        )?;
        rows.iter()
            .map(|r| {
                let text = |i: usize| r.get(i).and_then(Val::text).map(str::to_string);
                let fingerprint: Fingerprint =
                    serde_json::from_str(&text(6).unwrap_or_default())
                        .map_err(|e| self.corrupt(format!("runs.fingerprint: {e}")))?;
                Ok(RunRecord {
                    run_id: text(0).ok_or_else(|| self.corrupt("runs.run_id is NULL"))?,
                    hardware_identity: text(1).unwrap_or_default(),
                    sort_key: text(2).unwrap_or_default(),
                    started: text(3),
                    finished: text(4),
                    interrupted: r.get(5).and_then(Val::int).unwrap_or(0) != 0,
                    fingerprint,
                    trials: Vec::new(),
                })
            })
            .collect()
    }

    fn load_trials(
        &mut self,
        hw: &[Val],
        filter: &str,
    ) -> Result<BTreeMap<String, Vec<TrialRecord>>, HistoryError> {
        let sub = format!("run_id IN (SELECT run_id FROM runs {filter})");
        let mut metrics: BTreeMap<Key, BTreeMap<String, f64>> = BTreeMap::new();
        for r in self.db.query(
            &format!("SELECT run_id, trial, metric, value FROM metrics WHERE {sub}"),
            hw,
        )? {
            let key = (text_at(&r, 0), text_at(&r, 1));
            let value = r.get(3).and_then(Val::real).unwrap_or(f64::NAN);
            metrics
                .entry(key)
                .or_default()
                .insert(text_at(&r, 2), value);
        }
        let mut repeats: BTreeMap<Key, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
        for r in self.db.query(
            &format!(
                "SELECT run_id, trial, metric, value FROM repeat_values WHERE {sub} \
                 ORDER BY run_id, trial, metric, repeat"
            ),
            hw,
        )? {
            let value = r.get(3).and_then(Val::real).unwrap_or(f64::NAN);
            repeats
                .entry((text_at(&r, 0), text_at(&r, 1)))
                .or_default()
                .entry(text_at(&r, 2))
                .or_default()
                .push(value);
        }
        let mut thresholds: BTreeMap<Key, Vec<Threshold>> = BTreeMap::new();
        for r in self.db.query(
            &format!(
                "SELECT run_id, trial, metric, value, direction, source FROM thresholds \
                 WHERE {sub} ORDER BY metric"
            ),
            hw,
        )? {
            thresholds
                .entry((text_at(&r, 0), text_at(&r, 1)))
                .or_default()
                .push(Threshold {
                    metric: text_at(&r, 2),
                    value: r.get(3).and_then(Val::real).unwrap_or(f64::NAN),
                    direction: text_at(&r, 4),
                    source: text_at(&r, 5),
                });
        }
        let rows = self.db.query(
            &format!(
                "SELECT run_id, trial, seq, outcome, interrupted, unclean, failures, needs_data, \
                 failure_class FROM trials WHERE {sub} ORDER BY run_id, seq"
            ),
            hw,
        )?;
        let mut out: BTreeMap<String, Vec<TrialRecord>> = BTreeMap::new();
        for r in rows {
            let key = (text_at(&r, 0), text_at(&r, 1));
            let outcome = TrialOutcome::parse(&text_at(&r, 3))
                .ok_or_else(|| self.corrupt(format!("trials.outcome of {key:?}")))?;
            let failures = serde_json::from_str(&text_at(&r, 6))
                .map_err(|e| self.corrupt(format!("trials.failures of {key:?}: {e}")))?;
            let trial = TrialRecord {
                name: key.1.clone(),
                seq: r.get(2).and_then(Val::int).unwrap_or(0),
                outcome,
                interrupted: r.get(4).and_then(Val::int).unwrap_or(0) != 0,
                unclean: r.get(5).and_then(Val::text).map(str::to_string),
                failures,
                failure_class: r.get(8).and_then(Val::text).map(str::to_string),
                metrics: metrics.remove(&key).unwrap_or_default(),
                repeats: repeats.remove(&key).unwrap_or_default(),
                thresholds: thresholds.remove(&key).unwrap_or_default(),
                needs_data: r.get(7).and_then(Val::int).unwrap_or(0) != 0,
            };
            out.entry(key.0).or_default().push(trial);
        }
        Ok(out)
    }
}

fn text_at(r: &[Val], i: usize) -> String {
    r.get(i).and_then(Val::text).unwrap_or_default().to_string()
}

impl<B: Backend> HistoryStore for SqlStore<B> {
    fn describe(&self) -> String {
        self.db.describe()
    }

    fn schema_version(&mut self) -> Result<i64, HistoryError> {
        schema::version(&mut self.db)
    }

    fn add(&mut self, run: &RunRecord) -> Result<AddOutcome, HistoryError> {
        let hash = run.content_hash();
        self.in_write_transaction(|s| match s.stored_hash(&run.run_id)? {
            Some(h) if h == hash => Ok(AddOutcome::Unchanged),
            Some(_) => {
                s.delete(&run.run_id)?;
                s.insert(run, &hash)?;
                Ok(AddOutcome::Replaced)
            }
            None => {
                s.insert(run, &hash)?;
                Ok(AddOutcome::Added)
            }
        })
    }

    fn list(&mut self) -> Result<Vec<RunListing>, HistoryError> {
        let rows = self.db.query(
            "SELECT r.run_id, r.hardware, r.started, r.interrupted, r.git_sha, \
             (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.run_id), \
             (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.run_id AND t.outcome = 'failed') \
             FROM runs r ORDER BY r.sort_key, r.run_id",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| RunListing {
                run_id: text_at(r, 0),
                hardware: text_at(r, 1),
                started: r.get(2).and_then(Val::text).map(str::to_string),
                interrupted: r.get(3).and_then(Val::int).unwrap_or(0) != 0,
                git_sha: r.get(4).and_then(Val::text).map(str::to_string),
                trials: r.get(5).and_then(Val::int).unwrap_or(0),
                failed: r.get(6).and_then(Val::int).unwrap_or(0),
            })
            .collect())
    }

    fn load(&mut self, hardware: Option<&str>) -> Result<Vec<RunRecord>, HistoryError> {
        let (params, filter): (Vec<Val>, &str) = match hardware {
            Some(h) => (vec![h.into()], "WHERE hardware = $1"),
            None => (Vec::new(), ""),
        };
        let mut runs = self.load_runs(&params, filter)?;
        let mut trials = self.load_trials(&params, filter)?;
        for run in &mut runs {
            run.trials = trials.remove(&run.run_id).unwrap_or_default();
        }
        Ok(runs)
    }
}
