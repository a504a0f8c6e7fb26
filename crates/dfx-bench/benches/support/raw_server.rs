//! A minimal HTTP/1.1 server for the client benchmark: keep-alive, `Content-Length`
//! requests, chunked raw-PCM responses with a fixed first-chunk delay. It does as little
//! as possible between reading a request and writing its chunks, so what the benchmark
//! measures on top of the scripted delay is mostly the client's own overhead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Delay between a request's arrival and its first chunk.
pub const FIRST_DELAY: Duration = Duration::from_millis(100);
const CHUNK_GAP: Duration = Duration::from_millis(50);
const CHUNK_BYTES: usize = 4800;

/// Server-side first-chunk delay by `x-request-id` (request read → first chunk written).
pub type Timings = Arc<Mutex<HashMap<String, f64>>>;

struct Request {
    head: String,
    body: Vec<u8>,
}

/// Reads one request from `buf` + the socket; `None` at end of stream.
async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Request> {
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = sock.read(&mut tmp).await.ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut tmp).await.ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = buf[head_end..head_end + len].to_vec();
    buf.drain(..head_end + len);
    Some(Request { head, body })
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
}

async fn connection(mut sock: TcpStream, timings: Timings) {
    let _ = sock.set_nodelay(true);
    let mut buf = Vec::new();
    let pcm = super::native_support::pcm(CHUNK_BYTES / 2, true, 0);
    while let Some(req) = read_request(&mut sock, &mut buf).await {
        let received = Instant::now();
        if req.head.starts_with("get /timings") {
            let body = serde_json::to_vec(&*timings.lock().unwrap()).unwrap_or_default();
            let h = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
            if sock
                .write_all(&[h.as_bytes(), &body].concat())
                .await
                .is_err()
            {
                return;
            }
            continue;
        }
        let id = header(&req.head, "x-request-id:").map(String::from);
        let text_len = serde_json::from_slice::<serde_json::Value>(&req.body)
            .ok()
            .and_then(|v| v["input"].as_str().map(str::len))
            .unwrap_or(0);
        let head =
            b"HTTP/1.1 200 OK\r\ncontent-type: audio/pcm\r\ntransfer-encoding: chunked\r\n\r\n";
        if sock.write_all(head).await.is_err() {
            return;
        }
        let mut chunk = format!("{:x}\r\n", pcm.len()).into_bytes();
        chunk.extend_from_slice(&pcm);
        chunk.extend_from_slice(b"\r\n");
        for i in 0..2 + text_len / 25 {
            tokio::time::sleep(if i == 0 { FIRST_DELAY } else { CHUNK_GAP }).await;
            if sock.write_all(&chunk).await.is_err() {
                return;
            }
            if let (0, Some(id)) = (i, &id) {
                let delay = received.elapsed().as_secs_f64();
                timings.lock().unwrap().insert(id.clone(), delay);
            }
        }
        if sock.write_all(b"0\r\n\r\n").await.is_err() {
            return;
        }
    }
}

/// Serves on an ephemeral loopback port (2 runtime threads), prints `http://addr`, and
/// returns when stdin closes.
pub fn serve() {
    use std::io::Read;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    println!("http://{}", listener.local_addr().unwrap());
    let timings: Timings = Arc::default();
    rt.spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(connection(sock, timings.clone()));
        }
    });
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
