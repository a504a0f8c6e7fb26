//! Peak memory and send lag of one native chat-omni `random-mm` step with the shipped
//! Qwen3-Omni config's three-modality buckets (`(256, 256, 1)`, `(720, 1280, 2)`,
//! `(0, 60, 3)`: up to ~27 MB of base64 per request) against a local server that reads
//! and discards each body, then streams a short text answer after 0.5 s.
//!
//! `cargo run --release -p dfx-bench --example chat_mm_memory -- [N] [RATE]` (default
//! 100 prompts at 1 req/s, the config's step) prints the process's peak RSS (`VmHWM`),
//! the body sizes, and the send lag / body wait of the step.

#[path = "../tests/chat_support/mod.rs"]
mod chat_support;

use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::StepKind;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

async fn answer(sock: tokio::net::TcpStream) {
    let mut r = BufReader::new(sock);
    loop {
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let l = line.to_ascii_lowercase();
            if let Some(v) = l.strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut buf = vec![0u8; 1 << 16];
        while len > 0 {
            let n = r.read(&mut buf[..len.min(1 << 16)]).await.unwrap_or(0);
            if n == 0 {
                return;
            }
            len -= n;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let mut body = String::new();
        for (i, p) in chat_support::text_only_script().iter().enumerate() {
            let _ = i;
            body.push_str(&String::from_utf8_lossy(&p.1));
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        let s = r.get_mut();
        if s.write_all(head.as_bytes()).await.is_err()
            || s.write_all(body.as_bytes()).await.is_err()
        {
            return;
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let rate: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    rt.spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(answer(s));
        }
    });
    let raw = json!({
        "dataset_name": "random-mm", "random_input_len": 100, "random_output_len": 100,
        "random_range_ratio": 0.0, "ignore_eos": true, "num_warmups": 2,
        "random_mm_base_items_per_request": 3, "random_mm_num_mm_items_range_ratio": 0.5,
        "random_mm_limit_mm_per_prompt": {"image": 1, "video": 1, "audio": 1},
        "random_mm_bucket_config": {"(256, 256, 1)": 0.34, "(720, 1280, 2)": 0.33, "(0, 60, 3)": 0.33},
        "percentile-metrics": "ttft,tpot,itl,e2el,audio_rtf,audio_ttfp,audio_duration"
    });
    let t = chat_support::chat_trial(raw, StepKind::RequestRate { request_rate: rate }, n);
    let tmp = tempfile::tempdir().unwrap();
    let bench = NativeBench::new(NativeSettings {
        progress: false,
        auth_token_env: None,
        ..NativeSettings::default()
    });
    let before = peak_rss_mib();
    let out = bench.run(&BenchContext {
        trial: &t,
        base_url: format!("http://127.0.0.1:{port}"),
        host: "127.0.0.1".into(),
        port,
        out_dir: tmp.path().to_path_buf(),
        hardware: "SIM".into(),
        judge_url: None,
        server_group: None,
    });
    let doc = out.result.expect("result");
    let recs = chat_support::read_records(tmp.path());
    let sizes: Vec<f64> = recs
        .iter()
        .filter(|r| r["warmup"] == false)
        .map(|r| r["body_bytes"].as_f64().unwrap_or(0.0))
        .collect();
    let total: f64 = sizes.iter().sum();
    let max = sizes.iter().copied().fold(0.0, f64::max);
    println!(
        "{n} prompts at {rate} req/s: completed {}, failed {}",
        doc["completed"], doc["failed"]
    );
    println!(
        "bodies: total {:.0} MB, largest {:.1} MB, mean {:.1} MB",
        total / 1e6,
        max / 1e6,
        total / sizes.len().max(1) as f64 / 1e6
    );
    println!(
        "peak RSS: {before:.0} MiB before the step, {:.0} MiB after",
        peak_rss_mib()
    );
    println!(
        "send lag p99 {:.1} ms, max {:.1} ms; body wait max {:.1} ms; invalid load: {:?}",
        doc["generator_lag_p99_ms"].as_f64().unwrap_or(0.0),
        doc["generator_lag_max_ms"].as_f64().unwrap_or(0.0),
        doc["body_wait_max_ms"].as_f64().unwrap_or(0.0),
        out.invalid_load
    );
}
