//! Chat c = 16 (the parity row): which mode the omni model lands in against how the first
//! wave reaches it, in virtual time (no wall clock, exact). The 48 requests are the parity
//! trial's (`vbench::PARITY_CHAT_C16`); closed loop at c = 16 as both benches drive it.
//!
//! `cargo run -p dfx-sim --example first_wave [-- --orders N]`
//!
//! Part 1: the first wave spread evenly over 0, 1, 5, 10 ms (in dataset order). Part 2:
//! for each spread, N first waves whose 16 arrivals are drawn uniformly inside the spread
//! (seeded; what a real client's first wave looks like), and how many land in each mode.
//! Part 3: the client's turnaround (completion to the next request's arrival) 0–5 ms.
//!
//! `-- --trace SIM_LOG [--per-run 64 --warmups 16]`: instead, replays each run of a live
//! simulator's step trace (`DFX_SIM_LOG=info,dfx_sim::omni::engine=trace`, runs of
//! warmups + 48 arrivals): its first wave as it arrived (order, offsets, jobs), the later
//! requests closed loop 1 ms after each completion, and prints the mode the model
//! predicts for the run (`scripts/parity/chat_modes.py` prints what the server did).

use dfx_sim::SimOptions;
use dfx_sim::omni::vbench::{self, Sample};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The median ITL above which a run is in the slow mode (the batch-16 step, 11.61 ms,
/// makes more than half of the gaps; the batch-15 step is 11.27 ms).
const SLOW_ITL_MS: f64 = 11.45;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn line(label: &str, samples: &[Sample], itls: Vec<f64>) -> f64 {
    let itl = median(itls);
    println!(
        "| {label} | {itl:.2} | {:.1} | {:.2} | {} |",
        median(samples.iter().map(|s| s.audio_ttfp_ms).collect()),
        median(samples.iter().map(|s| s.ttft_ms).collect()),
        if itl > SLOW_ITL_MS { "slow" } else { "fast" }
    );
    itl
}

/// `(at_ms, prefill_ms, text_tokens, audio_frames)` of each "omni arrival" in a log.
fn arrivals(log: &str) -> Vec<(f64, f64, u32, u32)> {
    let field = |line: &str, key: &str| -> Option<f64> {
        let rest = &line[line.find(&format!(" {key}="))? + key.len() + 2..];
        rest.split_whitespace().next()?.parse().ok()
    };
    log.lines()
        .filter(|l| l.contains("omni arrival"))
        .filter_map(|l| {
            Some((
                field(l, "at_ms")?,
                field(l, "prefill_ms")?,
                field(l, "text_tokens")? as u32,
                field(l, "audio_frames")? as u32,
            ))
        })
        .collect()
}

fn replay(cfg: &dfx_sim::omni::OmniConfig, path: &str, per_run: usize, warmups: usize) {
    let log = std::fs::read_to_string(path).expect("read the trace");
    let all = arrivals(&log);
    println!(
        "{} arrivals in {path}, runs of {per_run} ({warmups} warmups)\n",
        all.len()
    );
    println!(
        "| run | first arrival's frames | median ITL ms | median TTFP ms | median TTFT ms | mode |"
    );
    println!("|---|---|---|---|---|---|");
    for (k, run) in all.chunks(per_run).enumerate() {
        let measured = &run[warmups.min(run.len())..];
        let Some(t0) = measured.first().map(|a| a.0) else {
            continue;
        };
        let jobs: Vec<_> = measured
            .iter()
            .map(|&(_, prefill_ms, tokens, frames)| {
                vbench::text_job(cfg, prefill_ms / 1e3, tokens, frames)
            })
            .collect();
        let wave: Vec<f64> = measured.iter().take(16).map(|a| (a.0 - t0) / 1e3).collect();
        let (s, itl) = vbench::run_closed_loop(&cfg.engine, &jobs, &wave, 0.001);
        line(&format!("{} | {}", k + 1, measured[0].3), &s, itl);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
    };
    let orders: u64 = args
        .iter()
        .position(|a| a == "--orders")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let mut o = SimOptions::new("Qwen/Qwen3-Omni-30B-A3B-Instruct");
    o.extra_flags.push(("--async-chunk".into(), None));
    let cfg = o.resolve().expect("options").omni.expect("omni profile");
    if let Some(path) = arg("--trace") {
        let n = |k: &str, d: usize| arg(k).and_then(|s| s.parse().ok()).unwrap_or(d);
        replay(&cfg, path, n("--per-run", 64), n("--warmups", 16));
        return;
    }
    let jobs = vbench::parity_chat_c16_jobs(&cfg);
    let even = |spread_ms: f64| -> Vec<f64> {
        (0..16)
            .map(|i| spread_ms / 1e3 * f64::from(i) / 15.0)
            .collect()
    };
    println!("Part 1: first wave spread evenly, dataset order, turnaround 0\n");
    println!("| first wave | median ITL ms | median TTFP ms | median TTFT ms | mode |");
    println!("|---|---|---|---|---|");
    for spread in [0.0, 1.0, 5.0, 10.0] {
        let (s, itl) = vbench::run_closed_loop(&cfg.engine, &jobs, &even(spread), 0.0);
        line(&format!("{spread} ms"), &s, itl);
    }
    println!("\nPart 2: {orders} first waves per spread, arrivals uniform inside it (seeded)\n");
    println!("| spread ms | slow | fast | median ITL ms seen |");
    println!("|---|---|---|---|");
    for spread in [1.0, 2.0, 5.0, 10.0] {
        let mut seen = Vec::new();
        for seed in 0..orders {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let wave: Vec<f64> = (0..16)
                .map(|_| rng.random_range(0.0..spread) / 1e3)
                .collect();
            let (_, itl) = vbench::run_closed_loop(&cfg.engine, &jobs, &wave, 0.0);
            seen.push(median(itl));
        }
        let slow = seen.iter().filter(|x| **x > SLOW_ITL_MS).count();
        let mut values: Vec<String> = seen.iter().map(|x| format!("{x:.2}")).collect();
        values.sort();
        values.dedup();
        println!(
            "| {spread} | {slow} | {} | {} |",
            seen.len() - slow,
            values.join(", ")
        );
    }
    println!(
        "\nPart 2b: which request arrives first (alone in the first thinker step); the rest in dataset order 1 ms apart / 15\n"
    );
    println!("| first | frames | median ITL ms | median TTFP ms | median TTFT ms | mode |");
    println!("|---|---|---|---|---|---|");
    for first in 0..16usize {
        let mut order: Vec<usize> = vec![first];
        order.extend((0..16).filter(|i| *i != first));
        order.extend(16..48);
        let reordered: Vec<_> = order.iter().map(|i| jobs[*i].clone()).collect();
        let (s, itl) = vbench::run_closed_loop(&cfg.engine, &reordered, &even(1.0), 0.0);
        line(&format!("{first} | {}", jobs[first].audio_frames), &s, itl);
    }
    println!("\nPart 3: client turnaround, first wave spread evenly over 1 ms\n");
    println!("| turnaround | median ITL ms | median TTFP ms | median TTFT ms | mode |");
    println!("|---|---|---|---|---|");
    for t in [0.0, 0.5, 1.0, 2.0, 3.0, 5.0] {
        let (s, itl) = vbench::run_closed_loop(&cfg.engine, &jobs, &even(1.0), t / 1e3);
        line(&format!("{t} ms"), &s, itl);
    }
}
