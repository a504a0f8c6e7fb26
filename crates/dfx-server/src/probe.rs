//! Loopback probes: a minimal blocking HTTP/1.1 `GET` for readiness, "does anything answer
//! on this port", and free-port selection. Kept on std so the crate stays light.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Attempts at finding a free port before giving up.
const PORT_ATTEMPTS: usize = 32;
/// The most bytes of a probe's response read.
const MAX_RESPONSE: usize = 64 * 1024;

/// What one readiness probe saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// An HTTP status code.
    Status(u16),
    /// Nothing accepted the connection, or it broke off (with the reason).
    Down(String),
}

fn addr(host: &str, port: u16) -> std::io::Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("{host} resolves to no address")))
}

/// `GET path` on `host:port`; returns the status code once the whole response arrived
/// (the server closes the connection, or the body reaches its `content-length`, or the
/// last chunk). `timeout` bounds the whole exchange, so a response that trickles in fails.
pub fn http_get(host: &str, port: u16, path: &str, timeout: Duration) -> Probe {
    match try_get(host, port, path, timeout) {
        Ok(code) => Probe::Status(code),
        Err(e) => Probe::Down(e.to_string()),
    }
}

fn try_get(host: &str, port: u16, path: &str, timeout: Duration) -> std::io::Result<u16> {
    let all = get_response(host, port, path, timeout, MAX_RESPONSE)?;
    parse_status(&all).ok_or_else(|| {
        let shown = String::from_utf8_lossy(&all[..all.len().min(80)]).into_owned();
        std::io::Error::other(format!("not an HTTP response: {shown:?}"))
    })
}

/// Sends `GET path` and reads the response until it is whole (see [`complete`]), the
/// server closes, or `max_bytes` arrived; `timeout` bounds the whole exchange.
fn get_response(
    host: &str,
    port: u16,
    path: &str,
    timeout: Duration,
    max_bytes: usize,
) -> std::io::Result<Vec<u8>> {
    let deadline = Instant::now() + timeout;
    let mut stream = TcpStream::connect_timeout(&addr(host, port)?, timeout)?;
    stream.set_write_timeout(Some(timeout))?;
    let host_header = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: dfx-perf\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    )?;
    let mut all = Vec::with_capacity(256);
    let mut buf = [0u8; 4096];
    let incomplete = |got: usize| {
        let why = format!(
            "the response was not complete within {:.1} s ({got} bytes arrived)",
            timeout.as_secs_f64()
        );
        std::io::Error::new(std::io::ErrorKind::TimedOut, why)
    };
    while !complete(&all) && all.len() <= max_bytes {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(incomplete(all.len()));
        }
        stream.set_read_timeout(Some(left))?;
        let n = match stream.read(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(incomplete(all.len()));
            }
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        all.extend_from_slice(&buf[..n]);
    }
    Ok(all)
}

/// Whether `all` holds a whole response: its head and a body of `content-length` bytes,
/// or ended by the last chunk. (Otherwise it ends when the server closes.)
fn complete(all: &[u8]) -> bool {
    let Some(split) = all.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&all[..split]).to_ascii_lowercase();
    let body = &all[split + 4..];
    if head.contains("transfer-encoding: chunked") {
        return body.ends_with(b"0\r\n\r\n");
    }
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .is_some_and(|len| body.len() >= len)
}

/// `GET path` on `host:port` and the body of a 200 answer parsed as JSON; `None` on any
/// failure. `timeout` bounds the whole exchange and `max_bytes` the whole response
/// (chunked bodies are not decoded and give `None`).
pub fn http_get_json(
    host: &str,
    port: u16,
    path: &str,
    timeout: Duration,
    max_bytes: usize,
) -> Option<serde_json::Value> {
    let all = get_response(host, port, path, timeout, max_bytes).ok()?;
    if all.len() > max_bytes || parse_status(&all) != Some(200) {
        return None;
    }
    let split = all.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&all[..split]).to_ascii_lowercase();
    if head.contains("transfer-encoding: chunked") {
        return None;
    }
    serde_json::from_slice(&all[split + 4..]).ok()
}

/// `HTTP/1.x NNN …` → NNN.
fn parse_status(head: &[u8]) -> Option<u16> {
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split_whitespace();
    parts.next().filter(|v| v.starts_with("HTTP/"))?;
    parts.next()?.parse().ok()
}

/// Whether something accepts TCP connections on `host:port`.
pub fn answers(host: &str, port: u16, timeout: Duration) -> bool {
    addr(host, port)
        .and_then(|a| TcpStream::connect_timeout(&a, timeout))
        .is_ok()
}

/// A port on 127.0.0.1 that nothing listens on: bind port 0, release it, re-check it can
/// be bound again and that nothing answers there; retried on collision.
pub fn free_port() -> std::io::Result<u16> {
    let mut last = None;
    for _ in 0..PORT_ATTEMPTS {
        let port = TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port();
        let rebind = TcpListener::bind(("127.0.0.1", port));
        match rebind {
            Ok(l) => {
                drop(l);
                if !answers("127.0.0.1", port, Duration::from_millis(200)) {
                    return Ok(port);
                }
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free port found on 127.0.0.1")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_line_parsing() {
        assert_eq!(parse_status(b"HTTP/1.1 200 OK\r\n"), Some(200));
        assert_eq!(parse_status(b"HTTP/1.0 404 Not Found\r\nx"), Some(404));
        assert_eq!(parse_status(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(parse_status(b""), None);
    }

    #[test]
    fn free_port_is_free_and_taken_port_answers() {
        let port = free_port().unwrap();
        assert!(!answers("127.0.0.1", port, Duration::from_millis(200)));
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let taken = l.local_addr().unwrap().port();
        assert!(answers("127.0.0.1", taken, Duration::from_millis(500)));
        assert!(matches!(
            http_get("127.0.0.1", port, "/health", Duration::from_millis(200)),
            Probe::Down(_)
        ));
    }

    #[test]
    fn a_trickling_response_fails_within_the_timeout() {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let _ = s.read(&mut [0u8; 1024]);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n");
            while s.write_all(b"x").is_ok() {
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let started = Instant::now();
        let got = http_get("127.0.0.1", port, "/health", Duration::from_millis(700));
        let Probe::Down(why) = got else {
            panic!("a trickle passed: {got:?}")
        };
        assert!(why.contains("not complete within 0.7 s"), "{why}");
        assert!(started.elapsed() < Duration::from_secs(10));
        server.join().unwrap();
    }
}
