//! Load shape of a step: when each open-loop request is due (the warmup count is
//! `BenchEntry::warmups` in dfx-core).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma};

/// Send offsets (seconds from the first scheduled send) of `n` open-loop requests at
/// `rate` per second: the first at 0, then gaps drawn from
/// Gamma(shape = burstiness, scale = 1 / (rate · burstiness)) (burstiness 1 = Poisson),
/// from a ChaCha8 stream of `seed` separate from the row shuffle's.
pub fn arrival_offsets(
    n: usize,
    rate: f64,
    burstiness: f64,
    seed: u64,
) -> Result<Vec<f64>, String> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!(
            "request_rate must be a positive number, got {rate}"
        ));
    }
    if !(burstiness.is_finite() && burstiness > 0.0) {
        return Err(format!(
            "burstiness must be a positive number, got {burstiness}"
        ));
    }
    let gamma = Gamma::new(burstiness, 1.0 / (rate * burstiness)).map_err(|e| {
        format!("bad arrival distribution (rate {rate}, burstiness {burstiness}): {e}")
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
                .contains("burstiness")
        );
    }
}
