//! Ctrl-C / SIGTERM while the external bench runs: its process group is registered like a
//! server's, so the suite's interrupt handler (`dfx_server::teardown_all`) stops it, and
//! its state file is removed. (Its own test binary: `teardown_all` stops every group the
//! process registered.)

mod external_support;

use std::time::{Duration, Instant};

use dfx_bench::external::VllmBench;
use dfx_core::bench::Bench;
use dfx_server::Supervision;
use external_support::*;

#[test]
fn the_interrupt_teardown_stops_a_running_bench_group() {
    let dir = tempfile::tempdir().unwrap();
    let pids_file = dir.path().join("pids");
    let live = dir.path().join("live");
    let mut settings = fake_settings("sleep", None, &dir.path().join("argv.jsonl"));
    settings
        .extra_env
        .insert("DFX_FAKE_VLLM_PIDS".into(), pids_file.display().to_string());
    // Far beyond how long the test waits: only the teardown can end the run in time.
    settings.timeout = Some(Duration::from_secs(60));
    settings.supervision = Supervision {
        guard_bin: None,
        live_dir: Some(live.clone()),
    };
    let bench = VllmBench::new(settings);
    let out_dir = dir.path().join("t");
    let started = Instant::now();
    let run = std::thread::spawn(move || {
        let trial = tts_trial();
        bench.run(&context(&trial, &out_dir, "H100"))
    });
    let pids: Vec<i32> = loop {
        let pids: Vec<i32> = std::fs::read_to_string(&pids_file)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.len() == 2 && !dfx_server::live_groups().is_empty() {
            break pids;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the fake never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let pgid = dfx_server::live_groups()[0];
    assert_eq!(pgid, pids[0], "the bench's group is the registered one");
    assert!(live.join(format!("{pgid}.json")).is_file(), "a state file");

    dfx_server::teardown_all().unwrap();
    let outcome = run.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(55),
        "ended by the teardown, not by the time limit"
    );
    let exit = outcome.exit.unwrap().to_string();
    assert!(exit.contains("killed by signal"), "{exit}");
    for p in pids {
        assert!(
            dfx_server::procfs::stat(p).is_none_or(|s| !s.is_live()),
            "process {p} of the bench's group is still running"
        );
    }
    assert!(dfx_server::live_groups().is_empty());
    assert!(!live.exists(), "the state file was removed");
}
