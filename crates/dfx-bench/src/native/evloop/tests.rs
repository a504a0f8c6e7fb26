//! The event loop against loopback servers scripted here, one thread per connection.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use dfx_core::plan::ConnectionMode::{self, Fresh, Pooled};
use dfx_core::plan::Saturation;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};

use super::stream::READ_BUF;
use super::{Engine, Outlet};
use crate::native::client::{Exchange, FailureClass, Limits, Target};
use crate::native::driver::{Job, Load};
use crate::native::record::{Dispatch, Sample};

/// A server running `script(connection index, socket)` per accepted connection; the
/// count of accepted connections.
pub(super) fn serve<F>(script: F) -> (String, Arc<AtomicUsize>)
where
    F: Fn(usize, TcpStream) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/audio/speech", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let script = Arc::new(script);
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(sock) = sock else { return };
            sock.set_nodelay(true).unwrap();
            let i = count.fetch_add(1, Ordering::SeqCst);
            let s = script.clone();
            std::thread::spawn(move || s(i, sock));
        }
    });
    (url, accepted)
}

/// Reads one request: its head (text) and body; `None` at end of file.
pub(super) fn read_request(sock: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        match sock.read(&mut tmp) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < end + len {
        match sock.read(&mut tmp) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
    Some((head, buf[end..end + len].to_vec()))
}

/// A server answering at most `per_connection` requests on each connection with `reply`,
/// then closing it.
fn replying(reply: &'static [u8], per_connection: usize) -> (String, Arc<AtomicUsize>) {
    serve(move |_, mut s| {
        for _ in 0..per_connection {
            if read_request(&mut s).is_none() || s.write_all(reply).is_err() {
                return;
            }
        }
    })
}

pub(super) const LIMITS: Limits = Limits {
    request_timeout: Duration::from_secs(10),
    read_timeout: Duration::from_secs(5),
    stall: crate::native::stall::StallRule::DEFAULT,
    max_body_bytes: 1 << 20,
};

fn target_with(url: &str, connection: ConnectionMode, limits: Limits) -> Arc<Target> {
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Arc::new(
        Target::new(url, h, limits, connection)
            .unwrap()
            .capturing(true),
    )
}

fn target(url: &str, connection: ConnectionMode) -> Arc<Target> {
    target_with(url, connection, LIMITS)
}

/// An event loop for `url` (capturing bodies).
pub(super) fn engine_with(url: &str, connection: ConnectionMode, limits: Limits) -> Engine {
    Engine::new(target_with(url, connection, limits), 24_000).unwrap()
}

fn engine(url: &str, connection: ConnectionMode) -> Engine {
    engine_with(url, connection, LIMITS)
}

/// A whole 200 response with a two-byte body.
const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

/// Keeps every ended request, in the order they ended.
#[derive(Default)]
pub(super) struct Kept(pub(super) Vec<(Dispatch, Exchange)>);

impl Outlet for Kept {
    fn ended(
        &mut self,
        d: Dispatch,
        _: Sample,
        x: Exchange,
        _: Instant,
        _: bool,
    ) -> Option<Instant> {
        self.0.push((d, x));
        None
    }
    fn flush(&mut self) {}
}

pub(super) fn job(id: &str) -> Job {
    Job {
        body: Bytes::from_static(b"{\"input\":\"hi\"}"),
        sample: Sample {
            request_id: Some(id.to_string()),
            sample_id: "s".into(),
            text_len: 2,
            quality: None,
        },
    }
}

/// Runs one request per id, one at a time, on `engine`; their exchanges in order.
fn run(engine: &mut Engine, ids: &[&str]) -> Vec<Exchange> {
    let mut kept = Kept::default();
    let jobs = ids.iter().map(|id| job(id)).collect();
    engine.run(
        jobs,
        Load::Closed {
            concurrency: std::num::NonZeroUsize::new(1).unwrap(),
        },
        false,
        &mut kept,
    );
    kept.0.into_iter().map(|(_, x)| x).collect()
}

/// One request on `engine`: status and body, or the failure's class and message.
fn get(engine: &mut Engine, id: &str) -> Result<(u16, Vec<u8>), (FailureClass, String)> {
    let mut x = run(engine, &[id]).pop().unwrap();
    match x.failure.take() {
        Some(f) => Err((f.class, f.message)),
        None => Ok((x.status.unwrap(), x.audio.take().unwrap())),
    }
}

const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
    4;ext=1\r\nabcd\r\n6\r\nefghij\r\n0\r\nx-trailer: yes\r\n\r\n";

#[test]
fn chunked_body_split_across_reads_at_every_boundary() {
    let (url, _) = serve(|i, mut s| {
        if read_request(&mut s).is_none() {
            return;
        }
        let (a, b) = CHUNKED.split_at(i % (CHUNKED.len() + 1));
        let _ = s.write_all(a);
        std::thread::sleep(Duration::from_millis(3));
        let _ = s.write_all(b);
    });
    let mut e = engine(&url, Fresh);
    for _ in 0..=CHUNKED.len() {
        let (status, data) = get(&mut e, "r").unwrap();
        assert_eq!((status, data.as_slice()), (200, &b"abcdefghij"[..]));
    }
}

#[test]
fn request_as_written_and_content_length_reuse() {
    let (url, accepted) = serve(|_, mut s| {
        while let Some((head, body)) = read_request(&mut s) {
            let reply = format!("{head}{}", String::from_utf8_lossy(&body));
            let h = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", reply.len());
            let _ = s.write_all(h.as_bytes());
            let _ = s.write_all(reply.as_bytes());
        }
    });
    let mut e = engine(&url, Pooled);
    let (status, echo) = get(&mut e, "id-1").unwrap();
    let echo = String::from_utf8(echo).unwrap();
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        echo,
        format!(
            "POST /v1/audio/speech HTTP/1.1\r\nhost: {authority}\r\n\
             content-type: application/json\r\naccept: */*\r\nx-request-id: id-1\r\n\
             content-length: 14\r\n\r\n{{\"input\":\"hi\"}}"
        )
    );
    assert_eq!(e.idle.len(), 1);
    let xs = run(&mut e, &["id-2", "id-3"]);
    assert!(
        xs.iter().all(|x| x.ok() && x.connect.is_none()),
        "both on the kept connection"
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "one kept-alive connection"
    );
}

