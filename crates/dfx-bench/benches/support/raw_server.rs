//! A minimal HTTP/1.1 server for the client benchmark: keep-alive, `Content-Length`
//! requests, chunked raw-PCM responses with a fixed first-chunk delay. It does as little
//! as possible between reading a request and writing its chunks, so what the benchmark
//! measures on top of the scripted delay is mostly the client's own overhead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// How long the server waits before each chunk of a response; the default is no wait
/// (every chunk as soon as the request is read: the scale benchmark's server).
#[derive(Clone, Copy, Default)]
pub(crate) struct Pace {
    /// Between a request's arrival and its first chunk.
    pub(crate) first: Duration,
    /// Between one chunk and the next.
    pub(crate) gap: Duration,
}

impl Pace {
    /// A TTS-like stream: first chunk after 100 ms, then one every 50 ms.
    pub(crate) const PACED: Pace = Pace {
        first: Duration::from_millis(100),
        gap: Duration::from_millis(50),
    };
}
const CHUNK_BYTES: usize = 4800;

/// CLOCK_MONOTONIC (shared by every process) of the request's arrival in the server's
/// kernel socket buffer and of its first chunk written, by `x-request-id`, in seconds.
/// Served as is at `GET /marks`, and as the first-chunk delay (written − arrival) at
/// `GET /timings`.
pub(crate) type Marks = Arc<Mutex<HashMap<String, (f64, f64)>>>;

/// Connections that carried at least one speech request, and speech requests, since the
/// server started (`GET /stats`: `{"connections": n, "requests": m}`): how many TCP
/// connections a client opened for its requests (fresh: one each; pooled: reused).
#[derive(Default)]
pub(crate) struct Counts {
    connections: std::sync::atomic::AtomicU64,
    requests: std::sync::atomic::AtomicU64,
}

/// `SO_TIMESTAMPNS` (the "old" value, right for 64-bit `time_t` on x86_64 and aarch64;
/// the libc crate does not export it for linux-gnu).
const SO_TIMESTAMPNS: libc::c_int = 35;

fn clock(id: libc::clockid_t) -> f64 {
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime writes into the struct we own.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn mono() -> f64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// One `recvmsg`: bytes read and the kernel receive time (CLOCK_MONOTONIC seconds) of the
/// data, from the `SCM_TIMESTAMPNS` message (CLOCK_REALTIME, converted).
fn recv_stamped(fd: std::os::fd::RawFd, buf: &mut [u8]) -> std::io::Result<(usize, Option<f64>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: a zeroed msghdr is valid; every pointer we set outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: fd is an open socket; msg points at live buffers of the stated sizes.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (real_now, mono_now) = (clock(libc::CLOCK_REALTIME), mono());
    let mut stamp = None;
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled in.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                let at = ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9;
                stamp = Some(mono_now - (real_now - at));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

/// Reads what is there (waiting for readiness), with its kernel receive time.
async fn read_stamped(sock: &TcpStream, buf: &mut [u8]) -> std::io::Result<(usize, Option<f64>)> {
    use std::os::fd::AsRawFd;
    let fd = sock.as_raw_fd();
    loop {
        sock.readable().await?;
        match sock.try_io(tokio::io::Interest::READABLE, || recv_stamped(fd, buf)) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            other => return other,
        }
    }
}

struct Request {
    head: String,
    body: Vec<u8>,
    /// Kernel receive time (CLOCK_MONOTONIC s) of the read that brought its first byte.
    arrived: f64,
}

/// Reads one request from `buf` + the socket; `None` at end of stream.
async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Request> {
    let mut tmp = [0u8; 8192];
    let mut arrived = None;
    let mut read = async |buf: &mut Vec<u8>, arrived: &mut Option<f64>| {
        let (n, at) = read_stamped(sock, &mut tmp)
            .await
            .ok()
            .filter(|r| r.0 > 0)?;
        buf.extend_from_slice(&tmp[..n]);
        arrived.get_or_insert(at.unwrap_or_else(mono));
        Some(())
    };
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        read(buf, &mut arrived).await?;
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        read(buf, &mut arrived).await?;
    }
    let body = buf[head_end..head_end + len].to_vec();
    buf.drain(..head_end + len);
    Some(Request {
        head,
        body,
        arrived: arrived.unwrap_or_else(mono),
    })
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
}

async fn connection(mut sock: TcpStream, marks: Marks, counts: Arc<Counts>, pace: Pace) {
    use std::sync::atomic::Ordering::Relaxed;
    let _ = sock.set_nodelay(true);
    {
        use std::os::fd::AsRawFd;
        let on: libc::c_int = 1;
        // SAFETY: setsockopt reads `on` for the stated length.
        let _ = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    let mut buf = Vec::new();
    let pcm = super::native_support::pcm(CHUNK_BYTES / 2, true, 0);
    let mut counted = false;
    while let Some(req) = read_request(&mut sock, &mut buf).await {
        if req.head.starts_with("get ") {
            let body = if req.head.starts_with("get /stats") {
                serde_json::to_vec(&serde_json::json!({
                    "connections": counts.connections.load(Relaxed),
                    "requests": counts.requests.load(Relaxed),
                }))
            } else if req.head.starts_with("get /v1/models") {
                // What an OpenAI client asks when it is not told the model.
                serde_json::to_vec(&serde_json::json!({
                    "object": "list",
                    "data": [{"id": "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice", "object": "model"}],
                }))
            } else {
                let marks = marks.lock().unwrap();
                if req.head.starts_with("get /timings") {
                    let delays: HashMap<&String, f64> =
                        marks.iter().map(|(id, (a, w))| (id, w - a)).collect();
                    serde_json::to_vec(&delays)
                } else {
                    serde_json::to_vec(&*marks)
                }
            };
            let body = body.unwrap_or_default();
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
        counts.requests.fetch_add(1, Relaxed);
        if !counted {
            counted = true;
            counts.connections.fetch_add(1, Relaxed);
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
            let wait = if i == 0 { pace.first } else { pace.gap };
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            if sock.write_all(&chunk).await.is_err() {
                return;
            }
            if let (0, Some(id)) = (i, &id) {
                let written = mono();
                marks
                    .lock()
                    .unwrap()
                    .insert(id.clone(), (req.arrived, written));
            }
        }
        if sock.write_all(b"0\r\n\r\n").await.is_err() {
            return;
        }
    }
}

/// A server child's runtime (2 threads) and its listener on an ephemeral loopback port
/// (uvicorn's backlog), whose `http://addr` it prints for [`super::server_child`].
pub(crate) fn bind() -> (tokio::runtime::Runtime, tokio::net::TcpListener) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(async { dfx_sim::listen::listen_on(([127, 0, 0, 1], 0).into()) })
        .unwrap();
    println!("http://{}", listener.local_addr().unwrap());
    (rt, listener)
}

/// Serves on an ephemeral loopback port (2 runtime threads) at `pace`, prints
/// `http://addr`, and returns when stdin closes.
pub(crate) fn serve(pace: Pace) {
    use std::io::Read;
    let (rt, listener) = bind();
    let marks: Marks = Arc::default();
    let counts: Arc<Counts> = Arc::default();
    rt.spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(connection(sock, marks.clone(), counts.clone(), pace));
        }
    });
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
