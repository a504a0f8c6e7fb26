//! Connection semantics of the native bench, against a loopback server that counts the
//! TCP connections it accepts: fresh opens one per request (warmups included), pooled
//! reuses them; `--connection` (here `with_connection`, which sets the same
//! setting) wins over the entry's `connection` key, which wins over the default (fresh).
//! Speech, chat-omni and soak steps alike.

mod chat_support;
mod native_support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::{ConnectionMode, Dialect, StepKind, Trial};
use dfx_core::runner_keys::{RunnerKeys, SoakKeys};
use native_support::{TrialSpec, trial};
use serde_json::{Map, Value};

/// HTTP/1.1 keep-alive server on an ephemeral port: every request gets the same body
/// (4800 bytes of PCM, or a chat SSE stream) with a `Content-Length`; `accepted` counts
/// TCP connections. One thread per connection; a connection ends when the client closes
/// it.
struct Counting {
    url: String,
    accepted: Arc<AtomicUsize>,
}

fn serve_connection(mut sock: TcpStream, content_type: &str, body: &[u8]) {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    loop {
        let head_end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            match sock.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            match sock.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        }
        buf.drain(..head_end + len);
        let h = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if sock.write_all(h.as_bytes()).is_err() || sock.write_all(body).is_err() {
            return;
        }
    }
}

impl Counting {
    /// Answers every request with 4800 bytes of PCM (speech).
    fn start() -> Counting {
        Counting::serving("audio/pcm", vec![0u8; 4800])
    }

    /// Answers every request with a whole text-only chat stream.
    fn chat() -> Counting {
        let sse: Vec<u8> = chat_support::text_only_script()
            .into_iter()
            .flat_map(|(_, bytes)| bytes)
            .collect();
        Counting::serving("text/event-stream", sse)
    }

    fn serving(content_type: &'static str, body: Vec<u8>) -> Counting {
        let body: Arc<[u8]> = body.into();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            for sock in listener.incoming() {
                let Ok(sock) = sock else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let body = body.clone();
                std::thread::spawn(move || serve_connection(sock, content_type, &body));
            }
        });
        Counting { url, accepted }
    }
}

/// Runs trial `t` against `server` (`flag`: as `--connection`); the result, which
/// must have no failed request, and the output folder.
fn run(
    t: &Trial,
    server: &Counting,
    flag: Option<ConnectionMode>,
) -> (Map<String, Value>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let port = server.url.rsplit(':').next().unwrap().parse().unwrap();
    let ctx = BenchContext {
        trial: t,
        base_url: server.url.clone(),
        host: "127.0.0.1".into(),
        port,
        out_dir: dir.path().to_path_buf(),
        hardware: "na".into(),
        judge_url: None,
        server_group: None,
    };
    let settings = NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    };
    let mut bench = NativeBench::new(settings);
    if let Some(mode) = flag {
        bench = bench.with_connection(mode);
    }
    let outcome = bench.run(&ctx);
    let doc = outcome.result.expect("a result");
    assert_eq!(doc["failed"], 0, "{:?}", outcome.errors);
    (doc, dir)
}

const N: u64 = 6;
const WARMUPS: u32 = 2;

/// Runs one closed-loop step (c = 2, 6 requests, 2 warmups) and returns the connections
/// the server accepted and the result's `connection`.
fn step(entry_mode: Option<ConnectionMode>, flag: Option<ConnectionMode>) -> (usize, String) {
    let server = Counting::start();
    let ds =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../perf-configs/datasets/seed_tts_smoke");
    let mut t = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        kind: StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(2).unwrap(),
        },
        num_prompts: N,
        num_warmups: Some(WARMUPS),
        ..TrialSpec::default()
    });
    Arc::make_mut(&mut t.entry).connection = entry_mode;
    let (doc, dir) = run(&t, &server, flag);
    let log = std::fs::read_to_string(dir.path().join("bench.log")).unwrap();
    assert!(log.contains("connections: "), "{log}");
    (
        server.accepted.load(Ordering::SeqCst),
        doc["connection"].as_str().unwrap().to_string(),
    )
}

#[test]
fn fresh_opens_one_connection_per_request_and_pooled_reuses_them() {
    let (fresh, mode) = step(None, Some(ConnectionMode::Fresh));
    assert_eq!(mode, "fresh");
    assert_eq!(fresh, (N + u64::from(WARMUPS)) as usize, "one per request");
    let (pooled, mode) = step(None, Some(ConnectionMode::Pooled));
    assert_eq!(mode, "pooled");
    // The two warmups (sent together) open two; the measured requests reuse them. A
    // connection returned to the pool a moment late can make one more.
    assert!(
        pooled <= 4,
        "pooled opened {pooled} connections for 8 requests"
    );
}

