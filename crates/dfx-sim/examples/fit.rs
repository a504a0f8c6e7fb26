//! Fits a Qwen3-TTS profile's performance parameters to the H20 table of
//! `docs/simulator.md` ("Calibration") with the virtual bench (exact model, no wall
//! clock), robustly: every candidate is scored on several audio-length draws (simulator
//! seeds) and several client arrival spreads, and the worst relative error counts. This is
//! how the default profiles were calibrated.
//!
//! Two prompt sets are scored: the tests' 20 prompts, and the 20 rows the suite's own
//! calibration config (`perf-configs/calibration/sim_h20.json`) sends, picked from the
//! shipped dataset with the native bench's seeded selection, in its send order. The
//! native bench sends its warmups as a separate phase, so its measured phase starts on an
//! idle server with all `c` requests at once (spread 0, which the spreads include).
//!
//! `cargo run --release -p dfx-sim --example fit -- --task vc|vd [--iters N] [--slots S]
//!  [--batch B] [--rng N] [--restarts R] [--eval]`   (`--eval` only scores the current profile; `--slots`
//!  and `--batch` try another code2wav resident limit / decode batch)

#[path = "../tests/common/mod.rs"]
mod common;

use common::calibration::{Task, median, server_jobs_for};
use common::orders::{ORDERS, Prompts, arrival_order};
use dfx_sim::SimOptions;
use dfx_sim::engine::EngineConfig;
use dfx_sim::vbench::{self, Load};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SEEDS: [u64; 3] = [0, 1, 2];
const SPREADS: [f64; 3] = [0.0, 0.005, 0.02];
/// The fitted parameters of one profile.
#[derive(Debug, Clone, Copy)]
struct Params([f64; 7]);

const NAMES: [&str; 7] = [
    "talker step_base_s",
    "talker step_per_seq_s",
    "talker prefill_per_seq_s",
    "prefill_s (task)",
    "codec step_base_s",
    "codec per_frame_s",
    "contention",
];

struct Problem {
    task: Task,
    base: EngineConfig,
    clone: bool,
    /// Frames of each prompt, per variant (prompt set × simulator seed).
    frames: Vec<Vec<u32>>,
}

impl Problem {
    fn new(task: Task, slots: Option<usize>, batch: Option<usize>) -> Self {
        let cfg = SimOptions::new(task.model()).resolve().expect("profile");
        let clone = task == Task::VoiceClone;
        let mut base = cfg.engine.clone();
        if let Some(c) = base.codec.as_mut() {
            c.max_num_seqs = slots.unwrap_or(c.max_num_seqs);
            c.decode_batch = batch.unwrap_or(c.decode_batch);
        }
        let mut frames = Vec::new();
        for set in Prompts::ALL {
            let texts = set.texts(task);
            for &seed in &SEEDS {
                let cfg = SimOptions::new(task.model())
                    .seed(seed)
                    .resolve()
                    .expect("profile");
                let jobs = server_jobs_for(task, &cfg, &texts);
                frames.push(jobs.iter().map(|j| j.frames).collect());
            }
        }
        Problem {
            task,
            base,
            clone,
            frames,
        }
    }

    fn start(&self) -> Params {
        let cfg = SimOptions::new(self.task.model())
            .resolve()
            .expect("profile");
        let c = self.base.codec.as_ref().expect("two-stage");
        let prefill = if self.clone {
            cfg.profile.prefill_clone_s
        } else {
            cfg.profile.prefill_plain_s
        };
        Params([
            self.base.talker.step_base_s,
            self.base.talker.step_per_seq_s,
            self.base.talker.prefill_per_seq_s,
            prefill,
            c.step_base_s,
            c.per_frame_s,
            self.base.contention,
        ])
    }

    fn engine(&self, p: &Params) -> EngineConfig {
        let mut e = self.base.clone();
        e.talker.step_base_s = p.0[0];
        e.talker.step_per_seq_s = p.0[1];
        e.talker.prefill_per_seq_s = p.0[2];
        let c = e.codec.as_mut().expect("two-stage");
        c.step_base_s = p.0[4];
        c.per_frame_s = p.0[5];
        e.contention = p.0[6];
        e
    }

