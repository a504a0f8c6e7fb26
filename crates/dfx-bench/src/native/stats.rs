//! Statistics with numpy's semantics (what vllm's bench computes with): mean, median and
//! percentiles with linear interpolation at rank `(n − 1) · p / 100`. Empty samples give 0.

/// numpy's pairwise summation (`DOUBLE_pairwise_sum`), so means match numpy to the last
/// bits for typical sizes.
fn pairwise_sum(xs: &[f64]) -> f64 {
    const BLOCK: usize = 128;
    let n = xs.len();
    if n < 8 {
        xs.iter().fold(0.0, |acc, x| acc + x)
    } else if n <= BLOCK {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&xs[..8]);
        let mut i = 8;
        while i < n - (n % 8) {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += xs[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for x in &xs[i..] {
            res += x;
        }
        res
    } else {
        let mut half = n / 2;
        half -= half % 8;
        pairwise_sum(&xs[..half]) + pairwise_sum(&xs[half..])
    }
}

/// Sum (numpy order).
pub fn sum(xs: &[f64]) -> f64 {
    pairwise_sum(xs)
}

/// Arithmetic mean; 0 for no samples.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        pairwise_sum(xs) / xs.len() as f64
    }
}

/// numpy's `_lerp`: exact at both ends.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// A sorted copy of the samples, for several order statistics.
#[derive(Debug, Clone, Default)]
pub struct Sorted(Vec<f64>);

impl Sorted {
    /// Sorts `xs` (NaN never occurs in measured values; it would sort last).
    pub fn new(mut xs: Vec<f64>) -> Self {
        xs.sort_by(|a, b| a.total_cmp(b));
        Sorted(xs)
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Mean (numpy summation).
    pub fn mean(&self) -> f64 {
        mean(&self.0)
    }

    /// numpy `std` (population standard deviation, ddof 0); 0 for no samples.
    pub fn std(&self) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        let m = self.mean();
        let dev: Vec<f64> = self.0.iter().map(|x| (x - m) * (x - m)).collect();
        mean(&dev).sqrt()
    }

    /// numpy median: the middle sample, or the mean of the two middle samples.
    pub fn median(&self) -> f64 {
        let n = self.0.len();
        match n {
            0 => 0.0,
            _ if n % 2 == 1 => self.0[n / 2],
            _ => (self.0[n / 2 - 1] + self.0[n / 2]) / 2.0,
        }
    }

    /// numpy `percentile(…, p)` with the default linear method.
    pub fn percentile(&self, p: f64) -> f64 {
        let n = self.0.len();
        if n == 0 {
            return 0.0;
        }
        let virtual_index = (n - 1) as f64 * (p / 100.0);
        let lo = virtual_index.floor().clamp(0.0, (n - 1) as f64);
        let lo_i = lo as usize;
        let hi_i = (lo_i + 1).min(n - 1);
        lerp(self.0[lo_i], self.0[hi_i], virtual_index - lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_samples_give_zero() {
        let s = Sorted::new(vec![]);
        assert_eq!((s.mean(), s.median(), s.percentile(99.0)), (0.0, 0.0, 0.0));
    }

    /// Hand-computed with numpy: np.percentile([1,2,3,4], 90) = 3.7,
    /// np.percentile([1,2,3,4], 50) = 2.5 = median, p99 = 3.97, p0 = 1, p100 = 4.
    #[test]
    fn linear_interpolation_like_numpy() {
        let s = Sorted::new(vec![4.0, 1.0, 3.0, 2.0]);
        assert!((s.percentile(90.0) - 3.7).abs() < 1e-12);
        assert_eq!(s.percentile(50.0), 2.5);
        assert_eq!(s.median(), 2.5);
        assert!((s.percentile(99.0) - 3.97).abs() < 1e-12);
        assert_eq!(s.percentile(0.0), 1.0);
        assert_eq!(s.percentile(100.0), 4.0);
        assert_eq!(s.mean(), 2.5);
        let odd = Sorted::new(vec![5.0, 0.0, 0.0, 0.5, 0.5]);
        assert_eq!(odd.median(), 0.5);
        assert!((odd.mean() - 1.2).abs() < 1e-12);
    }

    /// The reference run's E2EL figures (`result-c2-with-failure-detailed.json`): five
    /// successes whose sorted values are reconstructed from the published statistics give
    /// back the published mean, median, p50, p90 and p99 exactly as numpy printed them.
    #[test]
    fn reproduces_reference_e2el_statistics() {
        // d + 0.6 (e − d) = p90 and d + 0.96 (e − d) = p99 fix d and e; c is the median.
        let (p90, p99, med) = (557.7391655999804, 558.2462583599704, 2.202164999971501);
        let e_minus_d = (p99 - p90) / 0.36;
        let d = p90 - 0.6 * e_minus_d;
        let e = d + e_minus_d;
        let s = Sorted::new(vec![1.0, 1.9, med, d, e]);
        assert!((s.percentile(90.0) - p90).abs() < 1e-9);
        assert!((s.percentile(99.0) - p99).abs() < 1e-9);
        assert_eq!(s.median(), med);
        assert_eq!(s.percentile(50.0), med);
    }

    #[test]
    fn pairwise_sum_matches_plain_sum_on_exact_values() {
        let xs: Vec<f64> = (0..1000).map(f64::from).collect();
        assert_eq!(sum(&xs), 499_500.0);
        let xs: Vec<f64> = (0..13).map(f64::from).collect();
        assert_eq!(sum(&xs), 78.0);
    }
}
