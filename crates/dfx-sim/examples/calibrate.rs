//! Prints the calibration table of the simulator against the H20 targets of
//! `docs/simulator.md` ("Calibration").
//!
//! `cargo run --release -p dfx-sim --example calibrate -- [--speed K] [--task vc|vd|all]
//!  [--concurrency 1,4,8,32] [--deploy-config PATH] [--stage-overrides JSON] [--seed N]`
//!
//! The simulator runs in this process on its own runtime (2 worker threads); the client
//! runs on another. TTFP is scaled back by the speed factor; RTF needs no scaling.

#[path = "../tests/common/mod.rs"]
mod common;

use common::calibration::{Task, sweep, table};
use dfx_sim::SimOptions;

struct Args {
    speed: f64,
    tasks: Vec<Task>,
    concurrency: Vec<usize>,
    deploy: Option<String>,
    overrides: Option<serde_json::Value>,
    seed: u64,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        speed: 10.0,
        tasks: vec![Task::VoiceClone, Task::VoiceDesign],
        concurrency: vec![1, 4, 8, 32],
        deploy: None,
        overrides: None,
        seed: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--speed" => a.speed = val()?.parse().map_err(|e| format!("--speed: {e}"))?,
            "--seed" => a.seed = val()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--task" => {
                a.tasks = match val()?.as_str() {
                    "vc" => vec![Task::VoiceClone],
                    "vd" => vec![Task::VoiceDesign],
                    "all" => vec![Task::VoiceClone, Task::VoiceDesign],
                    t => return Err(format!("--task: `{t}` (accepted: vc, vd, all)")),
                }
            }
            "--concurrency" => {
                a.concurrency = val()?
                    .split(',')
                    .map(|c| c.trim().parse().map_err(|e| format!("--concurrency: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--deploy-config" => a.deploy = Some(val()?),
            "--stage-overrides" => {
                a.overrides = Some(
                    serde_json::from_str(&val()?).map_err(|e| format!("--stage-overrides: {e}"))?,
                )
            }
            "--bench" => {}
            f => return Err(format!("unknown flag {f}")),
        }
    }
    Ok(a)
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("calibrate: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "speed x{}, seed {}, 20 prompts per point, medians (TTFP scaled back to simulated time)\n",
        args.speed, args.seed
    );
    for task in &args.tasks {
        let mut opts = SimOptions::new(task.model())
            .speed(args.speed)
            .seed(args.seed);
        if let Some(d) = &args.deploy {
            opts = opts.deploy_config(d);
        }
        if let Some(o) = &args.overrides {
            opts = opts.stage_overrides(o.clone());
        }
        let points = sweep(*task, opts, &args.concurrency);
        println!("{}", table(*task, &points));
    }
}