    /// The fit's score, the worst |ln(measured / target)| of the median over arrival
    /// orders and of any single order, and the rows of the first variant (the tests'
    /// prompts, seed 0, spread 0, prompt order) and of the suite's prompts (same).
    ///
    /// One run of a closed loop is one draw of the arrival order, and near saturation
    /// the orders give medians far apart (on the H20 as on the model), so the typical
    /// run is what is fitted to the table and the spread of single orders is kept in
    /// check with a smaller weight.
    fn score(&self, p: &Params) -> Score {
        let engine = self.engine(p);
        let (mut worst_median, mut worst_any) = (0f64, 0f64);
        let mut rows = Vec::new();
        for (vi, frames) in self.frames.iter().enumerate() {
            for (si, &spread) in SPREADS.iter().enumerate() {
                for (c, rtf, ttfp) in self.task.targets() {
                    let (mut rs, mut ts) = (Vec::new(), Vec::new());
                    for order in 0..ORDERS {
                        let load = Load {
                            frames: arrival_order(frames, c, order),
                            concurrency: c,
                            prefill_s: p.0[3],
                            ref_context_frames: if self.clone { 72 } else { 0 },
                            spread_s: spread,
                            turnaround_s: 0.001,
                        };
                        let o = vbench::run(&engine, &load);
                        let (r, t) = (o.median_rtf(), o.median_ttfp_ms());
                        worst_any = worst_any.max(err(r, rtf)).max(err(t, ttfp));
                        if vi % SEEDS.len() == 0 && si == 0 && order == 0 {
                            rows.push((c, r, t));
                        }
                        rs.push(r);
                        ts.push(t);
                    }
                    let (r, t) = (median(&mut rs), median(&mut ts));
                    worst_median = worst_median.max(err(r, rtf)).max(err(t, ttfp));
                }
            }
        }
        Score {
            score: worst_median + 0.25 * worst_any,
            worst_median,
            worst_any,
            rows,
        }
    }
}

/// What [`Problem::score`] found.
struct Score {
    score: f64,
    worst_median: f64,
    worst_any: f64,
    rows: Vec<(usize, f64, f64)>,
}

fn err(measured: f64, target: f64) -> f64 {
    (measured / target).ln().abs()
}

fn main() {
    let mut task = Task::VoiceClone;
    let (mut iters, mut rng_seed, mut slots, mut batch, mut eval) =
        (600usize, 1u64, None, None, false);
    let mut restarts = 1usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--task" => {
                task = if val() == "vd" {
                    Task::VoiceDesign
                } else {
                    Task::VoiceClone
                }
            }
            "--iters" => iters = val().parse().expect("--iters"),
            "--rng" => rng_seed = val().parse().expect("--rng"),
            "--slots" => slots = Some(val().parse().expect("--slots")),
            "--batch" => batch = Some(val().parse().expect("--batch")),
            "--eval" => eval = true,
            "--restarts" => restarts = val().parse().expect("--restarts"),
            "--bench" => {}
            other => panic!("unknown flag {other}"),
        }
    }
    let problem = Problem::new(task, slots, batch);
    let start = problem.start();
    let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
    let mut best: Option<(Params, Score)> = None;
    for restart in 0..restarts.max(1) {
        let mut cur = start;
        if restart > 0 {
            for v in &mut cur.0 {
                *v *= (0.5 * (rng.random::<f64>() * 2.0 - 1.0)).exp();
            }
        }
        let mut cur_score = problem.score(&cur);
        let mut scale = 0.2;
        for i in 0..if eval { 0 } else { iters } {
            let mut cand = cur;
            for _ in 0..rng.random_range(1..=3) {
                let k = rng.random_range(0..cand.0.len());
                cand.0[k] *= (scale * (rng.random::<f64>() * 2.0 - 1.0)).exp();
            }
            let s = problem.score(&cand);
            if s.score < cur_score.score {
                (cur, cur_score) = (cand, s);
            }
            if i % 100 == 99 {
                scale *= 0.85;
            }
        }
        if best.as_ref().is_none_or(|b| cur_score.score < b.1.score) {
            best = Some((cur, cur_score));
        }
    }
    let (best, score) = best.expect("at least one restart");
    let pct = |e: f64| (e.exp() - 1.0) * 100.0;
    println!(
        "{} — worst error of the median over {} arrival orders: ±{:.1} %; of any single \
         order: ±{:.1} % ({} variants × {} points)",
        task.name(),
        ORDERS,
        pct(score.worst_median),
        pct(score.worst_any),
        problem.frames.len() * SPREADS.len(),
        task.targets().len()
    );
    let rows = score.rows;
    for (name, v) in NAMES.iter().zip(best.0) {
        println!("  {name:28} {v:.6}");
    }
    let targets = task.targets();
    for (i, (c, r, t)) in rows.iter().enumerate() {
        let (_, rt, tt) = targets[i % targets.len()];
        if i % targets.len() == 0 {
            println!(
                "  {} (seed 0, spread 0):",
                Prompts::ALL[i / targets.len()].name()
            );
        }
        println!(
            "  c={c:2}  RTF {r:.3} ({:+.0}%)  TTFP {t:.0} ms ({:+.0}%)",
            (r / rt - 1.0) * 100.0,
            (t / tt - 1.0) * 100.0
        );
    }
}
