//! Limits benchmark (`docs/simulator.md` ("Limits")): N concurrent streams (default 1024)
//! against a simulator process; reports whether the simulator kept up with its own
//! schedule (its emission lag from `/sim/stats`), its peak RSS and CPU time, and what the
//! clients got.
//!
//! `cargo run --release -p dfx-sim --example limits -- [--streams N] [--speed K]
//!  [--wide] [--model M]`
//!
//! `--wide` raises both stages' `max_num_seqs` to the stream count so that every stream
//! is generated and decoded at once (the heaviest emission load); without it the stock
//! profile queues most requests. The server is this executable re-run with `--server`.

use std::ffi::OsString;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

const TEXTS: &[&str] = &[
    "The library will be closed on Monday for maintenance.",
    "Could you tell me the way to the nearest post office?",
    "It was the best of times, it was the worst of times.",
    "I would like a cup of coffee with milk and no sugar, please.",
];

struct Args {
    streams: usize,
    speed: f64,
    wide: bool,
    model: String,
}

fn parse() -> Args {
    let mut a = Args {
        streams: 1024,
        speed: 1.0,
        wide: false,
        model: "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(f) = it.next() {
        match f.as_str() {
            "--streams" => a.streams = it.next().and_then(|v| v.parse().ok()).expect("--streams N"),
            "--speed" => a.speed = it.next().and_then(|v| v.parse().ok()).expect("--speed K"),
            "--wide" => a.wide = true,
            "--model" => a.model = it.next().expect("--model M"),
            "--bench" => {}
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

fn proc_status(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// User + system CPU seconds of `pid`.
fn cpu_secs(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn main() {
    let argv: Vec<OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == "--server") {
        let mut server_argv = vec![OsString::from("dfx-perf-sim")];
        server_argv.extend(argv.into_iter().skip(2));
        std::process::exit(i32::from(dfx_sim::run_from_args(server_argv)));
    }
    let a = parse();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--server",
        "serve",
        &a.model,
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
    ])
    .args(["--sim-speed", &a.speed.to_string(), "--sim-log", "warn"])
    .stdin(Stdio::null());
    if a.wide {
        let n = a.streams.to_string();
        cmd.args([
            "--stage-overrides",
            &json!({"0": {"max_num_seqs": a.streams}, "1": {"max_num_seqs": a.streams}})
                .to_string(),
        ]);
        let _ = n;
    }
    let mut server = cmd.spawn().expect("start server");
    let pid = server.id();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let report = rt.block_on(drive(&base, &a, pid));
    let _ = Command::new("kill").arg(pid.to_string()).status();
    let _ = server.wait();
    println!("{report}");
}

async fn drive(base: &str, a: &Args, pid: u32) -> String {
    let c = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(a.streams)
        .build()
        .unwrap();
    let start = Instant::now();
    while c
        .get(format!("{base}/health"))
        .send()
        .await
        .map(|r| r.status() != 200)
        .unwrap_or(true)
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "server not ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rss_idle = proc_status(pid, "VmRSS:").unwrap_or(0);
    let cpu0 = cpu_secs(pid).unwrap_or(0.0);
    let bytes = Arc::new(AtomicU64::new(0));
    let peak_rss = Arc::new(AtomicU64::new(0));
    let sampler = {
        let peak = peak_rss.clone();
        tokio::spawn(async move {
            loop {
                if let Some(r) = proc_status(pid, "VmRSS:") {
                    peak.fetch_max(r, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..a.streams {
        let (c, bytes) = (c.clone(), bytes.clone());
        let url = format!("{base}/v1/audio/speech");
        let body = json!({"input": TEXTS[i % TEXTS.len()], "voice": "vivian", "stream_format": "audio", "response_format": "pcm", "seed": i});
        tasks.push(tokio::spawn(async move {
            let r = c.post(url).json(&body).send().await.ok()?;
            let expect: u64 = r
                .headers()
                .get("x-dfx-sim-audio-frames")?
                .to_str()
                .ok()?
                .parse()
                .ok()?;
            let mut s = r.bytes_stream();
            let mut got = 0u64;
            let mut first = None;
            while let Some(Ok(b)) = s.next().await {
                first.get_or_insert(t0.elapsed());
                got += b.len() as u64;
                bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
            }
            Some((got == expect * 3840, first?))
        }));
    }
    let mut complete = 0;
    let mut firsts = Vec::new();
    for t in tasks {
        if let Ok(Some((ok, first))) = t.await {
            complete += usize::from(ok);
            firsts.push(first.as_secs_f64());
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    sampler.abort();
    let stats: Value = c
        .get(format!("{base}/sim/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let cpu = cpu_secs(pid).unwrap_or(0.0) - cpu0;
    firsts.sort_by(f64::total_cmp);
    let lag = &stats["lag_ms"];
    format!(
        "streams {n} (model {m}, speed x{sp}, {mode}): {complete}/{n} complete with the promised byte count\n\
         wall {wall:.1} s, PCM {mb:.1} MB ({mbps:.1} MB/s), server CPU {cpu:.1} s ({util:.0} % of one core)\n\
         server lag behind its own schedule: mean {lm} ms, p50 {l50} ms, p99 {l99} ms, max {lmax} ms over {lc} chunks\n\
         server RSS: idle {ri:.1} MiB, peak {rp:.1} MiB; peak in flight {pi}\n\
         first byte (wall): first {f0:.2} s, median {f50:.2} s, last {f100:.2} s",
        n = a.streams,
        m = a.model,
        sp = a.speed,
        mode = if a.wide {
            "both stages max_num_seqs = streams"
        } else {
            "stock profile"
        },
        mb = bytes.load(Ordering::Relaxed) as f64 / 1e6,
        mbps = bytes.load(Ordering::Relaxed) as f64 / 1e6 / wall,
        util = cpu / wall * 100.0,
        lm = lag["mean"],
        l50 = lag["p50"],
        l99 = lag["p99"],
        lmax = lag["max"],
        lc = lag["count"],
        ri = rss_idle as f64 / 1024.0,
        rp = peak_rss.load(Ordering::Relaxed) as f64 / 1024.0,
        pi = stats["peak_inflight"],
        f0 = firsts.first().copied().unwrap_or(0.0),
        f50 = firsts.get(firsts.len() / 2).copied().unwrap_or(0.0),
        f100 = firsts.last().copied().unwrap_or(0.0),
    )
}
