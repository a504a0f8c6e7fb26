//! The client against loopback servers scripted here, one thread per connection.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};

use super::body::BodyError;
use super::conn::READ_BUF;
use super::{Client, Error, Response};

/// A server running `script(connection index, socket)` per accepted connection; the
/// count of accepted connections.
fn serve<F>(script: F) -> (String, Arc<AtomicUsize>)
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
fn read_request(sock: &mut TcpStream) -> Option<(String, Vec<u8>)> {
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

fn client(url: &str, reuse: bool) -> Client {
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Client::new(url, &h, reuse).unwrap()
}

/// Reads a whole body, returns the connection to the pool, and gives the data.
async fn body(c: &Client, mut r: Response) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    loop {
        while let Some(d) = r.next_data()? {
            out.extend_from_slice(d);
        }
        if r.is_done() {
            break;
        }
        r.fill().await?;
    }
    c.recycle(r);
    Ok(out)
}

async fn get(c: &Client, id: &str) -> Result<(u16, Vec<u8>), Error> {
    let sent = c.send(Some(id), b"{\"input\":\"hi\"}").await?;
    let status = sent.response.status();
    Ok((status, body(c, sent.response).await?))
}

const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
    4;ext=1\r\nabcd\r\n6\r\nefghij\r\n0\r\nx-trailer: yes\r\n\r\n";

#[tokio::test]
async fn chunked_body_split_across_reads_at_every_boundary() {
    let (url, _) = serve(|i, mut s| {
        if read_request(&mut s).is_none() {
            return;
        }
        let (a, b) = CHUNKED.split_at(i % (CHUNKED.len() + 1));
        let _ = s.write_all(a);
        std::thread::sleep(Duration::from_millis(3));
        let _ = s.write_all(b);
    });
    let c = client(&url, false);
    for _ in 0..=CHUNKED.len() {
        let (status, data) = get(&c, "r").await.unwrap();
        assert_eq!((status, data.as_slice()), (200, &b"abcdefghij"[..]));
    }
}

#[tokio::test]
async fn request_as_written_and_content_length_reuse() {
    let (url, accepted) = serve(|_, mut s| {
        while let Some((head, body)) = read_request(&mut s) {
            let reply = format!("{head}{}", String::from_utf8_lossy(&body));
            let h = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", reply.len());
            let _ = s.write_all(h.as_bytes());
            let _ = s.write_all(reply.as_bytes());
        }
    });
    let c = client(&url, true);
    let (status, echo) = get(&c, "id-1").await.unwrap();
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
    assert_eq!(c.idle_count(), 1);
    get(&c, "id-2").await.unwrap();
    get(&c, "id-3").await.unwrap();
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "one kept-alive connection"
    );
}

#[tokio::test]
async fn fresh_clients_and_connection_close_do_not_reuse() {
    let (url, accepted) = replying(
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
        usize::MAX,
    );
    let c = client(&url, false);
    get(&c, "a").await.unwrap();
    get(&c, "b").await.unwrap();
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    assert_eq!(c.idle_count(), 0);

    let close = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok";
    let (url, accepted) = replying(close, usize::MAX);
    let c = client(&url, true);
    get(&c, "a").await.unwrap();
    get(&c, "b").await.unwrap();
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn body_until_close_and_interim_heads() {
    let (url, accepted) = serve(|_, mut s| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\npart one ");
            std::thread::sleep(Duration::from_millis(3));
            let _ = s.write_all(b"part two");
        }
    });
    let c = client(&url, true);
    let (status, data) = get(&c, "a").await.unwrap();
    assert_eq!((status, data.as_slice()), (200, &b"part one part two"[..]));
    assert_eq!(
        c.idle_count(),
        0,
        "a body ended by close ends its connection"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn server_closed_idle_connection_is_not_reused() {
    // Answers one request per connection, then closes it at once.
    let (url, accepted) = replying(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", 1);
    let c = client(&url, true);
    get(&c, "a").await.unwrap();
    assert_eq!(c.idle_count(), 1);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (status, _) = get(&c, "b").await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn unanswered_request_is_sent_again_once_on_a_new_connection() {
    // The first connection answers one request, reads the second and closes unanswered.
    let (url, accepted) = serve(|i, mut s| {
        let mut served = 0;
        while read_request(&mut s).is_some() {
            if i == 0 && served == 1 {
                return;
            }
            served += 1;
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        }
    });
    let c = client(&url, true);
    get(&c, "a").await.unwrap();
    let sent = c.send(Some("b"), b"{}").await.unwrap();
    assert!(sent.connect.is_some(), "the retry opened a connection");
    assert_eq!(body(&c, sent.response).await.unwrap(), b"ok");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn partly_answered_request_is_not_sent_again() {
    let (url, accepted) = serve(|_, mut s| {
        let mut served = 0;
        while read_request(&mut s).is_some() {
            if served == 1 {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\n");
                return;
            }
            served += 1;
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        }
    });
    let c = client(&url, true);
    get(&c, "a").await.unwrap();
    let err = c.send(Some("b"), b"{}").await.unwrap_err();
    assert!(matches!(err, Error::Eof { during: "head" }), "{err}");
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

/// A server that answers every request with `reply` and closes.
#[tokio::test]
async fn malformed_responses_are_typed_errors() {
    let c = client(&replying(b"HTTP/1.1 2x0 OK\r\n\r\n", 1).0, false);
    assert!(matches!(get(&c, "a").await, Err(Error::Head(_))));
    let c = client(&replying(b"SPDY/3 200 OK\r\n\r\n", 1).0, false);
    assert!(matches!(get(&c, "a").await, Err(Error::Head(_))));
    let bad_chunk = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nabcd\r\nq\r\n";
    let c = client(&replying(bad_chunk, 1).0, false);
    let err = get(&c, "a").await.unwrap_err();
    assert!(matches!(err, Error::Body(BodyError::ChunkSize)), "{err}");
    let short = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc";
    let c = client(&replying(short, 1).0, false);
    assert!(matches!(
        get(&c, "a").await,
        Err(Error::Eof { during: "body" })
    ));
    let c = client(&replying(b"", 1).0, false);
    assert!(matches!(get(&c, "a").await, Err(Error::NoResponse(_))));
}

#[tokio::test]
async fn oversize_head_is_an_error_not_an_allocation() {
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
    let c = client(&url, false);
    let err = get(&c, "a").await.unwrap_err();
    assert!(
        matches!(err, Error::HeadTooLarge { limit: READ_BUF }),
        "{err}"
    );
}

#[tokio::test]
async fn refused_connection_and_bad_urls() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let c = client(&format!("http://127.0.0.1:{port}/x"), true);
    let err = get(&c, "a").await.unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err}");
    assert!(
        err.to_string().starts_with("cannot connect to 127.0.0.1:"),
        "{err}"
    );
    let h = HeaderMap::new();
    assert!(matches!(
        Client::new("https://127.0.0.1/x", &h, true),
        Err(Error::Url { .. })
    ));
}
