//! The prompt sets and client arrival orders the calibration is checked on.
//!
//! A closed-loop sweep point is one draw of the order in which the first `c` requests
//! reach the server (a client's connections race each other). Near saturation that order
//! decides which requests finish first, hence the whole trajectory and its median, on the
//! H20 as on the model. So the calibration is stated for the median over arrival orders,
//! with every single order held to a wider band.

#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::calibration::{Point, Task, median};
use super::client::PROMPTS;

/// Arrival orders tried per sweep point (0 = prompt order).
pub(crate) const ORDERS: u64 = 8;

/// The prompts a calibration sweep sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prompts {
    /// The tests' 20 English prompts ([`PROMPTS`]).
    Tests,
    /// The 20 rows the suite's calibration config (`perf-configs/calibration/sim_h20.json`)
    /// sends: its shipped dataset, rows chosen by the native bench's seeded selection
    /// (default seed 0), in send order.
    Suite,
}

impl Prompts {
    pub(crate) const ALL: [Prompts; 2] = [Prompts::Tests, Prompts::Suite];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Prompts::Tests => "tests' prompts",
            Prompts::Suite => "suite's calibration prompts",
        }
    }

    /// The texts, in send order.
    pub(crate) fn texts(self, task: Task) -> Vec<String> {
        use dfx_bench::native::dataset::{self, DatasetKind};
        if self == Prompts::Tests {
            return PROMPTS.iter().map(|s| s.to_string()).collect();
        }
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../perf-configs/datasets");
        let (kind, folder) = match task {
            Task::VoiceClone => (DatasetKind::SeedTts, root.join("seed-tts-eval-subset")),
            Task::VoiceDesign => (DatasetKind::SeedTtsText, root.join("seed_tts_smoke")),
        };
        let ds = dataset::load(kind, &folder, "en").expect("the shipped calibration dataset");
        dataset::select(ds.rows.len(), 20, 0)
            .into_iter()
            .map(|i| ds.rows[i].text.clone())
            .collect()
    }
}

/// `items` with its first `c` entries shuffled by `order` (0 keeps them).
pub(crate) fn arrival_order<T: Clone>(items: &[T], c: usize, order: u64) -> Vec<T> {
    let mut v = items.to_vec();
    if order > 0 {
        let mut rng = ChaCha8Rng::seed_from_u64(order);
        for i in (1..c.min(v.len())).rev() {
            v.swap(i, rng.random_range(0..=i));
        }
    }
    v
}

/// The model's answer to one closed-loop sweep point for each of [`ORDERS`] arrival
/// orders of `jobs` (virtual time, no HTTP).
pub(crate) fn predict_orders(
    cfg: &dfx_sim::SimConfig,
    jobs: &[dfx_sim::engine::Job],
    concurrency: usize,
    spread_s: f64,
    turnaround_s: f64,
) -> Vec<Point> {
    (0..ORDERS)
        .map(|order| {
            let jobs = arrival_order(jobs, concurrency, order);
            let load = dfx_sim::vbench::Load::from_jobs(&jobs, concurrency, spread_s, turnaround_s)
                .expect("one task per load");
            let o = dfx_sim::vbench::run(&cfg.engine, &load);
            Point {
                concurrency,
                median_rtf: o.median_rtf(),
                median_ttfp_ms: o.median_ttfp_ms(),
                median_e2el_ms: median(&mut o.e2el_s.clone()) * 1000.0,
                audio_throughput: o.audio_throughput(),
                failures: 0,
            }
        })
        .collect()
}

/// The point whose RTF, TTFP, E2EL and throughput are the medians over `points`.
pub(crate) fn median_point(points: &[Point]) -> Point {
    let m = |f: fn(&Point) -> f64| median(&mut points.iter().map(f).collect::<Vec<_>>());
    Point {
        concurrency: points[0].concurrency,
        median_rtf: m(|p| p.median_rtf),
        median_ttfp_ms: m(|p| p.median_ttfp_ms),
        median_e2el_ms: m(|p| p.median_e2el_ms),
        audio_throughput: m(|p| p.audio_throughput),
        failures: points.iter().map(|p| p.failures).sum(),
    }
}