#[test]
fn fresh_connections_and_connection_close_do_not_reuse() {
    let (url, accepted) = replying(OK, usize::MAX);
    let mut e = engine(&url, Fresh);
    let xs = run(&mut e, &["a", "b"]);
    assert!(
        xs.iter().all(|x| x.ok() && x.connect.is_some()),
        "a connect each"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    assert_eq!(e.idle.len(), 0);

    let close = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok";
    let (url, accepted) = replying(close, usize::MAX);
    let mut e = engine(&url, Pooled);
    assert!(run(&mut e, &["a", "b"]).iter().all(Exchange::ok));
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[test]
fn body_until_close_and_interim_heads() {
    let (url, accepted) = serve(|_, mut s| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\npart one ");
            std::thread::sleep(Duration::from_millis(3));
            let _ = s.write_all(b"part two");
        }
    });
    let mut e = engine(&url, Pooled);
    let x = run(&mut e, &["a"]).pop().unwrap();
    assert_eq!(x.audio.as_deref(), Some(&b"part one part two"[..]));
    assert_eq!(
        x.chunks.len(),
        2,
        "one timeline entry per read: {:?}",
        x.chunks
    );
    assert_eq!(x.bytes, 17);
    assert_eq!(e.idle.len(), 0, "a body ended by close ends its connection");
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[test]
fn server_closed_idle_connection_is_not_reused() {
    // Answers one request per connection, then closes it at once.
    let (url, accepted) = replying(OK, 1);
    let mut e = engine(&url, Pooled);
    get(&mut e, "a").unwrap();
    assert_eq!(e.idle.len(), 1);
    std::thread::sleep(Duration::from_millis(20));
    let x = run(&mut e, &["b"]).pop().unwrap();
    assert!(x.ok(), "{:?}", x.failure);
    assert!(x.connect.is_some(), "a new connection, not the closed one");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[test]
fn unanswered_request_is_sent_again_once_on_a_new_connection() {
    // The first connection answers one request, reads the second and closes unanswered.
    let (url, accepted) = serve(|i, mut s| {
        let mut served = 0;
        while read_request(&mut s).is_some() {
            if i == 0 && served == 1 {
                return;
            }
            served += 1;
            let _ = s.write_all(OK);
        }
    });
    let mut e = engine(&url, Pooled);
    // Both in one phase: the second goes out at once on the idle connection.
    let xs = run(&mut e, &["a", "b"]);
    assert!(xs[0].ok() && xs[1].ok(), "{:?}", xs[1].failure);
    assert!(xs[1].connect.is_some(), "the retry opened a connection");
    assert_eq!(xs[1].audio.as_deref(), Some(&b"ok"[..]));
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[test]
fn partly_answered_request_is_not_sent_again() {
    let (url, accepted) = serve(|_, mut s| {
        let mut served = 0;
        while read_request(&mut s).is_some() {
            if served == 1 {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\n");
                return;
            }
            served += 1;
            let _ = s.write_all(OK);
        }
    });
    let mut e = engine(&url, Pooled);
    let xs = run(&mut e, &["a", "b"]);
    let f = xs[1].failure.clone().unwrap();
    assert_eq!(f.class, FailureClass::Transport);
    assert!(
        f.message.contains("before the response head was complete"),
        "{}",
        f.message
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

/// A server that answers every request with `reply` and closes: the failure message.
fn fails_with(reply: &'static [u8]) -> String {
    let mut e = engine(&replying(reply, 1).0, Fresh);
    let (class, msg) = get(&mut e, "a").unwrap_err();
    assert_eq!(class, FailureClass::Transport, "{msg}");
    msg
}

#[test]
fn malformed_responses_are_transport_failures() {
    assert!(fails_with(b"HTTP/1.1 2x0 OK\r\n\r\n").starts_with("malformed response head"));
    assert!(fails_with(b"SPDY/3 200 OK\r\n\r\n").starts_with("malformed response head"));
    let bad_chunk = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nabcd\r\nq\r\n";
    assert_eq!(
        fails_with(bad_chunk),
        "malformed response body: invalid chunk size line"
    );
    let short = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc";
    assert_eq!(
        fails_with(short),
        "connection closed before the response body was complete"
    );
    assert!(fails_with(b"").starts_with("connection closed before any response byte"));
}

#[test]
fn oversize_head_is_an_error_not_an_allocation() {
    let (url, _) = serve(|_, mut s| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\n");
            let line = format!("x-filler: {}\r\n", "y".repeat(1000));
            for _ in 0..(2 * READ_BUF / line.len()) {
                if s.write_all(line.as_bytes()).is_err() {
                    return;
                }
            }
        }
    });
    let mut e = engine(&url, Fresh);
    let (_, msg) = get(&mut e, "a").unwrap_err();
    assert_eq!(msg, format!("response head larger than {READ_BUF} bytes"));
}

#[test]
fn refused_connection_and_bad_urls() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut e = engine(&format!("http://127.0.0.1:{port}/x"), Pooled);
    let (class, msg) = get(&mut e, "a").unwrap_err();
    assert_eq!(class, FailureClass::Transport);
    assert!(msg.starts_with("cannot connect to 127.0.0.1:"), "{msg}");
    let err = Target::new("https://127.0.0.1/x", HeaderMap::new(), LIMITS, Pooled)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("bad server URL"), "{err}");
}

#[test]
fn error_status_keeps_an_excerpt_of_its_body() {
    let reply =
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 21\r\n\r\n{\"error\":  \"busy\"}\n\n";
    let mut e = engine(&replying(reply, 1).0, Fresh);
    let (class, msg) = get(&mut e, "a").unwrap_err();
    assert_eq!(class, FailureClass::Http(503));
    assert_eq!(msg, "HTTP 503 Service Unavailable: {\"error\": \"busy\"}");
}

#[test]
fn a_stalled_body_and_a_silent_server_end_by_their_timeouts() {
    // Head and one piece of body, then nothing while the connection stays open.
    let (url, _) = serve(|_, mut s| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabcd");
            std::thread::sleep(Duration::from_secs(2));
        }
    });
    let quick = Limits {
        read_timeout: Duration::from_millis(200),
        ..LIMITS
    };
    let mut e = engine_with(&url, Fresh, quick);
    let (class, msg) = get(&mut e, "a").unwrap_err();
    assert_eq!(class, FailureClass::Stall);
    assert_eq!(
        msg,
        "stream stalled: no next body byte for 0.2 s (read timeout)"
    );
    // No answer at all, and a total timeout shorter than the read timeout.
    let (url, _) = serve(|_, mut s| {
        let _ = read_request(&mut s);
        std::thread::sleep(Duration::from_secs(2));
    });
    let total = Limits {
        request_timeout: Duration::from_millis(150),
        ..LIMITS
    };
    let mut e = engine_with(&url, Fresh, total);
    let started = Instant::now();
    let (class, msg) = get(&mut e, "a").unwrap_err();
    assert_eq!(class, FailureClass::Timeout);
    assert_eq!(
        msg,
        "request timed out after 0.1 s (total timeout) waiting for the response head"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "ended by the timeout, not the server"
    );
}

