//! E-Divisive with means (Matteson & James, "A Nonparametric Approach for Multiple Change
//! Point Analysis of Multivariate Data", JASA 109(505), 2014), the detector of MongoDB's
//! performance CI (Daly et al., "Change Point Detection in Software Performance Testing",
//! ICPE 2020) and of Apache Otava (formerly Hunter). Univariate, α = 1: hierarchical
//! bisection on the divergence statistic q̂, each new change point accepted only when a
//! permutation test finds it significant.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// Tuning of the detector.
#[derive(Debug, Clone, Copy)]
pub struct EdOptions {
    /// Fewest points on either side of a split.
    pub min_size: usize,
    /// Permutations per significance test.
    pub permutations: usize,
    /// Largest p-value accepted.
    pub significance: f64,
    /// Seed of the permutations (results are reproducible).
    pub seed: u64,
}

impl Default for EdOptions {
    fn default() -> Self {
        EdOptions {
            min_size: 2,
            permutations: 199,
            significance: 0.05,
            seed: 0x00df_5eed,
        }
    }
}

/// The best split of `xs` (index of the first point after it) and its q̂, or `None` when
/// `xs` is too short for two segments of `min_size`.
pub(crate) fn best_split(xs: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let n = xs.len();
    let min_size = min_size.max(1);
    if n < 2 * min_size {
        return None;
    }
    let d = |i: usize, j: usize| (xs[i] - xs[j]).abs();
    // Move points from B into A one at a time, keeping the three sums current.
    let mut within_a = 0.0;
    let mut within_b: f64 = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .map(|(i, j)| d(i, j))
        .sum();
    let mut between = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..n {
        let moved = tau - 1;
        let to_a: f64 = (0..moved).map(|i| d(i, moved)).sum();
        let to_b: f64 = (tau..n).map(|j| d(moved, j)).sum();
        within_a += to_a;
        within_b -= to_b;
        between += to_b - to_a;
        let (m, k) = (tau as f64, (n - tau) as f64);
        if tau < min_size || n - tau < min_size {
            continue;
        }
        let pairs = |c: f64| if c > 1.0 { c * (c - 1.0) / 2.0 } else { 1.0 };
        let e = 2.0 * between / (m * k) - within_a / pairs(m) - within_b / pairs(k);
        let q = m * k / (m + k) * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

/// The permutation p-value of the best split of `xs` having statistic `q`.
fn p_value(xs: &[f64], q: f64, opts: &EdOptions, rng: &mut ChaCha8Rng) -> f64 {
    let mut shuffled = xs.to_vec();
    let mut at_least = 0usize;
    for _ in 0..opts.permutations {
        shuffled.shuffle(rng);
        if best_split(&shuffled, opts.min_size).is_some_and(|(_, qp)| qp >= q - 1e-12) {
            at_least += 1;
        }
    }
    (at_least + 1) as f64 / (opts.permutations + 1) as f64
}

/// The significant change points of `xs`, ascending; each is the index of the first point
/// of a new segment.
pub(crate) fn change_points(xs: &[f64], opts: &EdOptions) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut cps: Vec<usize> = Vec::new();
    loop {
        let mut bounds = vec![0];
        bounds.extend(cps.iter().copied());
        bounds.push(xs.len());
        let candidate = bounds
            .windows(2)
            .filter_map(|w| {
                best_split(&xs[w[0]..w[1]], opts.min_size).map(|(t, q)| (w[0], w[1], t, q))
            })
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((lo, hi, tau, q)) = candidate else {
            break;
        };
        if q <= 0.0 || p_value(&xs[lo..hi], q, opts, &mut rng) > opts.significance {
            break;
        }
        cps.push(lo + tau);
        cps.sort_unstable();
    }
    cps
}
