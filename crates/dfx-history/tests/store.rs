//! The history store on both backends: SQLite always, PostgreSQL when
//! `DFX_TEST_POSTGRES_URL` names a server (each check gets its own database, dropped
//! afterwards). Idempotent adds, round trips, replacement, interrupted runs, migrations
//! from an empty database and from the previous version, a newer schema refused, and
//! several runners opening one new database at the same moment, and eight writers adding
//! runs at the same time.

mod common;

use std::path::Path;

use common::{Backends, Check, write_run};
use dfx_history::store::{HistoryStore, SqlStore, schema};
use dfx_history::{AddOutcome, HistoryError, read_run};
use libtest_mimic::Failed;

const CHECKS: &[(&str, Check)] = &[
    ("adding_a_run_twice_stores_it_once", add_twice),
    ("a_stored_run_reads_back_equal", round_trip),
    ("a_changed_run_replaces_the_stored_one", replaced),
    ("an_interrupted_run_is_stored_as_such", interrupted),
    ("a_run_of_repeats_keeps_every_repeat", with_repeats),
    (
        "a_failure_class_is_read_from_the_verdict_and_stored",
        failure_class,
    ),
    ("migrations_from_an_empty_database", from_empty),
    ("migrations_from_the_previous_version", from_previous),
    ("a_newer_schema_is_refused", newer_refused),
    (
        "runners_opening_one_new_database_at_once_migrate_it_once",
        concurrent_open,
    ),
    (
        "eight_concurrent_writers_add_every_run_exactly_once",
        concurrent_writers,
    ),
];

fn main() {
    common::run_checks(CHECKS);
}

fn ensure(ok: bool, msg: impl FnOnce() -> String) -> Result<(), Failed> {
    if ok { Ok(()) } else { Err(msg().into()) }
}

fn add_twice(b: &Backends, tmp: &Path) -> Result<(), Failed> {
    let run = read_run(&write_run(tmp, "20260101-010000-H100", 100.0, false))?;
    let mut store = b.open()?;
    ensure(store.add(&run)? == AddOutcome::Added, || "first add".into())?;
    ensure(store.add(&run)? == AddOutcome::Unchanged, || {
        "second add".into()
    })?;
    let again = read_run(&run_dir(tmp, "20260101-010000-H100"))?;
    ensure(store.add(&again)? == AddOutcome::Unchanged, || {
        "re-read".into()
    })?;
    let list = store.list()?;
    ensure(list.len() == 1 && list[0].trials == 2, || {
        format!("{list:?}")
    })
}

fn run_dir(tmp: &Path, id: &str) -> std::path::PathBuf {
    tmp.join(id)
}

fn round_trip(b: &Backends, tmp: &Path) -> Result<(), Failed> {
    let mut store = b.open()?;
    let runs: Vec<_> = ["20260102-010000-H100", "20260101-010000-H100"]
        .iter()
        .map(|id| read_run(&write_run(tmp, id, 100.0, false)))
        .collect::<Result<_, _>>()?;
    for r in &runs {
        store.add(r)?;
    }
    let loaded = store.load(Some("H100"))?;
    ensure(loaded.len() == 2, || format!("{} runs", loaded.len()))?;
    ensure(loaded[0] == runs[1] && loaded[1] == runs[0], || {
        format!("oldest first, equal:\n{:?}\n{:?}", loaded[0], runs[1])
    })?;
    ensure(loaded[0].content_hash() == runs[1].content_hash(), || {
        "hash".into()
    })?;
    ensure(store.load(Some("H20"))?.is_empty(), || {
        "other hardware".into()
    })
}

fn replaced(b: &Backends, tmp: &Path) -> Result<(), Failed> {
    let mut store = b.open()?;
    let id = "20260101-010000-H100";
    store.add(&read_run(&write_run(tmp, id, 100.0, false))?)?;
    let changed = read_run(&write_run(tmp, id, 150.0, false))?;
    ensure(store.add(&changed)? == AddOutcome::Replaced, || {
        "replace".into()
    })?;
    let loaded = store.load(None)?;
    let v = loaded[0].trials[0].metrics.get("median_e2el_ms").copied();
    ensure(loaded.len() == 1 && v == Some(150.0), || format!("{v:?}"))
}

fn interrupted(b: &Backends, tmp: &Path) -> Result<(), Failed> {
    let mut store = b.open()?;
    store.add(&read_run(&write_run(
        tmp,
        "20260101-010000-H100",
        100.0,
        true,
    ))?)?;
    let list = store.list()?;
    ensure(list[0].interrupted, || format!("{list:?}"))?;
    ensure(store.load(None)?[0].interrupted, || "load".into())
}