#[test]
fn a_body_over_the_cap_and_a_wav_body_fail_by_class() {
    let big = b"HTTP/1.1 200 OK\r\ncontent-length: 64\r\n\r\n0123456789012345678901234567890123456789012345678901234567890123";
    let small = Limits {
        max_body_bytes: 16,
        ..LIMITS
    };
    let mut e = engine_with(&replying(big, 1).0, Fresh, small);
    assert_eq!(get(&mut e, "a").unwrap_err().0, FailureClass::Oversize);
    let wav = b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\nRIFF\0\0\0\0WAVE";
    let mut e = engine(&replying(wav, 1).0, Fresh);
    assert_eq!(get(&mut e, "a").unwrap_err().0, FailureClass::NotPcm);
}

/// An open loop with a cap of one: with the gate, the arrivals finding the cap full are
/// refused; without it they wait in line for a slot and are all sent.
#[test]
fn open_loop_cap_waits_or_refuses() {
    let (url, _) = serve(|_, mut s| {
        while read_request(&mut s).is_some() {
            std::thread::sleep(Duration::from_millis(60));
            let _ = s.write_all(OK);
        }
    });
    let t = target(&url, Pooled);
    for (saturation, refused) in [(Saturation::Fail, true), (Saturation::Wait, false)] {
        let mut e = Engine::new(t.clone(), 24_000).unwrap();
        let load = Load::Open {
            offsets: vec![0.0, 0.01, 0.02, 0.2],
            cap: std::num::NonZeroUsize::new(1),
            saturation,
        };
        let mut kept = Kept::default();
        let jobs = ["a", "b", "c", "d"].iter().map(|id| job(id)).collect();
        let ran = e.run(jobs, load, false, &mut kept);
        assert_eq!(ran.peak_in_flight, 1);
        let mut got: Vec<(usize, bool)> = kept.0.iter().map(|(d, x)| (d.index, x.ok())).collect();
        got.sort();
        if refused {
            assert_eq!(got, [(0, true), (1, false), (2, false), (3, true)]);
            let (d, x) = kept.0.iter().find(|(d, _)| d.index == 1).unwrap();
            assert_eq!(
                (d.saturated, x.failure.as_ref().map(|f| f.class)),
                (Some(1), Some(FailureClass::Saturated))
            );
        } else {
            assert_eq!(got, [(0, true), (1, true), (2, true), (3, true)]);
            let (d, _) = kept.0.iter().find(|(d, _)| d.index == 2).unwrap();
            assert!(d.slot > d.dispatched, "the third waited for its slot");
        }
    }
}

