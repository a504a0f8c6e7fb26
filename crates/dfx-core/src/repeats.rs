//! Repeats of one sweep step on the same server (`repeats` entry key, `--repeats`): the
//! statistics of each key metric over the repeats, and the one result document the
//! verdict judges, whose metrics are the medians of the repeats.
//!
//! The confidence interval is a percentile bootstrap of the median (the statistic the
//! verdict uses): `BOOTSTRAP_RESAMPLES` resamples with replacement from a ChaCha8 stream
//! of a fixed seed, so the same values always give the same interval.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::baseline::direction_of;
use crate::result::ResultDoc;

/// Resamples of the bootstrap.
pub(crate) const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Seed of the bootstrap's resampling stream.
const BOOTSTRAP_SEED: u64 = 0x0b00_7575;
/// How the interval is computed, as the result says it.
pub(crate) const CI_METHOD: &str =
    "percentile bootstrap of the median, 2000 resamples with replacement, fixed seed";

/// One metric over the repeats that produced a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct MetricStats {
    /// Repeats that measured it.
    pub n: usize,
    /// Every repeat's value, in repeat order.
    pub values: Vec<f64>,
    /// Arithmetic mean of `values`.
    pub mean: f64,
    /// The value the verdict judges.
    pub median: f64,
    /// Sample standard deviation (n − 1); 0 for one value.
    pub std: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// The 95 % confidence interval of the median ([`CI_METHOD`]).
    pub ci95_low: f64,
    /// Upper end of the 95 % interval.
    pub ci95_high: f64,
}

impl MetricStats {
    /// The statistics of `values` (finite numbers; `None` when there are none).
    pub(crate) fn of(values: &[f64]) -> Option<MetricStats> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let std = if n > 1 {
            let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let (ci95_low, ci95_high) = bootstrap_median_ci(values);
        Some(MetricStats {
            n,
            values: values.to_vec(),
            mean,
            median: median(values),
            std,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ci95_low,
            ci95_high,
        })
    }
}

/// Median of a non-empty slice (mean of the middle two for even counts).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The 2.5 % and 97.5 % quantiles of the medians of [`BOOTSTRAP_RESAMPLES`] resamples.
fn bootstrap_median_ci(values: &[f64]) -> (f64, f64) {
    if values.len() == 1 {
        return (values[0], values[0]);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(BOOTSTRAP_SEED);
    let mut sample = vec![0.0; values.len()];
    let mut medians: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            for s in sample.iter_mut() {
                *s = values[rng.random_range(0..values.len())];
            }
            median(&sample)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    let at = |q: f64| medians[(q * (medians.len() - 1) as f64).round() as usize];
    (at(0.025), at(0.975))
}

/// Whether a result key is one the repeats summarise: a metric with a known direction
/// (the ones a baseline can judge), except the request counts.
pub(crate) fn is_key_metric(key: &str) -> bool {
    !matches!(key, "completed" | "failed") && direction_of(key).is_some()
}

/// One repeat as the runner saw it.
#[derive(Debug, Clone)]
pub struct RepeatRun {
    /// 1-based.
    pub repeat: u32,
    /// Folder of the repeat, relative to the trial folder (`repeat-2`).
    pub dir: String,
    /// The seed the repeat's bench used.
    pub seed: u64,
    /// The repeat's result, when its bench left one (not the template fallback).
    pub doc: Option<ResultDoc>,
    /// Why the repeat failed, when it did.
    pub failures: Vec<String>,
}

/// The document of a step run as repeats: the first repeat with a result, every key
/// metric replaced by its median over the repeats with a result, `completed` the fewest
/// and `failed` the most of any repeat (so the completion check sees the worst), and a
/// `repeats` section with every repeat and each key metric's statistics. `None` when no
/// repeat left a result.
pub fn combine(runs: &[RepeatRun]) -> Option<ResultDoc> {
    let docs: Vec<&ResultDoc> = runs.iter().filter_map(|r| r.doc.as_ref()).collect();
    let mut out = (*docs.first()?).clone();
    let mut stats = Map::new();
    for key in docs[0].keys().filter(|k| is_key_metric(k)) {
        let values: Option<Vec<f64>> = docs.iter().map(|d| d.get(key)?.as_f64()).collect();
        if let Some(s) = values.as_deref().and_then(MetricStats::of) {
            out.insert(key.clone(), json!(s.median));
            stats.insert(key.clone(), json!(s));
        }
    }
    let counts =
        |key: &str| -> Vec<u64> { docs.iter().filter_map(|d| d.get(key)?.as_u64()).collect() };
    if let Some(c) = counts("completed").into_iter().min() {
        out.insert("completed".into(), json!(c));
    }
    if let Some(f) = counts("failed").into_iter().max() {
        out.insert("failed".into(), json!(f));
    }
    let listed: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({"repeat": r.repeat, "dir": r.dir, "seed": r.seed,
                   "result": r.doc.as_ref().map(|_| format!("{}/result.json", r.dir)),
                   "passed": r.failures.is_empty(), "failures": r.failures})
        })
        .collect();
    out.insert(
        "repeats".into(),
        json!({"count": runs.len(), "with_result": docs.len(), "ci_method": CI_METHOD,
               "runs": listed, "stats": stats}),
    );
    Some(out)
}