/// A step run as repeats (`--repeats 3`): each repeat's value survives the store, in
/// order, and a single run stays without any.
fn with_repeats(b: &Backends, tmp: &Path) -> Result<(), Failed> {
    let id = "20260103-010000-H100";
    let dir = write_run(tmp, id, 100.0, false);
    let path = dir.join("summary.json");
    let mut summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    summary["trials"][0]["repeats"] = serde_json::json!({"count": 3, "stats": {
        "median_e2el_ms": {"values": [104.0, 100.0, 97.0], "median": 100.0}}});
    std::fs::write(&path, serde_json::to_vec(&summary)?)?;
    let run = read_run(&dir)?;
    let want = vec![104.0, 100.0, 97.0];
    ensure(
        run.trials[0].repeats.get("median_e2el_ms") == Some(&want),
        || format!("read: {:?}", run.trials[0].repeats),
    )?;
    let mut store = b.open()?;
    store.add(&run)?;
    let loaded = store.load(None)?;
    ensure(loaded[0] == run, || format!("{:?}", loaded[0].trials))?;
    ensure(loaded[0].trials[1].repeats.is_empty(), || {
        "single run".into()
    })?;
    ensure(store.add(&run)? == AddOutcome::Unchanged, || {
        "re-add".into()
    })
}

/// `failure_class` of a failed trial (summary.json, as in its verdict.json) is stored and
/// read back (migration 4); a trial without one has none (older runs).
fn failure_class(b: &Backends, tmp: &Path) -> Result<(), Failed> {
    let id = "20260104-010000-H100";
    let dir = write_run(tmp, id, 900.0, false);
    let path = dir.join("summary.json");
    let mut summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    summary["trials"][0]["outcome"] = "failed".into();
    summary["trials"][0]["failures"] = serde_json::json!(["median_e2el_ms 900 > 500"]);
    summary["trials"][0]["failure_class"] = "breach".into();
    summary["trials"][0]["failure_detail"] = "median_e2el_ms 900 > 500".into();
    summary["trials"][1]["result"] = "trials/t__e__c4/result.json".into();
    std::fs::write(&path, serde_json::to_vec(&summary)?)?;
    let verdict = serde_json::json!({"verdict": {"passed": false, "failures": [],
        "breaches": [], "warnings": []}, "failure_class": "breach",
        "failure_detail": "median_e2el_ms 900 > 500"});
    std::fs::write(
        dir.join("trials/t__e__c1/verdict.json"),
        verdict.to_string(),
    )?;
    std::fs::create_dir_all(dir.join("trials/t__e__c4"))?;
    std::fs::write(dir.join("trials/t__e__c4/verdict.json"), "{not json")?;
    let run = read_run(&dir)?;
    let classes: Vec<Option<&str>> = run
        .trials
        .iter()
        .map(|t| t.failure_class.as_deref())
        .collect();
    ensure(classes == [Some("breach"), None], || format!("{classes:?}"))?;
    let mut store = b.open()?;
    store.add(&run)?;
    let loaded = store.load(None)?;
    ensure(loaded[0] == run, || format!("{:?}", loaded[0].trials))?;
    ensure(store.add(&run)? == AddOutcome::Unchanged, || {
        "re-add".into()
    })
}

fn from_empty(b: &Backends, _tmp: &Path) -> Result<(), Failed> {
    let mut store = b.open()?;
    let v = store.schema_version()?;
    ensure(v == schema::latest(), || format!("version {v}"))?;
    ensure(store.list()?.is_empty(), || "empty".into())
}

fn from_previous(b: &Backends, tmp: &Path) -> Result<(), Failed> {
    let previous = schema::latest() - 1;
    let mut old = SqlStore::at_version(b.backend()?, previous)?;
    ensure(old.schema_version()? == previous, || "at previous".into())?;
    // A run as the previous version stored it (no needs_data column yet).
    let db = old.backend();
    for sql in common::V1_ROWS {
        db.batch(sql)?;
    }
    drop(old);
    let mut store = b.open()?;
    ensure(store.schema_version()? == schema::latest(), || {
        "migrated".into()
    })?;
    let runs = store.load(None)?;
    ensure(runs.len() == 1 && runs[0].trials.len() == 1, || {
        format!("{runs:?}")
    })?;
    let t = &runs[0].trials[0];
    ensure(
        !t.needs_data
            && t.failure_class.is_none()
            && t.metrics.get("median_e2el_ms") == Some(&120.0),
        || format!("{t:?}"),
    )?;
    let new = read_run(&write_run(tmp, "20260105-010000-H100", 100.0, false))?;
    ensure(store.add(&new)? == AddOutcome::Added, || {
        "add after migration".into()
    })
}

