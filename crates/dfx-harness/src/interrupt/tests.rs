//! The interruption bookkeeping, without signals (the suite_cli test
//! `interrupting_a_run_…` sends real ones to the suite binary).

use std::time::{Duration, Instant};

use chrono::TimeZone;
use serde_json::Value;

use super::*;
use crate::finish::TrialRef;
use crate::pool::ServerInfo;
use crate::results::{RunDir, RunInfo};
use dfx_testkit::trials::concurrency_trial;

fn closing(dir: &std::path::Path) -> Closing {
    let now = chrono::Local.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let run = RunDir::create(dir, "H100", now).unwrap();
    let trials = (1..=4)
        .map(|c| {
            let trial = std::sync::Arc::new(concurrency_trial("test_a", "s", c, 8));
            TrialRef {
                dir_name: format!("test_a__s__c{c}"),
                trial,
            }
        })
        .collect();
    Closing {
        info: RunInfo {
            run_id: Some(run.id.clone()),
            dfx_perf_version: Some("0".into()),
            git_sha: None,
            hardware: Some("H100".into()),
            server: Some("fake".into()),
            launcher: Some("fake".into()),
            sim_speed: None,
            bench_tool: Some("fake".into()),
            assert_baseline: false,
            flags: vec![],
            argv: vec![],
            config_files: vec![],
            config_hashes: Default::default(),
            partition: None,
            hostname: Some("h".into()),
            started: Some(now.to_rfc3339()),
            finished: None,
            interrupted: false,
            trials_planned: 4,
            trials_selected: 3,
            warnings: vec![],
            gpu: None,
            server_versions: Default::default(),
            merged_from: Vec::new(),
            shards_missing: Vec::new(),
        },
        run,
        hardware: "H100".into(),
        assert_baseline: false,
        trials,
        // c2 is filtered out.
        selected: vec![0, 2, 3],
        history: None,
        gate: crate::finish::CloseGate::default(),
    }
}

fn read(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Trial c1 passed, c3 was running with two request records on disk when the signal came.
fn interrupted_progress(c: &Closing) -> (Progress, Current, Instant) {
    let mut done = SummaryEntry::new(&c.trials[0].trial, Outcome::Passed);
    done.seconds = Some(1.0);
    let mut progress = Progress {
        entries: vec![Some(done), None, None, None],
        server_starts: 1,
        ..Progress::default()
    };
    progress.frozen = true;
    let dir = c.run.trial_dir(&c.trials[2].dir_name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("records.jsonl"), "{\"index\":0}\n{\"index\":1}\n").unwrap();
    for d in ["01-test_a", "02-test_a"] {
        std::fs::create_dir_all(c.run.servers_dir().join(d)).unwrap();
    }
    let started = Instant::now();
    let current = Current {
        idx: 2,
        started,
        bench: Some("fake"),
        server: Some(ServerInfo {
            base_url: "http://127.0.0.1:9".into(),
            host: "127.0.0.1".into(),
            port: 9,
            rel_dir: "servers/02-test_a".into(),
            started: true,
            judge_url: None,
            process_group: None,
        }),
    };
    (progress, current, started + Duration::from_millis(2500))
}

#[test]
fn the_running_trial_is_failed_and_marked_with_its_partial_records() {
    let dir = tempfile::tempdir().unwrap();
    let c = closing(dir.path());
    let (mut progress, current, at) = interrupted_progress(&c);
    let i = mark_interrupted(&mut progress, &c, Some(&current), at);

    assert_eq!(i.trial.as_deref(), Some("test_a::s::c3"));
    assert_eq!(i.trial_seconds, Some(2.5));
    assert_eq!(i.not_run, ["test_a::s::c4"], "c2 is filtered out, c1 done");
    // The start that had not reported back yet is counted from servers/.
    assert_eq!(progress.server_starts, 2);

    let e = progress.entries[2].as_ref().unwrap();
    assert_eq!(e.outcome, Outcome::Failed);
    assert!(e.interrupted);
    assert_eq!(
        e.failures,
        [
            "interrupted (SIGINT/SIGTERM) after 2.5 s; 2 per-request record(s) in trials/test_a__s__c3/records.jsonl"
        ]
    );
    assert_eq!(e.server.as_deref(), Some("servers/02-test_a"));
    assert_eq!(e.bench.as_deref(), Some("fake"));
    assert_eq!(
        e.result.as_deref(),
        Some("trials/test_a__s__c3/result.json")
    );
    assert_eq!(
        progress.entries[0].as_ref().unwrap().outcome,
        Outcome::Passed
    );

    let tdir = c.run.trial_dir("test_a__s__c3");
    let result = read(&tdir.join("result.json"));
    assert_eq!(result["result_source"], "template");
    assert_eq!(result["completed"], 0);
    assert_eq!(result["verdict"]["interrupted"], true);
    assert_eq!(result["trial"], "test_a::s::c3");
    let verdict = read(&tdir.join("verdict.json"));
    assert_eq!(verdict["passed"], false);
    assert_eq!(verdict["interrupted"], true);
    // The partial records are left as they were.
    assert_eq!(
        std::fs::read_to_string(tdir.join("records.jsonl"))
            .unwrap()
            .lines()
            .count(),
        2
    );
}

#[test]
fn records_of_repeats_and_capacity_probes_are_counted_where_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let c = closing(dir.path());
    let (mut progress, current, at) = interrupted_progress(&c);
    let tdir = c.run.trial_dir("test_a__s__c3");
    std::fs::remove_file(tdir.join("records.jsonl")).unwrap();
    for (sub, lines) in [
        ("probe-01", 3),
        ("probe-02/repeat-1", 4),
        ("probe-02/repeat-2", 1),
        ("other", 9),
    ] {
        std::fs::create_dir_all(tdir.join(sub)).unwrap();
        std::fs::write(tdir.join(sub).join("records.jsonl"), "{}\n".repeat(lines)).unwrap();
    }
    mark_interrupted(&mut progress, &c, Some(&current), at);
    let e = progress.entries[2].as_ref().unwrap();
    assert_eq!(
        e.failures,
        [
            "interrupted (SIGINT/SIGTERM) after 2.5 s; 8 per-request record(s) in 3 files under \
             trials/test_a__s__c3/ (probe-01/records.jsonl: 3, probe-02/repeat-1/records.jsonl: 4, \
             probe-02/repeat-2/records.jsonl: 1)"
        ]
    );

    // No records anywhere yet.
    let dir = tempfile::tempdir().unwrap();
    let c = closing(dir.path());
    let (mut progress, current, at) = interrupted_progress(&c);
    std::fs::remove_file(c.run.trial_dir("test_a__s__c3").join("records.jsonl")).unwrap();
    mark_interrupted(&mut progress, &c, Some(&current), at);
    let e = progress.entries[2].as_ref().unwrap();
    assert_eq!(
        e.failures,
        ["interrupted (SIGINT/SIGTERM) after 2.5 s, before any request record"]
    );
}

