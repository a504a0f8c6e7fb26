//! Shared by the history tests: run folders written like the harness writes them, and
//! the two backends (SQLite in a temp folder; PostgreSQL from `DFX_TEST_POSTGRES_URL`,
//! one fresh database per check).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use dfx_history::HistoryError;
use dfx_history::store::{Backend, HistoryStore, Postgres, SqlStore, Sqlite};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use serde_json::json;

/// The PostgreSQL server to test against.
pub(crate) const PG_ENV: &str = "DFX_TEST_POSTGRES_URL";
/// Set to 1 (by `.ci/run`): a missing PostgreSQL fails the PostgreSQL trials.
pub(crate) const REQUIRE_ENV: &str = "DFX_REQUIRE_POSTGRES";

/// Where one check stores its history.
pub(crate) enum Backends {
    Sqlite(PathBuf),
    Postgres(Box<postgres::Config>),
}

impl Backends {
    /// A raw connection.
    pub(crate) fn backend(&self) -> Result<Box<dyn BackendBox>, HistoryError> {
        Ok(match self {
            Backends::Sqlite(p) => Box::new(Sqlite::open(p)?),
            Backends::Postgres(c) => Box::new(Postgres::connect_config(c)?),
        })
    }

    /// The store, migrated.
    pub(crate) fn open(&self) -> Result<Box<dyn HistoryStore>, HistoryError> {
        Ok(Box::new(SqlStore::new(self.backend()?)?))
    }
}

/// A boxed backend is a backend.
pub trait BackendBox: Backend {}
impl<T: Backend> BackendBox for T {}

impl Backend for Box<dyn BackendBox> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn batch(&mut self, sql: &str) -> Result<(), HistoryError> {
        (**self).batch(sql)
    }
    fn begin_exclusive(&mut self) -> Result<(), HistoryError> {
        (**self).begin_exclusive()
    }
    fn check_integrity(&mut self) -> Result<(), HistoryError> {
        (**self).check_integrity()
    }
    fn exec(&mut self, sql: &str, p: &[dfx_history::store::Val]) -> Result<u64, HistoryError> {
        (**self).exec(sql, p)
    }
    fn query(
        &mut self,
        sql: &str,
        p: &[dfx_history::store::Val],
    ) -> Result<Vec<Vec<dfx_history::store::Val>>, HistoryError> {
        (**self).query(sql, p)
    }
}

/// Rows of one run as schema version 1 stored them.
pub(crate) const V1_ROWS: &[&str] = &[
    "INSERT INTO runs (run_id, content_hash, hardware, sort_key, started, finished, interrupted, git_sha, fingerprint, added_at) VALUES ('20251231-010000-H100', 'old', 'H100', '2025-12-31T01:00:00.000000Z', NULL, NULL, 0, 'abc', '{\"hardware\": \"H100\", \"server_versions\": {}, \"config_hashes\": {}, \"deploy_hashes\": {}, \"flags\": null, \"dfx_perf_version\": null, \"git_sha\": \"abc\", \"sim_speed\": null, \"bench_tool\": null, \"hostname\": null, \"gpu\": null}', 'x')",
    "INSERT INTO trials (run_id, trial, seq, outcome, interrupted, unclean, failures) VALUES ('20251231-010000-H100', 't::e::c1', 0, 'passed', 0, NULL, '[]')",
    "INSERT INTO metrics (run_id, trial, metric, value) VALUES ('20251231-010000-H100', 't::e::c1', 'median_e2el_ms', 120.0)",
];

