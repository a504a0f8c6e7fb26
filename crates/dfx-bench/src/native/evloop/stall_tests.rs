//! The stall rules on the event loop (`crate::native::stall`) against loopback servers
//! scripted here: a body that only trickles fails as stalled within the window, and a
//! server that stops answering ends the step early.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use super::tests::{Kept, LIMITS, engine_with, job, read_request, serve};
use dfx_core::plan::ConnectionMode::Fresh;

use crate::native::client::{FailureClass, Limits};
use crate::native::driver::Load;
use crate::native::stall::StallRule;

/// A 600 ms window, a floor of 100 bytes, a generous read timeout the rule must beat.
fn quick() -> Limits {
    Limits {
        read_timeout: Duration::from_secs(30),
        request_timeout: Duration::from_secs(60),
        stall: StallRule {
            window: Duration::from_millis(600),
            floor: 100,
            in_a_row: 3,
        },
        ..LIMITS
    }
}

#[test]
fn a_trickling_body_fails_as_stalled_within_the_window() {
    // A valid head, then one byte every 50 ms: never silent for the read timeout.
    let (url, _) = serve(|_, mut s| {
        if read_request(&mut s).is_none() {
            return;
        }
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\nab");
        while s.write_all(b"c").is_ok() {
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let mut e = engine_with(&url, Fresh, quick());
    let started = Instant::now();
    let mut kept = Kept::default();
    let ran = e.run(
        vec![job("a")],
        Load::Closed {
            concurrency: std::num::NonZeroUsize::new(1).unwrap(),
        },
        false,
        &mut kept,
    );
    let f = kept.0[0].1.failure.clone().expect("stalled");
    assert_eq!(f.class, FailureClass::Stall, "{}", f.message);
    assert!(
        f.message.contains("below the floor of 100 bytes"),
        "{}",
        f.message
    );
    assert!(kept.0[0].1.bytes > 2, "the trickle arrived");
    // Well below the 30 s read timeout, which the trickle never lets fire.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let why = ran
        .stalled
        .expect("one stream, no progress for a window: the step ends");
    assert!(
        why.to_string()
            .starts_with("server stalled: no stream made progress")
    );
}

#[test]
fn a_server_that_stops_sending_ends_the_step_early() {
    // Two body bytes, then nothing until the client closes the connection.
    let (url, accepted) = serve(|_, mut s| {
        if read_request(&mut s).is_none() {
            return;
        }
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\nab");
        let _ = s.read(&mut [0u8; 1]);
    });
    let mut e = engine_with(&url, Fresh, quick());
    let started = Instant::now();
    let mut kept = Kept::default();
    let jobs = (0..12).map(|i| job(&i.to_string())).collect();
    let ran = e.run(
        jobs,
        Load::Closed {
            concurrency: std::num::NonZeroUsize::new(2).unwrap(),
        },
        false,
        &mut kept,
    );
    let why = ran.stalled.expect("the server stalled");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(why.not_sent > 0, "{why}");
    assert_eq!(kept.0.len() + why.not_sent, 12, "{why}");
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        kept.0.len()
    );
    for (_, x) in &kept.0 {
        let f = x.failure.as_ref().expect("every request sent failed");
        assert_eq!(f.class, FailureClass::Stall, "{}", f.message);
    }
    assert_eq!(why.stalled, kept.0.len(), "{why}");
}