fn newer_refused(b: &Backends, _tmp: &Path) -> Result<(), Failed> {
    let mut store = SqlStore::new(b.backend()?)?;
    store.backend().batch(
        "INSERT INTO dfx_history_migrations (version, name, applied_at) VALUES (99, 'future', 'x')",
    )?;
    drop(store);
    match b.open() {
        Err(HistoryError::SchemaTooNew { found: 99, .. }) => Ok(()),
        Err(e) => Err(format!("wrong error: {e}").into()),
        Ok(_) => Err("a newer schema was opened".into()),
    }
}

/// Six connections open the same empty database at once (a barrier releases them
/// together): each must open it, and every migration must be recorded exactly once.
fn concurrent_open(b: &Backends, _tmp: &Path) -> Result<(), Failed> {
    const RUNNERS: usize = 6;
    let barrier = std::sync::Barrier::new(RUNNERS);
    let results: Vec<Result<i64, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..RUNNERS)
            .map(|_| {
                s.spawn(|| {
                    let db = b.backend().map_err(|e| e.to_string())?;
                    barrier.wait();
                    let mut store = SqlStore::new(db).map_err(|e| e.to_string())?;
                    store.schema_version().map_err(|e| e.to_string())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
            .collect()
    });
    for r in &results {
        ensure(r.as_ref().is_ok_and(|v| *v == schema::latest()), || {
            format!("a runner failed: {results:?}")
        })?;
    }
    let mut db = b.backend()?;
    let rows = dfx_history::store::Backend::query(
        &mut db,
        "SELECT version, COUNT(*) FROM dfx_history_migrations GROUP BY version ORDER BY version",
        &[],
    )?;
    let counts: Vec<(i64, i64)> = rows
        .iter()
        .map(|r| (r[0].int().unwrap_or(-1), r[1].int().unwrap_or(-1)))
        .collect();
    let want: Vec<(i64, i64)> = schema::MIGRATIONS.iter().map(|m| (m.version, 1)).collect();
    ensure(counts == want, || format!("migrations recorded {counts:?}"))
}

/// Eight writers, each with its own connections, add 20 runs each at the same time (a
/// barrier releases every round together; each round opens the database anew, as a
/// `dfx-perf history add` process does): every add succeeds and every run is stored
/// exactly once, with its trials. Without the write lock taken up front, SQLite refuses
/// some adds with "database is locked".
fn concurrent_writers(b: &Backends, tmp: &Path) -> Result<(), Failed> {
    const WRITERS: usize = 8;
    const ROUNDS: usize = 20;
    let id = |w: usize, r: usize| format!("20260102-{w:02}{r:02}00-H100");
    let mut runs = Vec::new();
    for w in 0..WRITERS {
        for r in 0..ROUNDS {
            runs.push(read_run(&write_run(
                tmp,
                &id(w, r),
                100.0 + r as f64,
                false,
            ))?);
        }
    }
    b.open()?;
    let barrier = std::sync::Barrier::new(WRITERS);
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .chunks(ROUNDS)
            .map(|mine| {
                let barrier = &barrier;
                s.spawn(move || {
                    let mut failed = Vec::new();
                    for run in mine {
                        barrier.wait();
                        let added = b.open().and_then(|mut store| store.add(run));
                        match added {
                            Ok(AddOutcome::Added) => {}
                            other => failed.push(format!("{}: {other:?}", run.run_id)),
                        }
                    }
                    failed
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec!["panicked".into()]))
            .collect()
    });
    ensure(failures.is_empty(), || format!("adds failed: {failures:?}"))?;
    let list = b.open()?.list()?;
    let mut stored: Vec<&str> = list.iter().map(|r| r.run_id.as_str()).collect();
    stored.dedup();
    ensure(
        stored.len() == WRITERS * ROUNDS && list.len() == stored.len(),
        || format!("{} rows, {} distinct runs", list.len(), stored.len()),
    )?;
    ensure(list.iter().all(|r| r.trials == 2), || {
        format!(
            "trials per run: {:?}",
            list.iter().map(|r| r.trials).collect::<Vec<_>>()
        )
    })
}