/// Writes a run folder `tmp/<id>` with two trials (`e2el` on the first).
pub(crate) fn write_run(tmp: &Path, id: &str, e2el: f64, interrupted: bool) -> PathBuf {
    let dir = tmp.join(id);
    let tdir = dir.join("trials/t__e__c1");
    std::fs::create_dir_all(&tdir).unwrap();
    let started = format!("20{}-{}-{}T01:00:00+02:00", &id[2..4], &id[4..6], &id[6..8]);
    let run = json!({"run_id": id, "dfx_perf_version": "0.1.0", "git_sha": "abc",
        "hardware": "H100", "bench_tool": "native", "flags": [], "config_files": [],
        "started": started, "finished": started, "interrupted": interrupted,
        "gpu": {"name": "NVIDIA H100 80GB HBM3", "driver": "550.54", "memory_mib": 81559.0}});
    let trial = |name: &str, e: f64, thresholds: serde_json::Value| {
        json!({
        "name": name, "test_name": "t", "suffix": "e", "step": "c1", "kind": "concurrency",
        "max_concurrency": 1, "num_prompts": 4, "outcome": "passed", "failures": [],
        "breaches": [], "warnings": [], "thresholds": thresholds,
        "metrics": {"completed": 4, "failed": 0, "median_e2el_ms": e, "audio_throughput": 3.5},
        "result": "trials/t__e__c1/result.json"})
    };
    let summary = json!({"run_id": id, "hardware": "H100", "trials": [
        trial("t::e::c1", e2el, json!([{"metric": "median_e2el_ms", "value": 500.0,
            "direction": "lower_is_better", "source": {"from": "store", "file": "baselines/H100.json"}}])),
        trial("t::e::c4", e2el * 2.0, json!([])),
    ]});
    let result = json!({"completed": 4, "median_e2el_ms": e2el, "median_audio_duration_s": 2.5,
        "trial": "t::e::c1"});
    for (p, v) in [("run.json", run), ("summary.json", summary)] {
        std::fs::write(dir.join(p), serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    }
    std::fs::write(tdir.join("result.json"), result.to_string()).unwrap();
    dir
}

static DB_SEQ: AtomicUsize = AtomicUsize::new(0);

/// A fresh database on the server of `url`, dropped by [`PgGuard`].
fn fresh_pg(url: &str) -> Result<(postgres::Config, PgGuard), String> {
    let admin: postgres::Config = url.parse().map_err(|e| format!("{PG_ENV}: {e}"))?;
    let name = format!(
        "dfx_hist_test_{}_{}",
        std::process::id(),
        DB_SEQ.fetch_add(1, Ordering::SeqCst)
    );
    let mut client = admin
        .connect(postgres::NoTls)
        .map_err(|e| format!("{PG_ENV}: {e}"))?;
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .map_err(|e| e.to_string())?;
    let mut cfg = admin.clone();
    cfg.dbname(&name);
    Ok((cfg, PgGuard { admin, name }))
}

/// Drops the test database.
pub(crate) struct PgGuard {
    admin: postgres::Config,
    name: String,
}

impl Drop for PgGuard {
    fn drop(&mut self) {
        if let Ok(mut c) = self.admin.connect(postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// One check, run on each backend.
pub(crate) type Check = fn(&Backends, &Path) -> Result<(), Failed>;

/// Runs every check on SQLite and on PostgreSQL (ignored with the reason when
/// `DFX_TEST_POSTGRES_URL` is unset, failed then when `DFX_REQUIRE_POSTGRES=1`).
pub(crate) fn run_checks(checks: &'static [(&'static str, Check)]) {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for &(name, check) in checks {
        trials.push(Trial::test(format!("sqlite::{name}"), move || {
            let tmp = tempfile::tempdir()?;
            check(
                &Backends::Sqlite(tmp.path().join("h/history.sqlite")),
                tmp.path(),
            )
        }));
        trials.push(Trial::ignorable_test(
            format!("postgres::{name}"),
            move || {
                let Some(url) = std::env::var(PG_ENV).ok().filter(|u| !u.is_empty()) else {
                    let why = format!("{PG_ENV} is not set (.ci/run starts a PostgreSQL server)");
                    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
                        return Err(format!("{why}; {REQUIRE_ENV}=1 makes that a failure").into());
                    }
                    return Ok(Completion::ignored_with(why));
                };
                let (cfg, _guard) = fresh_pg(&url)?;
                let tmp = tempfile::tempdir()?;
                check(&Backends::Postgres(Box::new(cfg)), tmp.path())
                    .map(|()| Completion::Completed)
            },
        ));
    }
    libtest_mimic::run(&args, trials).exit();
}
