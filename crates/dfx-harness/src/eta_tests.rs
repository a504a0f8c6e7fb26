use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::progress::{Current, Progress};

fn eta() -> Eta {
    // Trial 1 is not in the run (filtered out or ignored).
    let names = ["t::a::c1", "t::a::c2", "t::a::c4", "t::a::c8"]
        .map(String::from)
        .to_vec();
    Eta::new(vec![0, 2, 3], names, vec![100.0, 50.0, 200.0, 300.0])
}

#[test]
fn positions_count_only_the_trials_that_run() {
    let e = eta();
    assert_eq!(e.position(0), Some((1, 3)));
    assert_eq!(e.position(2), Some((2, 3)));
    assert_eq!(e.position(1), None);
    assert_eq!(e.line(1, None), None);
}

#[test]
fn the_plan_estimate_is_refined_by_finished_trials() {
    let mut e = eta();
    assert_eq!(e.left(0, 0.0), Left::Plan(600.0));
    assert_eq!(
        e.line(0, None).unwrap(),
        "[1/3] t::a::c1 (at most 10 min 00 s left by the plan)"
    );
    // The first trial took a tenth of its plan estimate: the rest is scaled alike.
    e.finished(0, 10.0);
    assert_eq!(e.left(2, 0.0), Left::Measured(50.0));
    assert_eq!(e.left(2, 5.0), Left::Measured(45.0));
    assert_eq!(e.line(2, None).unwrap(), "[2/3] t::a::c4 (about 50 s left)");
    assert_eq!(
        e.line(3, Some(12.0)).unwrap(),
        "[3/3] t::a::c8 running 12 s; about 18 s left"
    );
    // A trial outside the run changes nothing.
    e.finished(1, 1000.0);
    assert_eq!(e.left(2, 0.0), Left::Measured(50.0));
}

#[test]
fn durations_read_as_words() {
    assert_eq!(human(0.4), "under 1 s");
    assert_eq!(human(1.4), "1 s");
    assert_eq!(human(59.6), "1 min 00 s");
    assert_eq!(human(250.0), "4 min 10 s");
    assert_eq!(human(7500.0), "2 h 05 min");
}

/// A writer the test can read back.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_ticker_prints_the_running_trial_every_interval_and_stops() {
    let progress = Progress::shared(vec![None; 4]);
    {
        let mut p = crate::progress::lock(&progress);
        p.eta = eta();
        p.current = Some(Current {
            idx: 2,
            started: Instant::now(),
            bench: None,
            server: None,
        });
    }
    let sink = Sink::default();
    let shown = progress.clone();
    let ticker = Ticker::start(
        move || crate::progress::running_line(&shown),
        Duration::from_millis(100),
        false,
        sink.clone(),
    )
    .expect("started");
    // Generous: at least two ticks however loaded the machine is.
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        if text.lines().count() >= 2 || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(ticker);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    assert!(
        lines[0].starts_with("dfx-perf: [2/3] t::a::c4 running "),
        "{text}"
    );
    // Stopped: nothing more is written.
    let after = sink.0.lock().unwrap().len();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(sink.0.lock().unwrap().len(), after);
    // Nothing while no trial runs.
    crate::progress::lock(&progress).current = None;
    let quiet = Sink::default();
    let ticker = Ticker::start(
        move || crate::progress::running_line(&progress),
        Duration::from_millis(50),
        false,
        quiet.clone(),
    );
    std::thread::sleep(Duration::from_millis(300));
    drop(ticker);
    assert!(quiet.0.lock().unwrap().is_empty());
}

#[test]
fn the_history_replaces_the_plan_for_the_trials_it_knows() {
    // The history knows trials 2 and 3 (20 s and 30 s), not 0 (plan: 100 s).
    let e = eta().with_known(vec![None, None, Some(20.0), Some(30.0)]);
    // From trial 0: 100 (plan) + 20 + 30, still a plan bound (trial 0 is unknown).
    assert_eq!(e.left(0, 0.0), Left::Plan(150.0));
    // From trial 2: every remaining trial is known, so it is the history's "about".
    assert_eq!(e.left(2, 5.0), Left::History(45.0));
    assert_eq!(
        e.line(2, None).unwrap(),
        "[2/3] t::a::c4 (about 50 s left by the history)"
    );
    // Once a trial finished, its real time against its expectation scales the rest.
    let mut e = e;
    e.finished(2, 40.0);
    assert_eq!(e.left(3, 0.0), Left::Measured(60.0));
}
