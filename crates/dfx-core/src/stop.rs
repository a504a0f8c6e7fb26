//! The run's stop: requested once, when the suite is interrupted (SIGINT, SIGTERM,
//! SIGHUP), before any server is torn down. From then on every native client sends no
//! further request, and a request the teardown cuts is recorded as `interrupted`, not as
//! a transport failure of the server.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Requests the stop (the suite's signal handler; never undone in a process).
pub fn request() {
    STOP.store(true, Ordering::SeqCst);
}

/// Whether the stop was requested.
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The failure message of a request cut by the stop, keeping what the client saw.
pub fn cut_message(seen: &str) -> String {
    format!("cut by the interruption (SIGINT/SIGTERM): {seen}")
}
