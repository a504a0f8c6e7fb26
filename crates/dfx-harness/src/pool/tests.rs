use super::*;
use dfx_testkit::fake::server::{FakeEvent, FakeLauncher, FakeState};
use dfx_testkit::trials::spec;

fn pool() -> (ServerPool, Arc<FakeState>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let launcher = FakeLauncher::new();
    let state = launcher.state();
    let pool = ServerPool::new(
        Box::new(launcher),
        dir.path().join("servers"),
        Duration::from_secs(5),
    );
    (pool, state, dir)
}

fn start(m: &str) -> FakeEvent {
    FakeEvent::Start(m.into())
}

fn stop(m: &str) -> FakeEvent {
    FakeEvent::Stop(m.into())
}

#[test]
fn consecutive_identical_specs_share_a_server_and_changes_stop_first() {
    let (mut pool, state, _dir) = pool();
    let (a, b) = (Arc::new(spec("A")), Arc::new(spec("B")));
    // An equal spec in a different allocation is still the same configuration.
    let a_again = Arc::new(spec("A"));
    let mut started = Vec::new();
    for s in [&a, &a_again, &b, &a] {
        let info = pool.acquire(s, &s.model).unwrap();
        started.push(info.started);
        pool.check_after_trial(Duration::ZERO).unwrap();
    }
    pool.shutdown();
    assert_eq!(started, [true, false, true, true]);
    assert_eq!(
        state.events(),
        [
            start("A"),
            stop("A"),
            start("B"),
            stop("B"),
            start("A"),
            stop("A")
        ]
    );
    assert_eq!(pool.starts(), 3);
}

#[test]
fn start_folders_are_numbered_and_sanitised() {
    let (mut pool, _state, dir) = pool();
    let info = pool.acquire(&Arc::new(spec("A")), "../../evil").unwrap();
    assert_eq!(info.rel_dir, "servers/01-_._.._evil");
    let folder = dir.path().join(&info.rel_dir);
    assert!(folder.join("server.log").is_file());
    assert!(folder.join("command.txt").is_file());
    assert!(folder.starts_with(dir.path().join("servers")));
    let info = pool.acquire(&Arc::new(spec("B")), "test_b").unwrap();
    assert_eq!(info.rel_dir, "servers/02-test_b");
}

#[test]
fn nothing_starts_until_asked() {
    let (mut pool, state, _dir) = pool();
    pool.shutdown();
    assert!(state.events().is_empty());
    assert_eq!(pool.starts(), 0);
}

#[test]
fn server_dying_during_a_trial_fails_it_and_the_next_trial_restarts() {
    let (mut pool, state, _dir) = pool();
    let a = Arc::new(spec("A"));
    pool.acquire(&a, "t").unwrap();
    state.kill_latest();
    let err = pool
        .check_after_trial(Duration::ZERO)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("server exited with exit status 137 during the benchmark"),
        "{err}"
    );
    assert!(err.contains("ready"), "log tail missing: {err}");
    let info = pool.acquire(&a, "t").unwrap();
    assert!(info.started);
    pool.shutdown();
    assert_eq!(
        state.events(),
        [start("A"), stop("A"), start("A"), stop("A")]
    );
}

#[test]
fn server_found_dead_between_trials_is_restarted() {
    let (mut pool, state, _dir) = pool();
    let a = Arc::new(spec("A"));
    pool.acquire(&a, "t").unwrap();
    pool.check_after_trial(Duration::ZERO).unwrap();
    state.kill_latest();
    let info = pool.acquire(&a, "t").unwrap();
    assert!(info.started);
    assert_eq!(pool.notes.len(), 1, "{:?}", pool.notes);
    drop(pool);
    assert_eq!(
        state.events(),
        [start("A"), stop("A"), start("A"), stop("A")]
    );
}

#[test]
fn failed_start_is_not_retried_for_the_same_spec_right_after() {
    let (mut pool, state, _dir) = pool();
    state.fail_starts_of("BAD");
    let bad = Arc::new(spec("BAD"));
    let first = pool.acquire(&bad, "t").unwrap_err().to_string();
    assert!(first.contains("before becoming ready"), "{first}");
    let second = pool.acquire(&bad, "t").unwrap_err().to_string();
    assert!(second.starts_with("not retried"), "{second}");
    assert!(second.contains("servers/01-t"), "{second}");
    assert_eq!(pool.starts(), 1);
    // A different spec still starts.
    pool.acquire(&Arc::new(spec("A")), "u").unwrap();
    assert_eq!(state.events(), [start("A")]);
}

#[test]
fn drop_stops_the_live_server() {
    let (mut pool, state, _dir) = pool();
    pool.acquire(&Arc::new(spec("A")), "t").unwrap();
    drop(pool);
    assert_eq!(state.events(), [start("A"), stop("A")]);
}