/// Reads the statistics of `metric` from a result document's `repeats` section.
#[cfg(test)]
pub(crate) fn stats_of(doc: &ResultDoc, metric: &str) -> Option<MetricStats> {
    let s = doc.get("repeats")?.get("stats")?.get(metric)?;
    serde_json::from_value(s.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(ttfp: f64, completed: u64) -> ResultDoc {
        let v = json!({"completed": completed, "failed": 4 - completed,
                       "p99_audio_ttfp_ms": ttfp, "request_throughput": ttfp / 10.0,
                       "num_prompts": 4, "model_id": "m"});
        v.as_object().unwrap().clone()
    }

    fn run(repeat: u32, d: Option<ResultDoc>) -> RepeatRun {
        RepeatRun {
            repeat,
            dir: format!("repeat-{repeat}"),
            seed: u64::from(repeat),
            doc: d,
            failures: Vec::new(),
        }
    }

    #[test]
    fn stats_of_known_values() {
        let s = MetricStats::of(&[10.0, 30.0, 20.0, 40.0]).unwrap();
        assert_eq!(
            (s.n, s.mean, s.median, s.min, s.max),
            (4, 25.0, 25.0, 10.0, 40.0)
        );
        assert!((s.std - 12.909_944).abs() < 1e-5, "{}", s.std);
        assert!(s.ci95_low <= s.median && s.median <= s.ci95_high);
        assert!(s.ci95_low >= 10.0 && s.ci95_high <= 40.0 && s.ci95_low < s.ci95_high);
        assert_eq!(MetricStats::of(&[3.0, 3.0]).unwrap().std, 0.0);
        assert_eq!(MetricStats::of(&[]), None);
        assert_eq!(MetricStats::of(&[1.0, f64::NAN]), None);
        let one = MetricStats::of(&[7.0]).unwrap();
        assert_eq!((one.std, one.ci95_low, one.ci95_high), (0.0, 7.0, 7.0));
    }

    #[test]
    fn the_interval_narrows_with_more_repeats_and_is_reproducible() {
        let few: Vec<f64> = (0..5).map(|i| 100.0 + f64::from(i % 5) * 4.0).collect();
        let many: Vec<f64> = (0..60).map(|i| 100.0 + f64::from(i % 5) * 4.0).collect();
        let (a, b) = (
            MetricStats::of(&few).unwrap(),
            MetricStats::of(&many).unwrap(),
        );
        assert!(
            b.ci95_high - b.ci95_low < a.ci95_high - a.ci95_low,
            "{a:?} {b:?}"
        );
        assert_eq!(MetricStats::of(&few), MetricStats::of(&few));
    }

    #[test]
    fn combine_takes_medians_and_the_worst_counts() {
        let runs = [
            run(1, Some(doc(300.0, 4))),
            run(2, Some(doc(100.0, 3))),
            run(3, Some(doc(200.0, 4))),
        ];
        let out = combine(&runs).unwrap();
        assert_eq!(out["p99_audio_ttfp_ms"], json!(200.0));
        assert_eq!(out["request_throughput"], json!(20.0));
        assert_eq!(
            (out["completed"].clone(), out["failed"].clone()),
            (json!(3), json!(1))
        );
        assert_eq!(out["num_prompts"], json!(4));
        let s = stats_of(&out, "p99_audio_ttfp_ms").unwrap();
        assert_eq!(s.values, vec![300.0, 100.0, 200.0]);
        assert!(stats_of(&out, "num_prompts").is_none(), "not a key metric");
        assert_eq!(out["repeats"]["count"], json!(3));
        assert_eq!(
            out["repeats"]["runs"][1]["result"],
            json!("repeat-2/result.json")
        );
    }

    #[test]
    fn repeats_without_a_result_are_listed_but_not_counted() {
        let mut failed = run(2, None);
        failed.failures.push("bench left no result".into());
        let out = combine(&[run(1, Some(doc(50.0, 4))), failed]).unwrap();
        assert_eq!(out["repeats"]["with_result"], json!(1));
        assert_eq!(out["repeats"]["runs"][1]["passed"], json!(false));
        assert_eq!(out["repeats"]["runs"][1]["result"], Value::Null);
        assert_eq!(stats_of(&out, "p99_audio_ttfp_ms").unwrap().n, 1);
        assert!(combine(&[run(1, None)]).is_none());
    }
}
