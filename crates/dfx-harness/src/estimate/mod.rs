//! A conservative wall-clock estimate of a shard of the plan, for CI step timeouts
//! (`dfx-perf pipeline buildkite`). It is an upper bound meant to stop a hung job, not a
//! prediction: every allowance is generous and the sum is doubled.
//!
//! The model, from the plan's values only:
//! - the build: [`BUILD_S`] once per shard (`cargo test --release` of the suite);
//! - per server group: [`START_S`], the suite's default `--ready-timeout`;
//! - per trial: [`TRIAL_OVERHEAD_S`], plus its requests `n = (num_prompts + warmups) ×
//!   repeats` (the warmups the benches send: `num_warmups`, else `max(2, c)` for a
//!   concurrency step and 2 for a rate step): a concurrency step `c` takes `ceil(n / c)` rounds of [`PER_REQUEST_S`]; a
//!   rate step `r` at least `(n - 1) / r` s of arrivals plus one [`PER_REQUEST_S`] for the
//!   last answer; a trial that cannot run (`unsupported`) costs nothing;
//! - the total times [`SAFETY`], rounded up to whole minutes, clamped to
//!   [`MIN_MINUTES`]..=[`MAX_MINUTES`].

use dfx_core::plan::Trial;
use dfx_core::step::StepKind;

/// Seconds allowed for building the suite on the agent.
pub const BUILD_S: f64 = 1800.0;
/// Seconds allowed per server group to start (the suite's default `--ready-timeout`).
pub const START_S: f64 = 1200.0;
/// Seconds allowed per trial besides its requests (dataset, analysis, reports).
pub const TRIAL_OVERHEAD_S: f64 = 30.0;
/// Seconds allowed for one request (one round of a concurrency step).
pub const PER_REQUEST_S: f64 = 20.0;
/// Factor on the sum.
pub const SAFETY: f64 = 2.0;
/// Shortest timeout given.
pub const MIN_MINUTES: u32 = 30;
/// Longest timeout given (24 h).
pub const MAX_MINUTES: u32 = 24 * 60;

/// Seconds one trial may take (without its server's start).
pub fn trial_seconds(trial: &Trial) -> f64 {
    trial_seconds_lapsed(trial, 1.0)
}

/// [`trial_seconds`] of a run time-lapsed by `k` (`--sim-speed K` with the native bench):
/// the per-trial overhead as it is, the load part ÷ `k` (1 = real time; a `k` that is not
/// finite and positive counts as 1).
pub fn trial_seconds_lapsed(trial: &Trial, k: f64) -> f64 {
    if trial.unsupported.is_some() {
        return 0.0;
    }
    let k = if k.is_finite() && k > 0.0 { k } else { 1.0 };
    let warmups = u64::from(trial.entry.warmups(&trial.step));
    let repeats = u64::from(trial.entry.repeats(None).get());
    let n = trial
        .step
        .num_prompts
        .get()
        .saturating_add(warmups)
        .saturating_mul(repeats) as f64;
    let load = match trial.step.kind {
        StepKind::Concurrency { max_concurrency } => {
            (n / f64::from(max_concurrency.get())).ceil() * PER_REQUEST_S
        }
        StepKind::RequestRate { request_rate } if request_rate > 0.0 => {
            (n - 1.0).max(0.0) / request_rate + PER_REQUEST_S
        }
        StepKind::RequestRate { .. } => n * PER_REQUEST_S,
    };
    TRIAL_OVERHEAD_S + load / k
}

/// The timeout in whole minutes for a shard of `server_groups` groups running `trials`.
pub fn shard_minutes<'a>(server_groups: usize, trials: impl IntoIterator<Item = &'a Trial>) -> u32 {
    let work: f64 = trials.into_iter().map(trial_seconds).sum();
    minutes(BUILD_S + server_groups as f64 * START_S + work)
}

/// `seconds` times [`SAFETY`], rounded up to whole minutes and clamped.
fn minutes(seconds: f64) -> u32 {
    let m = (seconds * SAFETY / 60.0).ceil();
    if m.is_nan() || m < f64::from(MIN_MINUTES) {
        MIN_MINUTES
    } else if m > f64::from(MAX_MINUTES) {
        MAX_MINUTES
    } else {
        m as u32
    }
}

#[cfg(test)]
mod tests;
