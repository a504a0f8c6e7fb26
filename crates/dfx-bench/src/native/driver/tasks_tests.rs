//! The tokio executor keeps the plan's promises: a closed loop holds exactly its
//! concurrency, one worker runs in order, an open loop's cap waits or refuses, a stop ends
//! the sends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dfx_core::plan::Saturation;

use super::*;

#[derive(Default)]
struct Seen {
    now: AtomicUsize,
    peak: AtomicUsize,
    done: AtomicUsize,
    order: Mutex<Vec<usize>>,
    refused: Mutex<Vec<(usize, usize)>>,
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `n` jobs under `load`, each holding its slot for `hold`.
fn phase(n: usize, load: Load, hold: Duration, stop_after: Option<usize>) -> (Arc<Seen>, PhaseEnd) {
    let rt = runtime();
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    let run = move |job: usize, d: Dispatch, _base: Instant| {
        let s = s.clone();
        async move {
            assert_eq!(job, d.index, "the job of each index");
            if let Some(cap) = d.saturated {
                s.refused.lock().unwrap().push((d.index, cap));
                return;
            }
            let now = s.now.fetch_add(1, Ordering::SeqCst) + 1;
            s.peak.fetch_max(now, Ordering::SeqCst);
            s.order.lock().unwrap().push(d.index);
            tokio::time::sleep(hold).await;
            s.now.fetch_sub(1, Ordering::SeqCst);
            s.done.fetch_add(1, Ordering::SeqCst);
        }
    };
    let s = seen.clone();
    let stopped = move || stop_after.is_some_and(|k| s.done.load(Ordering::SeqCst) >= k);
    let end = run_phase(&rt, false, (0..n).collect(), load, Direct, run, stopped);
    (seen, end)
}

#[test]
fn a_closed_loop_holds_exactly_its_concurrency_and_runs_every_job() {
    let (seen, end) = phase(
        20,
        Load::Closed {
            concurrency: std::num::NonZeroUsize::new(3).unwrap(),
        },
        Duration::from_millis(10),
        None,
    );
    assert_eq!(seen.done.load(Ordering::SeqCst), 20);
    assert_eq!(seen.peak.load(Ordering::SeqCst), 3);
    assert_eq!(end.peak, 3);
    let mut order = seen.order.lock().unwrap().clone();
    order.sort_unstable();
    assert_eq!(order, (0..20).collect::<Vec<_>>());
}

#[test]
fn one_worker_runs_the_jobs_in_order() {
    let (seen, end) = phase(
        8,
        Load::Closed {
            concurrency: std::num::NonZeroUsize::new(1).unwrap(),
        },
        Duration::from_millis(2),
        None,
    );
    assert_eq!(*seen.order.lock().unwrap(), (0..8).collect::<Vec<_>>());
    assert_eq!(end.peak, 1);
}

fn burst(cap: usize, saturation: Saturation) -> Load {
    Load::Open {
        offsets: vec![0.0; 10],
        cap: std::num::NonZeroUsize::new(cap),
        saturation,
    }
}

#[test]
fn an_open_loop_cap_that_waits_sends_everything_at_most_cap_at_a_time() {
    let (seen, end) = phase(
        10,
        burst(2, Saturation::Wait),
        Duration::from_millis(20),
        None,
    );
    assert_eq!(seen.done.load(Ordering::SeqCst), 10);
    assert_eq!(seen.peak.load(Ordering::SeqCst), 2);
    assert_eq!(end.peak, 2);
    assert!(seen.refused.lock().unwrap().is_empty());
}

#[test]
fn the_saturation_gate_refuses_what_finds_the_cap_full() {
    // Every arrival is due at once and each holds its slot far longer than the burst takes
    // to dispatch: the first two are sent, the other eight refused with the cap.
    let (seen, _) = phase(
        10,
        burst(2, Saturation::Fail),
        Duration::from_millis(500),
        None,
    );
    assert_eq!(seen.done.load(Ordering::SeqCst), 2);
    let refused = seen.refused.lock().unwrap().clone();
    assert_eq!(refused.len(), 8, "{refused:?}");
    assert!(refused.iter().all(|(_, cap)| *cap == 2));
}

#[test]
fn once_stopped_nothing_more_is_sent() {
    let (seen, _) = phase(
        30,
        Load::Closed {
            concurrency: std::num::NonZeroUsize::new(1).unwrap(),
        },
        Duration::from_millis(2),
        Some(3),
    );
    let done = seen.done.load(Ordering::SeqCst);
    assert!(
        (3..=4).contains(&done),
        "sent {done} of 30 after a stop at 3"
    );
}
