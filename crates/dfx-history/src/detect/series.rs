//! One trial × metric over runs, and its noise.

/// Why a run has no value in a series.
#[derive(Debug, Clone, PartialEq)]
pub enum Gap {
    /// Every trial of that run failed: a broken run (server never started, …), not a
    /// slowdown.
    RunFailed(String),
    /// This trial failed or its numbers are not clean.
    TrialFailed(String),
    /// The run was interrupted during or before this trial.
    Interrupted,
    /// The trial did not measure this metric in that run.
    Missing,
}

/// One run's point of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The run.
    pub run_id: String,
    /// The clean value, or why there is none.
    pub value: Result<f64, Gap>,
    /// Repeats share a key (commit and config hashes): their spread is the noise.
    pub repeat_key: Option<String>,
    /// The run's own repeats of the step (`--repeats`), whose value is their median:
    /// their spread is noise too.
    pub repeat_values: Vec<f64>,
}

/// Median of `xs` (`NaN` when empty).
pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Robust spread: 1.4826 × the median absolute deviation from each segment's median,
/// pooled over `segments` (a normal sample's standard deviation).
pub(crate) fn mad_noise(segments: &[&[f64]]) -> f64 {
    let devs: Vec<f64> = segments
        .iter()
        .flat_map(|s| {
            let m = median(s);
            s.iter().map(move |x| (x - m).abs())
        })
        .collect();
    1.4826 * median(&devs)
}

/// Pooled standard deviation within groups of repeats (values with the same key), when at
/// least one group has two or more values.
pub(crate) fn repeat_noise(values: &[(f64, &str)]) -> Option<f64> {
    let mut groups: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    for (x, k) in values {
        groups.entry(k).or_default().push(*x);
    }
    let (mut ss, mut df) = (0.0, 0usize);
    for g in groups.values().filter(|g| g.len() >= 2) {
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        ss += g.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
        df += g.len() - 1;
    }
    (df > 0).then(|| (ss / df as f64).sqrt())
}