#[test]
fn default_is_fresh_the_entry_key_chooses_and_the_flag_wins() {
    assert_eq!(step(None, None).1, "fresh");
    let (pooled, mode) = step(Some(ConnectionMode::Pooled), None);
    assert_eq!(mode, "pooled");
    assert!(pooled <= 4);
    let (fresh, mode) = step(Some(ConnectionMode::Pooled), Some(ConnectionMode::Fresh));
    assert_eq!(mode, "fresh");
    assert_eq!(fresh, (N + u64::from(WARMUPS)) as usize);
    assert_eq!(
        step(Some(ConnectionMode::Fresh), Some(ConnectionMode::Pooled)).1,
        "pooled"
    );
}

/// A chat-omni step (`random`, c = 2, 6 requests, 2 warmups) under `entry_mode` and the
/// flag: the connections the server accepted and the `connections:` line of `bench.log`.
fn chat_step(entry_mode: Option<ConnectionMode>, flag: Option<ConnectionMode>) -> (usize, String) {
    let server = Counting::chat();
    let raw = serde_json::json!({
        "dataset_name": "random",
        "random_input_len": 8,
        "random_output_len": 4,
        "num_warmups": WARMUPS,
    });
    let kind = StepKind::Concurrency {
        max_concurrency: std::num::NonZeroU32::new(2).unwrap(),
    };
    let mut t = chat_support::chat_trial(raw, kind, N);
    Arc::make_mut(&mut t.entry).connection = entry_mode;
    let (_doc, dir) = run(&t, &server, flag);
    let log = std::fs::read_to_string(dir.path().join("bench.log")).unwrap();
    let line = log
        .lines()
        .find(|l| l.starts_with("connections: "))
        .unwrap_or_else(|| panic!("no connections line: {log}"))
        .to_string();
    (server.accepted.load(Ordering::SeqCst), line)
}

/// Chat steps follow the same setting (before, they always pooled): fresh by default, as
/// vllm-omni's bench session (`force_close`), one connection per request.
#[test]
fn chat_steps_open_a_connection_per_request_unless_pooled() {
    let (fresh, line) = chat_step(None, None);
    assert!(line.starts_with("connections: fresh"), "{line}");
    assert_eq!(fresh, (N + u64::from(WARMUPS)) as usize, "one per request");
    let (pooled, line) = chat_step(Some(ConnectionMode::Pooled), None);
    assert!(line.starts_with("connections: pooled"), "{line}");
    assert!(
        pooled <= 4,
        "pooled opened {pooled} connections for 8 requests"
    );
    let (fresh, _) = chat_step(Some(ConnectionMode::Pooled), Some(ConnectionMode::Fresh));
    assert_eq!(fresh, (N + u64::from(WARMUPS)) as usize);
}

/// Runs a soak (stability entry, batches of 2, 2 warmups) for `seconds` with `mode`;
/// returns the connections the server accepted, the batches run and the requests sent.
fn soak(mode: ConnectionMode, seconds: f64) -> (usize, u64, u64) {
    let server = Counting::start();
    let mut t = trial(TrialSpec {
        kind: StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(2).unwrap(),
        },
        num_prompts: 2,
        num_warmups: Some(WARMUPS),
        ..TrialSpec::default()
    });
    let e = Arc::make_mut(&mut t.entry);
    e.dialect = Dialect::Stability;
    e.runner = RunnerKeys::Stability(SoakKeys {
        duration_s: seconds,
        words: (2, 4),
    });
    e.connection = Some(mode);
    let (doc, _dir) = run(&t, &server, None);
    let batches = doc["stability"]["batches_run"].as_u64().unwrap();
    let sent = doc["num_prompts"].as_u64().unwrap();
    (server.accepted.load(Ordering::SeqCst), batches, sent)
}

/// Every batch of a soak runs on the same event loop: pooled, the connections the warmups
/// opened carry every batch; fresh, each request has its own.
#[test]
fn a_pooled_soak_keeps_its_connections_across_batches() {
    let (pooled, batches, sent) = soak(ConnectionMode::Pooled, 0.2);
    assert!(batches >= 3, "only {batches} batch(es) in 0.2 s");
    assert_eq!(sent, 2 * batches);
    assert!(
        pooled <= 4,
        "pooled soak opened {pooled} connections for {batches} batches"
    );
    let (fresh, batches, sent) = soak(ConnectionMode::Fresh, 0.1);
    assert_eq!(sent, 2 * batches);
    assert_eq!(fresh as u64, sent + u64::from(WARMUPS), "one per request");
}
