//! Peak memory of one native-bench step against a zero-delay local server, to show how a
//! step's memory grows with `num_prompts` (`docs/guide/bad-input.md` ("While a run goes on") quotes it).
//!
//! `cargo run --release -p dfx-bench --example step_memory -- N [CONCURRENCY]` runs one
//! closed-loop step of N requests (default concurrency 64) and prints the process's peak
//! RSS (`VmHWM`) before and after, and the size of `records.jsonl`. Run it once per N in
//! separate processes (the peak is per process), e.g. N = 10000, 100000, 1000000.

#[path = "../tests/native_support/mod.rs"]
mod native_support;

use std::io::Write;
use std::time::Instant;

use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::StepKind;
use native_support::{TrialSpec, trial};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Peak resident set of this process, MiB.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Answers every request on a keep-alive connection with 0.1 s of 24 kHz PCM in one chunk.
async fn serve(listener: tokio::net::TcpListener) {
    const CHUNK: usize = 4800;
    let mut response = Vec::new();
    response.extend_from_slice(
        b"HTTP/1.1 200 OK\r\ncontent-type: audio/pcm\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    response.extend_from_slice(format!("{CHUNK:x}\r\n").as_bytes());
    response.extend(std::iter::repeat_n(1u8, CHUNK));
    response.extend_from_slice(b"\r\n0\r\n\r\n");
    let response: &'static [u8] = Box::leak(response.into_boxed_slice());
    while let Ok((mut sock, _)) = listener.accept().await {
        tokio::spawn(async move {
            let mut buf = Vec::with_capacity(8192);
            let mut tmp = [0u8; 8192];
            loop {
                // one request: headers, then Content-Length bytes of body
                let (head_end, len) = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (i + 4, len);
                    }
                    match sock.read(&mut tmp).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&tmp[..n]),
                    }
                };
                while buf.len() < head_end + len {
                    match sock.read(&mut tmp).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&tmp[..n]),
                    }
                }
                buf.drain(..head_end + len);
                if sock.write_all(response).await.is_err() {
                    return;
                }
            }
        });
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let c: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(64);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    rt.spawn(serve(listener));

    let ds = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../perf-configs/datasets/seed_tts_smoke");
    let t = trial(TrialSpec {
        dataset_path: ds.to_str().expect("utf-8 path"),
        kind: StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(c).unwrap(),
        },
        num_prompts: n,
        num_warmups: Some(0),
        extra_body: Some(serde_json::json!({"voice": "Vivian"})),
        ..TrialSpec::default()
    });
    let out = tempfile::tempdir().expect("temp dir");
    let ctx = BenchContext {
        trial: &t,
        base_url: format!("http://127.0.0.1:{port}"),
        host: "127.0.0.1".into(),
        port,
        out_dir: out.path().to_path_buf(),
        hardware: "na".into(),
        judge_url: None,
        server_group: None,
    };
    let settings = NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    };
    let before = peak_rss_mib();
    let started = Instant::now();
    let outcome = NativeBench::new(settings).run(&ctx);
    let seconds = started.elapsed().as_secs_f64();
    let after = peak_rss_mib();
    let doc = outcome.result.expect("a result");
    let records = std::fs::metadata(out.path().join("records.jsonl")).map_or(0, |m| m.len());
    let mut stdout = std::io::stdout();
    let _ = writeln!(
        stdout,
        "requests {n} at c={c}: completed {} in {seconds:.1} s; peak RSS {before:.1} MiB before, \
         {after:.1} MiB after (+{:.1} MiB, {:.0} bytes per request); records.jsonl {:.1} MiB",
        doc.get("completed").and_then(|v| v.as_u64()).unwrap_or(0),
        after - before,
        (after - before) * 1024.0 * 1024.0 / n as f64,
        records as f64 / 1024.0 / 1024.0
    );
}
