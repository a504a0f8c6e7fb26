//! The bounds every user-controlled number must fall in, checked when the plan is built
//! (config values) or the flags are read, so that no value a real run could not use
//! reaches a conversion that panics (`Duration::from_secs_f64`, `Instant + Duration`), an
//! allocation sized by it, or a loop that never ends. `docs/guide/bad-input.md` ("While a run goes on")
//! lists them for users.
//!
//! The numbers are generous: each is far beyond what a nightly run on one GPU server does,
//! and well inside what one 2-core client machine can hold.

use std::num::NonZeroU64;
use std::time::Duration;

/// Most requests in flight at once (`max_concurrency`). Each takes a connection (a file
/// descriptor) and a task; vLLM-omni servers batch at most a few hundred streams.
pub(crate) const MAX_CONCURRENCY: u64 = 4096;

/// Most measured requests of one sweep step (`num_prompts`). The native bench keeps a
/// fixed-size summary per request for its statistics (`docs/guide/bad-input.md` ("While a run goes on")
/// gives the memory of a million-request step).
pub(crate) const MAX_PROMPTS: u64 = 1_000_000;

/// [`MAX_PROMPTS`] as the type a step's count has.
pub(crate) const MAX_PROMPTS_NZ: NonZeroU64 = NonZeroU64::new(MAX_PROMPTS).unwrap();

/// Most warmup requests of one step (`num_warmups`, or `max(2, c)`).
pub(crate) const MAX_WARMUPS: u64 = MAX_CONCURRENCY;

/// Most repeats of one sweep step (`repeats`, `--repeats`): each is a whole step on the
/// same server.
pub const MAX_REPEATS: u64 = 100;

/// Lowest open-loop arrival rate, requests per second (one request per 1000 s).
pub(crate) const MIN_RATE: f64 = 0.001;
/// Highest open-loop arrival rate, requests per second.
pub(crate) const MAX_RATE: f64 = 100_000.0;

/// Longest span of an open-loop schedule, `(num_prompts - 1) / request_rate` seconds: a
/// step that would only finish sending after a day is a typo, not a benchmark.
pub const MAX_SCHEDULE_SECONDS: f64 = 86_400.0;

/// Most cohorts of one `cohorts` load shape.
pub(crate) const MAX_COHORTS: usize = 64;

/// `burstiness` (the gamma shape of the arrival gaps) range.
pub(crate) const MIN_BURSTINESS: f64 = 0.01;
/// See [`MIN_BURSTINESS`].
pub(crate) const MAX_BURSTINESS: f64 = 100.0;

/// Longest timeout of any kind (readiness, one request, one read), seconds: a week.
pub const MAX_TIMEOUT_SECONDS: f64 = 7.0 * 86_400.0;

/// Audio sample rate range, Hz.
pub const MIN_SAMPLE_RATE: u64 = 1_000;
/// See [`MIN_SAMPLE_RATE`].
pub const MAX_SAMPLE_RATE: u64 = 384_000;

/// Most values in `metric-percentiles`.
pub(crate) const MAX_PERCENTILES: usize = 32;

/// Largest config file (or `$ref` file), baseline store or deploy file read, bytes.
pub const MAX_CONFIG_BYTES: u64 = 64 * 1024 * 1024;

/// Largest JSON document of a run folder read back (`run.json`, `summary.json`, a trial's
/// `result.json` or `verdict.json`, a bench's result file), bytes.
pub const MAX_RUN_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Longest name a trial name is built from (`test_name`, an entry's `name`, `task`,
/// `eval_phase`, `dataset_name`), characters: trial names stay printable by libtest
/// (whose printer panics past 65,535) and readable in every report.
pub const MAX_NAME_CHARS: usize = 256;

/// Simulator speed factor range (`--sim-speed`).
pub const MIN_SIM_SPEED: f64 = 0.01;
/// See [`MIN_SIM_SPEED`].
pub const MAX_SIM_SPEED: f64 = 1_000.0;

/// `secs` as a [`Duration`] when it is a positive, finite number of seconds no larger
/// than [`MAX_TIMEOUT_SECONDS`]; `None` otherwise (never panics).
pub fn timeout(secs: f64) -> Option<Duration> {
    if secs.is_finite() && secs > 0.0 && secs <= MAX_TIMEOUT_SECONDS {
        Duration::try_from_secs_f64(secs).ok()
    } else {
        None
    }
}

/// A `metric-percentiles` string the plan refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PercentileError {
    /// A value that is not a number from 0 to 100 (as written, trimmed).
    #[error("{0:?} is not a number from 0 to 100")]
    NotAPercentile(String),
    /// More than `MAX_PERCENTILES` values.
    #[error("more than {MAX_PERCENTILES} percentiles")]
    TooMany,
}

/// Parses a `metric-percentiles` string (`"50,90,99"`): every value a number from 0 to
/// 100 (NaN refused), at most [`MAX_PERCENTILES`] of them; empty means `[99]`.
pub(crate) fn parse_percentiles(text: &str) -> Result<Vec<f64>, PercentileError> {
    let mut out = Vec::new();
    for p in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match p.parse::<f64>() {
            Ok(v) if (0.0..=100.0).contains(&v) => out.push(v),
            _ => return Err(PercentileError::NotAPercentile(p.into())),
        }
        if out.len() > MAX_PERCENTILES {
            return Err(PercentileError::TooMany);
        }
    }
    if out.is_empty() {
        out.push(99.0);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_never_panic() {
        for bad in [
            0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            1e30,
            1e300,
            7.0 * 86_400.0 + 1.0,
        ] {
            assert_eq!(timeout(bad), None, "{bad}");
        }
        assert_eq!(timeout(0.5), Some(Duration::from_millis(500)));
        assert_eq!(
            timeout(MAX_TIMEOUT_SECONDS),
            Some(Duration::from_secs(604_800))
        );
    }

    #[test]
    fn percentiles() {
        assert_eq!(parse_percentiles("50, 90,99").unwrap(), [50.0, 90.0, 99.0]);
        assert_eq!(parse_percentiles("").unwrap(), [99.0]);
        for bad in ["99,abc", "nan", "101", "-1", "inf"] {
            assert!(parse_percentiles(bad).is_err(), "{bad}");
        }
        let many = vec!["50"; MAX_PERCENTILES + 1].join(",");
        assert!(parse_percentiles(&many).is_err());
    }
}
