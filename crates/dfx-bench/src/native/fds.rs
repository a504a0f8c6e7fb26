//! The file-descriptor budget of a step, checked before it sends anything: every request
//! in flight holds a connection, so a step needs about `in flight + already open + margin`
//! descriptors. The soft `RLIMIT_NOFILE` is raised to the hard limit when that suffices;
//! otherwise the step fails before its first request, saying what it needs and how to get
//! it (instead of requests failing with EMFILE halfway, and the run's own files with them).

use nix::sys::resource::{Resource, getrlimit, setrlimit};

pub(crate) use super::error::FdError;

/// Descriptors kept free beyond the connections: records, logs, the runtime's own.
pub(crate) const MARGIN: u64 = 64;

/// Seconds of open-loop arrivals assumed in flight at once when a rate step has no
/// concurrency cap (an estimate: requests that take longer raise the real peak).
pub(crate) const OPEN_LOOP_WINDOW_S: f64 = 60.0;

/// Connections an open-loop step at `rate` with `n` requests is expected to hold at once.
pub(crate) fn open_loop_in_flight(rate: f64, n: usize) -> usize {
    let window = (rate * OPEN_LOOP_WINDOW_S).ceil();
    if window.is_nan() || window < 1.0 {
        n.min(1)
    } else if window >= n as f64 {
        n
    } else {
        window as usize
    }
}

/// Descriptors this process has open now (0 when `/proc/self/fd` cannot be read).
pub(crate) fn open_now() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

/// Makes room for `in_flight` connections: `Ok(None)` when the soft limit suffices,
/// `Ok(Some(note))` after raising it, `Err(why and how to raise it)` when even the hard
/// limit is too low.
pub(crate) fn ensure(in_flight: usize) -> Result<Option<String>, FdError> {
    let open = open_now();
    let need = (in_flight as u64)
        .saturating_add(open)
        .saturating_add(MARGIN);
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(FdError::Read)?;
    if need <= soft {
        return Ok(None);
    }
    if need <= hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(|source| FdError::Raise {
            soft,
            hard,
            source,
        })?;
        return Ok(Some(format!(
            "file descriptors: raised the soft limit from {soft} to the hard limit {hard} \
             (this step needs about {need})"
        )));
    }
    Err(FdError::TooLow {
        need,
        in_flight,
        open,
        margin: MARGIN,
        hard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_loop_estimate_is_bounded_by_the_request_count() {
        assert_eq!(open_loop_in_flight(2.0, 100), 100);
        assert_eq!(open_loop_in_flight(2.0, 1000), 120);
        assert_eq!(open_loop_in_flight(0.001, 10), 1);
        assert_eq!(open_loop_in_flight(f64::NAN, 10), 1);
        assert_eq!(open_loop_in_flight(f64::INFINITY, 10), 10);
    }

    #[test]
    fn a_budget_beyond_the_hard_limit_says_how_to_raise_it() {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        if hard >= u64::MAX / 2 {
            return; // unlimited: nothing can exceed it
        }
        let e = ensure(usize::try_from(hard).unwrap_or(usize::MAX))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("RLIMIT_NOFILE") && e.contains("ulimit -Hn"),
            "{e}"
        );
        assert!(ensure(1).is_ok());
    }
}
