//! Fits a Qwen3-TTS profile's performance parameters to SIM.md's H20 table with the
//! virtual bench (exact model, no wall clock), robustly: every candidate is scored on
//! several audio-length draws (simulator seeds) and several client arrival spreads, and
//! the worst relative error counts. This is how the default profiles were calibrated.
//!
//! `cargo run --release -p dfx-sim --example fit -- --task vc|vd [--iters N] [--slots S]
//!  [--batch B] [--rng N] [--restarts R] [--eval]`   (`--eval` only scores the current profile; `--slots`
//!  and `--batch` try another code2wav resident limit / decode batch)

#[path = "../tests/common/mod.rs"]
mod common;

use common::calibration::Task;
use common::client::PROMPTS;
use dfx_sim::SimOptions;
use dfx_sim::engine::EngineConfig;
use dfx_sim::plan;
use dfx_sim::request::{Delivery, Format, SpeechRequest, Task as ReqTask};
use dfx_sim::vbench::{self, Load};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SEEDS: [u64; 3] = [0, 1, 2];
const SPREADS: [f64; 4] = [0.0, 0.005, 0.02, 0.05];

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
        let frames = SEEDS
            .iter()
            .map(|&seed| {
                let cfg = SimOptions::new(task.model())
                    .seed(seed)
                    .resolve()
                    .expect("profile");
                PROMPTS
                    .iter()
                    .map(|t| plan::plan(&cfg, &request(t, clone), 64).0.frames)
                    .collect()
            })
            .collect();
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

    /// Worst |ln(measured / target)| over every variant and point, and the rows of the
    /// first variant.
    fn score(&self, p: &Params) -> (f64, Vec<(usize, f64, f64)>) {
        let engine = self.engine(p);
        let mut worst = 0f64;
        let mut rows = Vec::new();
        for (vi, frames) in self.frames.iter().enumerate() {
            for (si, &spread) in SPREADS.iter().enumerate() {
                for (c, rtf, ttfp) in self.task.targets() {
                    let load = Load {
                        frames: frames.clone(),
                        concurrency: c,
                        prefill_s: p.0[3],
                        ref_context_frames: if self.clone { 72 } else { 0 },
                        spread_s: spread,
                        turnaround_s: 0.001,
                    };
                    let o = vbench::run(&engine, &load);
                    let (r, t) = (o.median_rtf(), o.median_ttfp_ms());
                    worst = worst.max((r / rtf).ln().abs()).max((t / ttfp).ln().abs());
                    if vi == 0 && si == 0 {
                        rows.push((c, r, t));
                    }
                }
            }
        }
        (worst, rows)
    }
}

fn request(text: &str, clone: bool) -> SpeechRequest {
    SpeechRequest {
        input: text.to_string(),
        task: if clone {
            ReqTask::Base
        } else {
            ReqTask::VoiceDesign
        },
        voice: None,
        format: Format::Pcm,
        delivery: Delivery::Audio,
        speed: 1.0,
        max_new_tokens: 2048,
        initial_chunk_frames: None,
        clone,
        in_context: clone,
        seed: None,
    }
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
    let (mut best, mut best_score, mut rows) = (start, f64::MAX, Vec::new());
    for restart in 0..restarts.max(1) {
        let mut cur = start;
        if restart > 0 {
            for v in &mut cur.0 {
                *v *= (0.5 * (rng.random::<f64>() * 2.0 - 1.0)).exp();
            }
        }
        let (mut cur_score, mut cur_rows) = problem.score(&cur);
        let mut scale = 0.2;
        for i in 0..if eval { 0 } else { iters } {
            let mut cand = cur;
            for _ in 0..rng.random_range(1..=3) {
                let k = rng.random_range(0..cand.0.len());
                cand.0[k] *= (scale * (rng.random::<f64>() * 2.0 - 1.0)).exp();
            }
            let (s, r) = problem.score(&cand);
            if s < cur_score {
                (cur, cur_score, cur_rows) = (cand, s, r);
            }
            if i % 100 == 99 {
                scale *= 0.85;
            }
        }
        if cur_score < best_score {
            (best, best_score, rows) = (cur, cur_score, cur_rows);
        }
    }
    println!(
        "{} — worst error over {} variants: ±{:.1} %",
        task.name(),
        SEEDS.len() * SPREADS.len(),
        (best_score.exp() - 1.0) * 100.0
    );
    for (name, v) in NAMES.iter().zip(best.0) {
        println!("  {name:28} {v:.6}");
    }
    for ((c, r, t), (_, rt, tt)) in rows.iter().zip(task.targets()) {
        println!(
            "  c={c:2}  RTF {r:.3} ({:+.0}%)  TTFP {t:.0} ms ({:+.0}%)",
            (r / rt - 1.0) * 100.0,
            (t / tt - 1.0) * 100.0
        );
    }
}