#[test]
fn between_trials_nothing_is_marked_and_the_rest_is_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let c = closing(dir.path());
    let (mut progress, _, at) = interrupted_progress(&c);
    let i = mark_interrupted(&mut progress, &c, None, at);
    assert_eq!(i.trial, None);
    assert_eq!(i.not_run, ["test_a::s::c3", "test_a::s::c4"]);
    assert!(progress.entries[2].is_none());
}

#[test]
fn closing_writes_the_interruption_once() {
    let dir = tempfile::tempdir().unwrap();
    let c = closing(dir.path());
    let (mut progress, current, at) = interrupted_progress(&c);
    let i = mark_interrupted(&mut progress, &c, Some(&current), at);
    c.close(&mut progress, Some(i));
    let summary = read(&c.run.path.join("summary.json"));
    assert_eq!(summary["interrupted"]["trial"], "test_a::s::c3");
    assert_eq!(summary["interrupted"]["not_run"][0], "test_a::s::c4");
    assert_eq!(
        (summary["passed"].clone(), summary["failed"].clone()),
        (1.into(), 1.into())
    );
    assert_eq!(summary["filtered_out"], 1);
    assert_eq!(summary["trials"][1]["interrupted"], true);
    assert_eq!(summary["trials"][0]["interrupted"], false);
    let run = read(&c.run.path.join("run.json"));
    assert_eq!(run["interrupted"], true);
    assert!(run["finished"].is_string());

    // A second close (the main thread after the handler, or the other way round) changes
    // nothing.
    progress.entries[3] = Some(SummaryEntry::new(&c.trials[3].trial, Outcome::Passed));
    c.close(&mut progress, None);
    assert_eq!(read(&c.run.path.join("summary.json")), summary);
}

#[test]
fn an_interrupted_run_is_added_to_the_history_marked_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = closing(dir.path());
    let db = dir.path().join("history.sqlite");
    c.history = Some(dfx_history::HistorySpec::Sqlite(db.clone()));
    let (mut progress, current, at) = interrupted_progress(&c);
    let i = mark_interrupted(&mut progress, &c, Some(&current), at);
    c.close(&mut progress, Some(i));
    let mut store = dfx_history::open(&dfx_history::HistorySpec::Sqlite(db)).unwrap();
    let runs = store.load(None).unwrap();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].interrupted);
    let c3 = runs[0].trial("test_a::s::c3").unwrap();
    assert!(c3.interrupted, "{c3:?}");
}

#[test]
fn a_history_that_cannot_be_written_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = closing(dir.path());
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "not a folder").unwrap();
    let db = blocker.join("history.sqlite");
    c.history = Some(dfx_history::HistorySpec::Sqlite(db));
    let (mut progress, _, _) = interrupted_progress(&c);
    c.close(&mut progress, None);
    assert!(c.run.path.join("summary.json").is_file());
    assert!(c.run.path.join("report.md").is_file());
}
