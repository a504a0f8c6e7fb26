//! How the checks share the machine. Most of them wait: on a simulator running its
//! real-time (or time-lapsed) schedule, on a stall detector, on a signal. Measured one at a
//! time on the 2-core VM (2026-12-06), the 88 checks took 439 s of wall time (104 s of it
//! the capacity search, about 30 s since) and 89 s of CPU (user + system, children
//! included): about a fifth of a core. So they run on
//! [`threads`] threads, the longest first ([`LONG_FIRST`]) so the short ones fill the
//! other threads around them, and the few checks that judge measured figures against
//! tight bounds ([`QUIET`]) run alone, first: they hold the write side of [`MACHINE`],
//! every other check the read side.

use std::sync::RwLock;

use libtest_mimic::Failed;

/// A check: the function a trial runs.
pub type Check = fn() -> Result<(), Failed>;

/// Held for reading by every check and for writing by a [`QUIET`] one, which then runs
/// with no other check beside it.
static MACHINE: RwLock<()> = RwLock::new(());

/// Checks that judge measured figures against bounds a busy neighbour's CPU would move
/// them past: the real-time simulator's c = 1 steps and the 5× simulator's native-duplex
/// buckets on the shipped 10 % baselines, the capacity search's p99 of 40 first packets
/// (at 5×, a 35 ms delay is 175 ms on the real-time scale), and the history detector's
/// runs judged against their own noise. Run one at a time beside the other checks and two
/// busy loops and a build (load average 8 on 2 cores), the last three failed one run in
/// two or three; alone beside two busy loops they pass.
pub const QUIET: [&str; 6] = [
    "history_check_finds_a_slowdown_at_the_run_it_started",
    "capacity_search_against_the_simulator_finds_the_models_rate",
    "history_check_suspects_a_far_shift_on_its_first_night_and_confirms_it_on_the_next",
    "shipped_sim_baselines_hold_then_catch_a_1_5x_slowdown",
    "shipped_sim_baselines_hold_for_omni_chat_then_catch_a_1_5x_slowdown",
    "native_duplex_entries_pass_against_the_simulator",
];

/// The other checks that took 8 s or more alone (longest first): started first, so that
/// the run's length is the longest check's, not the longest check's plus everything
/// queued before it.
pub const LONG_FIRST: [&str; 8] = [
    "interrupting_at_random_moments_always_records_the_interruption",
    "stall_a_stalled_simulator_ends_the_step_early",
    "native_duplex_slowdown_breaches_median_ttfp_under_assert_baseline",
    "stall_attach_to_a_trickling_health_fails_in_time",
    "crash_at_inflight_is_named_every_time",
    "failure_class_stall_after_chunks_is_stalled",
    "a_full_results_disk_fails_the_run_and_leaves_no_temp_file",
    "release_archive_unpacks_and_runs_the_suite",
];

/// Threads for the checks: the user's `--test-threads`, else twice the cores, from 2 to 8
/// (their CPU is about a fifth of a core each).
pub fn threads(asked: Option<usize>) -> usize {
    asked.unwrap_or_else(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        (2 * cores).clamp(2, 8)
    })
}

/// The checks in the order they start: [`QUIET`] (alone, while nothing else has started:
/// a quiet check that queued behind a running one would wait out that check and hold back
/// every other thread), then [`LONG_FIRST`] in its order, then the rest in theirs. A name in [`LONG_FIRST`] or [`QUIET`] that is not a check is an error, so a
/// renamed check cannot silently lose its place.
pub fn order<T>(mut checks: Vec<(&'static str, T)>) -> Result<Vec<(&'static str, T)>, String> {
    let known: Vec<&str> = checks.iter().map(|(name, _)| *name).collect();
    if let Some(unknown) = LONG_FIRST
        .iter()
        .chain(QUIET.iter())
        .find(|name| !known.contains(name))
    {
        return Err(format!(
            "suite_cli: `{unknown}` in schedule.rs is not a check (renamed?)"
        ));
    }
    let rank = |name: &str| {
        if QUIET.contains(&name) {
            return 0;
        }
        1 + LONG_FIRST
            .iter()
            .position(|l| *l == name)
            .unwrap_or(LONG_FIRST.len())
    };
    // A stable sort keeps the declared order among the rest.
    checks.sort_by_key(|(name, _)| rank(name));
    Ok(checks)
}

/// Runs `check` holding its side of [`MACHINE`]. A check that panicked poisons the lock;
/// the next one still runs (the lock guards no data).
pub fn run(name: &str, check: Check) -> Result<(), Failed> {
    if QUIET.contains(&name) {
        let _alone = MACHINE.write().unwrap_or_else(|e| e.into_inner());
        check()
    } else {
        let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
        check()
    }
}
