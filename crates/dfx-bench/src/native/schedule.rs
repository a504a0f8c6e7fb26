//! Load shape of a step: when each open-loop request is due (the warmup count is
//! `BenchEntry::warmups` in dfx-core). Pure functions of the plan and the seed.

use dfx_core::plan::{Cohort, LoadShape};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma};

use super::upstream_rng::NpLegacy;

/// A load shape whose send times cannot be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// `request_rate` is zero, negative or not finite.
    #[error("request_rate must be a positive number, got {0}")]
    Rate(f64),
    /// `burstiness` is zero, negative or not finite.
    #[error("burstiness must be a positive number, got {0}")]
    Burstiness(f64),
    /// `soak_duration_s` is zero, negative or not finite.
    #[error("soak_duration_s must be a positive number, got {0}")]
    SoakDuration(f64),
    /// A cohort's request count does not fit this machine's `usize`.
    #[error(transparent)]
    Count(#[from] std::num::TryFromIntError),
    /// The Gamma distribution refuses the parameters.
    #[error("bad arrival distribution (rate {rate}, burstiness {burstiness}): {source}")]
    Distribution {
        /// Requests per second.
        rate: f64,
        /// The Gamma shape.
        burstiness: f64,
        /// rand_distr's error.
        #[source]
        source: rand_distr::GammaError,
    },
}

/// The planned send offsets (seconds from the step's start, sorted) of `n` requests of a
/// request-rate step at `rate` under `shape` (`docs/bench.md` ("Load shapes")):
/// steady = [`upstream_offsets`] (vllm bench's own draws); ramp = `ramp_offsets`;
/// burst = all 0; soak = `soak_offsets`; cohorts = `cohort_offsets` (these draw their gaps
/// from [`arrival_offsets`]).
pub fn planned_offsets(
    shape: &LoadShape,
    n: usize,
    rate: f64,
    burstiness: f64,
    seed: u64,
) -> Result<Vec<f64>, ScheduleError> {
    match shape {
        LoadShape::Steady => upstream_offsets(n, rate, burstiness, seed),
        LoadShape::Ramp { start_rate } => ramp_offsets(n, *start_rate, rate, burstiness, seed),
        LoadShape::Burst => Ok(vec![0.0; n]),
        LoadShape::Soak { duration_s } => soak_offsets(n, *duration_s, burstiness, seed),
        LoadShape::Cohorts { cohorts } => cohort_offsets(cohorts, rate, burstiness, seed),
    }
}

/// `n` offsets whose i-th arrival comes at rate `start + (end - start) · i / (n - 1)`
/// (`vllm bench serve --ramp-up-strategy linear`): the gap before arrival i is a
/// Gamma(burstiness) draw with mean `1 / rate_i`.
pub(crate) fn ramp_offsets(
    n: usize,
    start: f64,
    end: f64,
    burstiness: f64,
    seed: u64,
) -> Result<Vec<f64>, ScheduleError> {
    let unit = arrival_offsets(n, 1.0, burstiness, seed)?;
    let steps = n.saturating_sub(1).max(1) as f64;
    let mut out = Vec::with_capacity(n);
    let mut t = 0.0;
    for (i, w) in unit.windows(2).enumerate() {
        out.push(t);
        let rate = start + (end - start) * (i + 1) as f64 / steps;
        t += (w[1] - w[0]) / rate;
    }
    if n > 0 {
        out.push(t);
    }
    Ok(out)
}

/// `n` offsets spread over `duration` seconds: Gamma gaps at `n / duration` per second,
/// scaled so the last arrival is due one mean gap before the end
/// (`duration · (n - 1) / n`): the sends fill the duration whatever the draws.
pub(crate) fn soak_offsets(
    n: usize,
    duration: f64,
    burstiness: f64,
    seed: u64,
) -> Result<Vec<f64>, ScheduleError> {
    if !(duration.is_finite() && duration > 0.0) {
        return Err(ScheduleError::SoakDuration(duration));
    }
    let mut out = arrival_offsets(n, n as f64 / duration, burstiness, seed)?;
    let last = out.last().copied().unwrap_or(0.0);
    if last > 0.0 {
        let k = duration * (n - 1) as f64 / n as f64 / last;
        out.iter_mut().for_each(|t| *t *= k);
    }
    Ok(out)
}

