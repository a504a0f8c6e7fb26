use std::sync::Arc;

use super::*;
use dfx_testkit::trials::{concurrency_trial, rate_trial};

#[test]
fn concurrency_steps_take_rounds_and_rate_steps_their_arrivals() {
    // 10 prompts and max(2, 4) default warmups at concurrency 4: 4 rounds.
    let c = concurrency_trial("t", "a", 4, 10);
    assert_eq!(trial_seconds(&c), TRIAL_OVERHEAD_S + 4.0 * PER_REQUEST_S);
    // 9 prompts and 2 default warmups at 2 req/s: 5 s of arrivals, then the last answer.
    let r = rate_trial("t", "a", 2.0, 9);
    assert_eq!(trial_seconds(&r), TRIAL_OVERHEAD_S + 5.0 + PER_REQUEST_S);
    // An explicit 0 is kept: 10 prompts at concurrency 4, 3 rounds.
    let mut z = concurrency_trial("t", "a", 4, 10);
    let mut entry = (*z.entry).clone();
    entry.num_warmups = Some(0);
    z.entry = Arc::new(entry);
    assert_eq!(trial_seconds(&z), TRIAL_OVERHEAD_S + 3.0 * PER_REQUEST_S);
    // Warmups and repeats count as requests.
    let mut w = concurrency_trial("t", "a", 1, 2);
    let mut entry = (*w.entry).clone();
    entry.num_warmups = Some(1);
    entry.repeats = std::num::NonZeroU32::new(2);
    w.entry = Arc::new(entry);
    assert_eq!(trial_seconds(&w), TRIAL_OVERHEAD_S + 6.0 * PER_REQUEST_S);
    // A trial that cannot run costs nothing.
    let mut u = concurrency_trial("t", "a", 1, 1000);
    u.unsupported = Some("diffusion".into());
    assert_eq!(trial_seconds(&u), 0.0);
}

#[test]
fn a_time_lapsed_trial_keeps_its_overhead_and_divides_its_load() {
    let r = rate_trial("t", "a", 2.0, 9);
    let load = 5.0 + PER_REQUEST_S;
    assert_eq!(trial_seconds_lapsed(&r, 8.0), TRIAL_OVERHEAD_S + load / 8.0);
    assert_eq!(trial_seconds_lapsed(&r, 1.0), trial_seconds(&r));
    for bad in [0.0, -2.0, f64::NAN, f64::INFINITY] {
        assert_eq!(trial_seconds_lapsed(&r, bad), trial_seconds(&r));
    }
}

#[test]
fn shard_minutes_doubles_rounds_up_and_clamps() {
    // Empty shard: the build alone, doubled = 60 min.
    assert_eq!(shard_minutes(0, []), 60);
    let c = concurrency_trial("t", "a", 1, 10);
    let secs = BUILD_S + START_S + trial_seconds(&c);
    let want = (secs * SAFETY / 60.0).ceil() as u32;
    assert_eq!(shard_minutes(1, [&c]), want);
    assert!(want > 60);
    assert_eq!(minutes(1.0), MIN_MINUTES);
    assert_eq!(minutes(f64::NAN), MIN_MINUTES);
    assert_eq!(minutes(1e12), MAX_MINUTES);
    let huge = concurrency_trial("t", "a", 1, u64::MAX);
    assert_eq!(shard_minutes(1, [&huge]), MAX_MINUTES);
}
