//! The floor of the peer benchmark: the least a client can do and still measure TTFP the
//! way the native bench does. One thread, blocking `std::net` sockets, one `read` per
//! arrival, a timestamp per read kept in memory, one record line per request written at
//! the end; no runtime, no PCM analysis, no statistics. Closed loop at one stream only.
//! Its marginal CPU per request is what reading the chunks of one request costs on the
//! machine, a bound under any client's figure (`docs/benchmarks-history.md`, "The floor").
//!
//! `--run-floor DIR BASE_URL N WARMUPS pooled|fresh` writes `DIR/records.jsonl`
//! (`request_id`, `ttfp_s`, `ok`, `warmup`), `DIR/result.json` (`{"failed": n}`) and
//! `DIR/vm_hwm_kib`, like `--run-native`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The longest one read may block (the raw server's chunks are 50 ms apart).
const READ_LIMIT: Duration = Duration::from_secs(30);
/// The most reads one request may take before it is counted failed (a bound on the loop).
const MAX_READS: usize = 100_000;

/// One request's outcome.
pub(crate) struct Done {
    pub(crate) id: String,
    pub(crate) ttfp_s: Option<f64>,
    pub(crate) warmup: bool,
    /// Open loop: actual send − planned send.
    pub(crate) lag_s: Option<f64>,
}

/// The child side: runs `WARMUPS + N` requests one after another and writes the records.
pub(crate) fn run_floor_child(args: &[String], dataset: &Path, vm_hwm_kib: fn() -> u64) {
    let [dir, base, n, warmups, conn] = args else {
        panic!("--run-floor DIR BASE_URL N WARMUPS pooled|fresh");
    };
    let dir = PathBuf::from(dir);
    let addr = base.trim_start_matches("http://").to_string();
    let n: usize = n.parse().unwrap();
    let warmups: usize = warmups.parse().unwrap();
    let fresh = conn == "fresh";
    let texts = texts(dataset);
    let mut conn: Option<TcpStream> = None;
    let mut buf = vec![0u8; 32 * 1024];
    // The per-read timeline the native bench also keeps (seconds since send, bytes).
    let mut reads: Vec<(f64, usize)> = Vec::with_capacity((n + warmups) * 8);
    let mut done = Vec::with_capacity(n + warmups);
    for i in 0..n + warmups {
        let id = request_id(i);
        let req = request(&addr, &id, &texts[i % texts.len()]);
        if fresh {
            conn = None;
        }
        let ttfp_s = one_request(&addr, &mut conn, req.as_bytes(), &mut buf, &mut reads);
        if ttfp_s.is_none() {
            conn = None;
        }
        done.push(Done {
            id,
            ttfp_s,
            warmup: i < warmups,
            lag_s: None,
        });
    }
    write_out(&dir, &done, vm_hwm_kib());
}

/// The `x-request-id` of request `i` of this process.
pub(crate) fn request_id(i: usize) -> String {
    format!("floor-{}-{i}", std::process::id())
}

/// The whole request for `text`, as the native client sends it.
pub(crate) fn request(addr: &str, id: &str, text: &str) -> String {
    let body = serde_json::json!({
        "model": "m", "input": text, "stream": true, "response_format": "pcm",
    })
    .to_string();
    format!(
        "POST /v1/audio/speech HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         x-request-id: {id}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// The dataset's texts (the last `|` field of each line of `meta.lst`).
pub(crate) fn texts(dataset: &Path) -> Vec<String> {
    let meta = std::fs::read_to_string(dataset.join("meta.lst")).unwrap();
    let texts: Vec<String> = meta
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.rsplit('|').next().unwrap().to_string())
        .collect();
    assert!(!texts.is_empty(), "no texts in {}", dataset.display());
    texts
}

/// Sends one request on `conn` (connecting first when there is none) and reads its
/// chunked body to the end; the TTFP (send → first read with body bytes), or `None` on
/// any error.
fn one_request(
    addr: &str,
    conn: &mut Option<TcpStream>,
    req: &[u8],
    buf: &mut [u8],
    reads: &mut Vec<(f64, usize)>,
) -> Option<f64> {
    let sent = Instant::now();
    if conn.is_none() {
        let s = TcpStream::connect(addr).ok()?;
        s.set_nodelay(true).ok()?;
        s.set_read_timeout(Some(READ_LIMIT)).ok()?;
        *conn = Some(s);
    }
    let s = conn.as_mut()?;
    s.write_all(req).ok()?;
    let mut scan = Scan::default();
    for _ in 0..MAX_READS {
        let k = s.read(buf).ok()?;
        if k == 0 {
            return None;
        }
        let t = sent.elapsed().as_secs_f64();
        reads.push((t, k));
        if scan.read(&buf[..k], t) {
            return scan.ttfp;
        }
    }
    None
}

/// One response as its reads arrive: the end of its head, its first body byte and the
/// end of its chunked body (the raw server's `0\r\n\r\n`).
#[derive(Default)]
pub(crate) struct Scan {
    head_done: bool,
    /// The bytes after the head not yet known to be needed, at most the last 16.
    tail: Vec<u8>,
    /// Seconds from send to the first read that carried body bytes.
    pub(crate) ttfp: Option<f64>,
}

impl Scan {
    /// Takes one read, `t` seconds after the send; `true` when the body ended with it.
    pub(crate) fn read(&mut self, data: &[u8], t: f64) -> bool {
        self.tail.extend_from_slice(data);
        if !self.head_done {
            // The head and the first chunk may arrive in one read or apart.
            match find(&self.tail, b"\r\n\r\n") {
                Some(end) => {
                    self.head_done = true;
                    self.tail.drain(..end + 4);
                }
                None => return false,
            }
        }
        if self.ttfp.is_none() && !self.tail.is_empty() && !self.tail.starts_with(b"0\r\n") {
            self.ttfp = Some(t);
        }
        if self.tail.ends_with(b"\r\n0\r\n\r\n") || self.tail == b"0\r\n\r\n" {
            return true;
        }
        if self.tail.len() > 16 {
            self.tail.drain(..self.tail.len() - 16);
        }
        false
    }
}

pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

pub(crate) fn write_out(dir: &Path, done: &[Done], hwm_kib: u64) {
    let mut lines = String::new();
    for d in done {
        let rec = serde_json::json!({
            "request_id": d.id, "ttfp_s": d.ttfp_s, "ok": d.ttfp_s.is_some(),
            "warmup": d.warmup, "lag_s": d.lag_s,
        });
        lines.push_str(&rec.to_string());
        lines.push('\n');
    }
    let failed = done
        .iter()
        .filter(|d| !d.warmup && d.ttfp_s.is_none())
        .count();
    std::fs::write(dir.join("records.jsonl"), lines).unwrap();
    let result = serde_json::json!({ "failed": failed });
    std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    std::fs::write(dir.join("vm_hwm_kib"), hwm_kib.to_string()).unwrap();
}
