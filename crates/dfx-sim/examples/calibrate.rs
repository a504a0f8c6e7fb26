//! Prints the calibration table of the simulator against SIM.md's H20 targets.
//!
//! `cargo run --release -p dfx-sim --example calibrate -- [--speed K] [--task vc|vd|all]
//!  [--concurrency 1,4,8,32] [--deploy-config PATH] [--stage-overrides JSON] [--seed N]`
//!
//! The simulator runs in this process on its own runtime (2 worker threads); the client
//! runs on another. TTFP is scaled back by the speed factor; RTF needs no scaling.

#[path = "../tests/common/mod.rs"]
mod common;

use common::calibration::{Task, measure, rel};
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
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "speed x{}, seed {}, 20 prompts per point, medians; target in brackets",
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
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let h = dfx_sim::spawn(opts).await.expect("start simulator");
                url_tx.send(h.base_url()).expect("send url");
                let _ = stop_rx.await;
                h.shutdown().await.expect("shutdown");
            });
        });
        let url = url_rx.recv().expect("simulator url");
        println!("\n{}", task.name());
        println!("| c | RTF | TTFP ms | audio-s/s | failures |");
        println!("|---|---|---|---|---|");
        for &c in &args.concurrency {
            let p = client_rt.block_on(measure(&url, *task, c, args.speed));
            let target = task.targets().into_iter().find(|t| t.0 == c);
            let (rt_s, tt_s) = match target {
                Some((_, r, t)) => (
                    format!(" [{r}, {:+.0}%]", rel(p.median_rtf, r) * 100.0),
                    format!(" [{t}, {:+.0}%]", rel(p.median_ttfp_ms, t) * 100.0),
                ),
                None => (String::new(), String::new()),
            };
            println!(
                "| {c} | {:.3}{rt_s} | {:.0}{tt_s} | {:.1} | {} |",
                p.median_rtf, p.median_ttfp_ms, p.audio_throughput, p.failures
            );
        }
        let _ = stop_tx.send(());
        server.join().expect("server thread");
    }
}
