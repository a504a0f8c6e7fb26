//! Loopback probes: a minimal blocking HTTP/1.1 `GET` for readiness, "does anything answer
//! on this port", and free-port selection. Kept on std so the crate stays light.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Attempts at finding a free port before giving up.
const PORT_ATTEMPTS: usize = 32;
/// The status line must fit in this many bytes.
const MAX_HEAD: usize = 4096;

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

/// `GET path` on `host:port`; returns the status code. Every step is bounded by `timeout`.
pub fn http_get(host: &str, port: u16, path: &str, timeout: Duration) -> Probe {
    match try_get(host, port, path, timeout) {
        Ok(code) => Probe::Status(code),
        Err(e) => Probe::Down(e.to_string()),
    }
}

fn try_get(host: &str, port: u16, path: &str, timeout: Duration) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect_timeout(&addr(host, port)?, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
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
    let mut head = Vec::with_capacity(256);
    let mut buf = [0u8; 256];
    while !head.windows(2).any(|w| w == b"\r\n") && head.len() < MAX_HEAD {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    parse_status(&head).ok_or_else(|| {
        let shown = String::from_utf8_lossy(&head[..head.len().min(80)]).into_owned();
        std::io::Error::other(format!("not an HTTP response: {shown:?}"))
    })
}

/// `GET path` on `host:port` and the body of a 200 answer parsed as JSON; `None` on any
/// failure. Bounded by `timeout` per step and by `max_bytes` for the whole response (the
/// request says `Connection: close`, so the body ends with the stream; chunked bodies are
/// not decoded and give `None`).
pub fn http_get_json(
    host: &str,
    port: u16,
    path: &str,
    timeout: Duration,
    max_bytes: usize,
) -> Option<serde_json::Value> {
    let mut stream = TcpStream::connect_timeout(&addr(host, port).ok()?, timeout).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    stream.set_write_timeout(Some(timeout)).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: dfx-perf\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut all = Vec::new();
    stream
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut all)
        .ok()?;
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
}
