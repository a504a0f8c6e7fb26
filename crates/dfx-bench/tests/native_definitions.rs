//! The definitions the native bench shares with `vllm bench serve --omni` 0.30
//! (`async_request_openai_audio_speech`), pinned against a raw scripted server that
//! controls every byte and pause:
//!
//! - the TTFP clock starts before the connection is made and the request written
//!   (vllm: `st = perf_counter()` before `session.post`), so a server slow to answer
//!   counts in full;
//! - it stops at the first non-empty piece of the decoded body (vllm: the first non-empty
//!   `iter_any()` chunk), not at the response head and not at the first whole sample or
//!   audible sample: a first piece of one byte is the first packet;
//! - `total_input_tokens` is the sum over the successful requests of
//!   `len(tokenizer.encode(text))`, special tokens included (vllm's `prompt_len` of the
//!   seed-tts datasets); failed requests count nothing.

mod native_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::Bench;
use native_support::*;
use serde_json::Value;

/// The scripted pause before the thing each case is about.
const PAUSE: Duration = Duration::from_millis(300);
/// Scheduling slack allowed on top of a scripted pause (two shared cores).
const SLACK: f64 = 0.2;

/// A raw HTTP/1.1 server: one thread per connection, `Connection: close` answers, the
/// request's `input` text choosing the timeline.
struct RawServer {
    base_url: String,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl RawServer {
    fn start() -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let accept = thread::spawn(move || {
            for conn in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(c) = conn {
                    thread::spawn(move || serve(c));
                }
            }
        });
        RawServer {
            base_url: format!("http://{addr}"),
            stop,
            accept: Some(accept),
        }
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.base_url.trim_start_matches("http://"));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request and answers it by its text's timeline.
fn serve(conn: TcpStream) {
    let mut r = BufReader::new(conn.try_clone().unwrap());
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; len];
    if r.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let text = body["input"].as_str().unwrap_or_default().to_string();
    let _ = answer(conn, &text);
}

fn chunk(w: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    write!(w, "{:x}\r\n", bytes.len())?;
    w.write_all(bytes)?;
    w.write_all(b"\r\n")?;
    w.flush()
}

/// The timelines: `HEAD_LATE` pauses before the response head, `BODY_LATE` between the
/// head and the body, `TINY_FIRST` sends one byte first and pauses before the rest;
/// `FAIL` answers 500.
fn answer(mut w: TcpStream, text: &str) -> std::io::Result<()> {
    w.set_nodelay(true)?;
    if text.contains("FAIL") {
        w.write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\nconnection: close\r\n\r\nfail")?;
        return Ok(());
    }
    if text.contains("HEAD_LATE") {
        thread::sleep(PAUSE);
    }
    w.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: audio/pcm\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
    )?;
    w.flush()?;
    let audio = vec![0x10u8; 4800];
    if text.contains("BODY_LATE") {
        thread::sleep(PAUSE);
    }
    if text.contains("TINY_FIRST") {
        chunk(&mut w, &audio[..1])?;
        thread::sleep(PAUSE);
        chunk(&mut w, &audio[1..])?;
    } else {
        chunk(&mut w, &audio)?;
    }
    w.write_all(b"0\r\n\r\n")?;
    w.flush()
}