/// A closed loop keeps its concurrency: 4 workers on a server that holds each request.
#[test]
fn closed_loop_keeps_its_workers_busy() {
    let (url, accepted) = replying(OK, usize::MAX);
    let mut e = engine(&url, Pooled);
    let mut kept = Kept::default();
    let jobs = (0..40).map(|i| job(&format!("r{i}"))).collect();
    let ran = e.run(
        jobs,
        Load::Closed {
            concurrency: std::num::NonZeroUsize::new(4).unwrap(),
        },
        false,
        &mut kept,
    );
    assert_eq!(kept.0.len(), 40);
    assert!(kept.0.iter().all(|(_, x)| x.ok()));
    assert!(ran.peak_in_flight <= 4 && ran.peak_in_flight >= 1);
    assert!(
        accepted.load(Ordering::SeqCst) <= 4,
        "pooled: at most one connection per worker"
    );
    let mut idx: Vec<usize> = kept.0.iter().map(|(d, _)| d.index).collect();
    idx.sort();
    assert_eq!(idx, (0..40).collect::<Vec<_>>());
}

/// A request body larger than the socket takes at once goes out over several writable
/// events, whole, while the server reads it slowly.
#[test]
fn a_large_request_body_is_written_whole_over_several_events() {
    const LEN: usize = 8 << 20;
    let (url, _) = serve(|_, mut s| {
        std::thread::sleep(Duration::from_millis(50));
        if let Some((_, body)) = read_request(&mut s) {
            let ok =
                body.len() == LEN && body.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8);
            let reply: &[u8] = if ok { b"ok" } else { b"no" };
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n");
            let _ = s.write_all(reply);
        }
    });
    let mut e = engine(&url, Fresh);
    let body: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
    let mut kept = Kept::default();
    let j = Job {
        body: Bytes::from(body),
        ..job("big")
    };
    e.run(
        vec![j],
        Load::Closed {
            concurrency: std::num::NonZeroUsize::new(1).unwrap(),
        },
        false,
        &mut kept,
    );
    let x = &kept.0[0].1;
    assert!(x.ok(), "{:?}", x.failure);
    assert_eq!(
        x.audio.as_deref(),
        Some(&b"ok"[..]),
        "the server got every byte in order"
    );
}