/// Each cohort's Gamma arrivals (at its own rate, else `rate`; each from its own seeded
/// stream) shifted by its offset, all merged in time order.
pub(crate) fn cohort_offsets(
    cohorts: &[Cohort],
    rate: f64,
    burstiness: f64,
    seed: u64,
) -> Result<Vec<f64>, ScheduleError> {
    let mut out = Vec::new();
    for (k, c) in cohorts.iter().enumerate() {
        let n = usize::try_from(c.num_prompts)?;
        let r = c.request_rate.unwrap_or(rate);
        let own_seed = seed ^ (k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let offs = arrival_offsets(n, r, burstiness, own_seed)?;
        out.extend(offs.into_iter().map(|t| t + c.offset_s));
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

/// A rate and a burstiness both positive and finite.
fn check_rate(rate: f64, burstiness: f64) -> Result<(), ScheduleError> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(ScheduleError::Rate(rate));
    }
    if !(burstiness.is_finite() && burstiness > 0.0) {
        return Err(ScheduleError::Burstiness(burstiness));
    }
    Ok(())
}

/// `vllm bench serve`'s schedule of `n` requests at `rate` (`get_request`), drawn from
/// the same NumPy stream for the same seed: a Gamma(burstiness, 1 / (rate · burstiness))
/// gap before every request, the first included, summed, then scaled so the last is
/// due at `n / rate` (upstream's "stabilise the throughput" rescaling).
pub fn upstream_offsets(
    n: usize,
    rate: f64,
    burstiness: f64,
    seed: u64,
) -> Result<Vec<f64>, ScheduleError> {
    check_rate(rate, burstiness)?;
    let mut np = NpLegacy::new(seed);
    let theta = 1.0 / (rate * burstiness);
    let mut t = 0.0;
    let mut out: Vec<f64> = (0..n)
        .map(|_| {
            t += np.gamma(burstiness, theta);
            t
        })
        .collect();
    if t > 0.0 {
        let k = n as f64 / rate / t;
        out.iter_mut().for_each(|x| *x *= k);
    }
    Ok(out)
}

/// Send offsets (seconds from the first scheduled send) of `n` open-loop requests at
/// `rate` per second: the first at 0, then gaps drawn from
/// Gamma(shape = burstiness, scale = 1 / (rate · burstiness)) (burstiness 1 = Poisson),
/// from a ChaCha8 stream of `seed` separate from the row shuffle's.
pub fn arrival_offsets(
    n: usize,
    rate: f64,
    burstiness: f64,
    seed: u64,
) -> Result<Vec<f64>, ScheduleError> {
    check_rate(rate, burstiness)?;
    let gamma = Gamma::new(burstiness, 1.0 / (rate * burstiness)).map_err(|source| {
        ScheduleError::Distribution {
            rate,
            burstiness,
            source,
        }
    })?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(1);
    let mut t = 0.0;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if i > 0 {
            t += gamma.sample(&mut rng);
        }
        out.push(t);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod shape_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn gap_stats(offsets: &[f64]) -> (f64, f64) {
        let gaps: Vec<f64> = offsets.windows(2).map(|w| w[1] - w[0]).collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn gamma_gaps_have_the_configured_rate_and_burstiness() {
        let a = arrival_offsets(20_001, 20.0, 1.0, 3).unwrap();
        assert_eq!(a[0], 0.0);
        assert!(a.windows(2).all(|w| w[1] >= w[0]));
        let (mean, cv) = gap_stats(&a);
        assert!((mean - 0.05).abs() < 0.05 * 0.03, "mean gap {mean}");
        assert!((cv - 1.0).abs() < 0.05, "Poisson gaps have CV 1, got {cv}");
        // Burstiness 0.5: same mean, CV² = 1 / shape = 2.
        let b = arrival_offsets(20_001, 20.0, 0.5, 3).unwrap();
        let (mean, cv) = gap_stats(&b);
        assert!((mean - 0.05).abs() < 0.05 * 0.05, "mean gap {mean}");
        assert!((cv * cv - 2.0).abs() < 0.2, "CV² {}", cv * cv);
    }

    #[test]
    fn seeded_and_validated() {
        assert_eq!(
            arrival_offsets(50, 2.0, 1.0, 9),
            arrival_offsets(50, 2.0, 1.0, 9)
        );
        assert_ne!(
            arrival_offsets(50, 2.0, 1.0, 9),
            arrival_offsets(50, 2.0, 1.0, 10)
        );
        assert!(arrival_offsets(5, 0.0, 1.0, 0).is_err());
        assert!(
            arrival_offsets(5, 1.0, 0.0, 0)
                .unwrap_err()
                .to_string()
                .contains("burstiness")
        );
    }
}