/// A word-level `tokenizer.json` whose post-processor adds `<s>` before every sequence,
/// with the whitespace pre-tokenizer (`\w+|[^\w\s]+`), as `make_tokenizer.py` writes.
const TOKENIZER: &str = r#"{
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [{"id": 1, "content": "<s>", "single_word": false, "lstrip": false,
    "rstrip": false, "normalized": false, "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "Whitespace"},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
  "decoder": null,
  "model": {"type": "WordLevel", "vocab": {"<unk>": 0, "<s>": 1, "w": 2}, "unk_token": "<unk>"}
}"#;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn ttfp_clock_first_packet_and_input_tokens() {
    let server = RawServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    // Tokens (pre-tokens + <s>): 3 + 1, 4 + 1, 3 + 1, 2 + 1 (the failed one).
    text_dataset(
        &ds,
        &[
            "HEAD_LATE two words",
            "BODY_LATE, then more",
            "TINY_FIRST of all",
            "FAIL now",
        ],
    );
    let tok = tmp.path().join("tokenizer.json");
    std::fs::write(&tok, TOKENIZER).unwrap();
    let t = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        num_prompts: 4,
        kind: dfx_core::plan::StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(4).unwrap(),
        },
        ..TrialSpec::default()
    });
    let settings = NativeSettings {
        auth_token_env: None,
        progress: false,
        tokenizer: Some(tok),
        ..NativeSettings::default()
    };
    let out = tmp.path().join("out");
    let outcome = NativeBench::new(settings).run(&bench_ctx_url(&t, &server.base_url, &out));
    let doc = outcome.result.expect("a result");

    let records = measured_records(&out);
    let by = |word: &str| {
        records
            .iter()
            .find(|r| r["sample_id"] == format!("row{}", row_of(word)))
            .unwrap_or_else(|| panic!("no record for {word}"))
    };
    let pause = PAUSE.as_secs_f64();
    // The clock runs while the server sits on the request before its head…
    let head_late = f(&by("HEAD_LATE")["ttfp_s"]);
    assert!(
        (pause..pause + SLACK).contains(&head_late),
        "HEAD_LATE ttfp {head_late}"
    );
    // …and stops at the body, not at the head.
    let body_late = f(&by("BODY_LATE")["ttfp_s"]);
    assert!(
        (pause..pause + SLACK).contains(&body_late),
        "BODY_LATE ttfp {body_late}"
    );
    // One byte is the first packet: the clock does not wait for a whole sample.
    let tiny = f(&by("TINY_FIRST")["ttfp_s"]);
    assert!(
        tiny < pause,
        "TINY_FIRST ttfp {tiny}: the 1-byte piece is the first packet"
    );
    let tiny_e2el = f(&by("TINY_FIRST")["e2el_s"]);
    assert!(tiny_e2el >= pause, "TINY_FIRST e2el {tiny_e2el}");
    assert_eq!(by("FAIL")["ok"], false);

    assert_eq!(doc["completed"], 3, "{doc:?}");
    assert_eq!(
        doc["total_input_tokens"],
        4 + 5 + 4,
        "vllm's prompt_len, <s> included"
    );
    let dur = f(&doc["duration"]);
    let want = 13.0 / dur;
    let got = f(&doc["total_token_throughput"]) - f(&doc["output_throughput"]);
    assert!((got - want).abs() < 1e-6 * want, "{got} vs {want}");
}

/// The dataset row (`row<i>`) of the text containing `word`.
fn row_of(word: &str) -> usize {
    ["HEAD_LATE", "BODY_LATE", "TINY_FIRST", "FAIL"]
        .iter()
        .position(|w| *w == word)
        .unwrap()
}

/// Without a tokenizer the count is 0, as before (and bench.log says why).
#[test]
fn no_tokenizer_no_input_tokens() {
    let server = RawServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    text_dataset(&ds, &["BODY_LATE a b c"]);
    let t = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        num_prompts: 1,
        ..TrialSpec::default()
    });
    let settings = NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    };
    let out = tmp.path().join("out");
    let outcome = NativeBench::new(settings).run(&bench_ctx_url(&t, &server.base_url, &out));
    let doc = outcome.result.expect("a result");
    assert_eq!(doc["total_input_tokens"], 0);
    let log = std::fs::read_to_string(out.join("bench.log")).unwrap();
    assert!(log.contains("token counts need a tokenizer"), "{log}");
}

/// The bench context of `trial` against the loopback `base_url`, writing into `out`.
fn bench_ctx_url<'a>(
    trial: &'a dfx_core::plan::Trial,
    base_url: &str,
    out: &std::path::Path,
) -> dfx_core::bench::BenchContext<'a> {
    let port = base_url.rsplit_once(':').unwrap().1.parse().unwrap();
    sim_context(trial, base_url.to_string(), port, out)
}
