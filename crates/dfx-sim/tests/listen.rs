//! The simulator's accept backlog (`dfx_sim::listen`): a burst of fresh connections, as a
//! closed loop of hundreds of streams opens at its start, is queued by the kernel, not
//! dropped. With tokio's `TcpListener::bind` (backlog 128) the 130th connect of a burst
//! waited 1 s for its SYN to be sent again, which the peer benchmark saw as a 1 s TTFP
//! tail at 256 streams (BENCHMARKS.md).

use std::net::TcpStream;
use std::time::Duration;

use dfx_sim::SimOptions;

/// More connections than tokio's default backlog, fewer than `somaxconn` allows.
fn burst() -> usize {
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(4096);
    512.min(somaxconn.min(dfx_sim::listen::BACKLOG as usize))
}

/// Opens `n` connections to `addr`, each given 500 ms (a dropped SYN is sent again only
/// after 1 s): every one must complete its handshake.
fn connect_all(addr: std::net::SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|i| {
            TcpStream::connect_timeout(&addr, Duration::from_millis(500))
                .unwrap_or_else(|e| panic!("connection {i} of {n} to {addr}: {e}"))
        })
        .collect()
}

/// A runtime that runs only while the test blocks on it: between calls nothing accepts.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_burst_of_connections_waits_in_the_accept_queue_of_the_simulator() {
    let rt = runtime();
    let h = rt
        .block_on(dfx_sim::spawn(SimOptions::new(
            "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice",
        )))
        .unwrap();
    // The runtime is not driven now: nothing accepts, so every connection stays in the
    // accept queue and only the backlog decides whether its SYN is answered.
    let n = burst();
    assert!(n > 129, "somaxconn too small for this test: {n}");
    let conns = connect_all(h.addr, n);
    assert_eq!(conns.len(), n);
    drop(conns);
    rt.block_on(async move {
        let _ = tokio::time::timeout(Duration::from_secs(10), h.shutdown()).await;
    });
}

#[test]
fn listen_on_asks_for_the_backlog_and_tokio_bind_does_not() {
    let rt = runtime();
    let ours = rt
        .block_on(async { dfx_sim::listen::listen_on(([127, 0, 0, 1], 0).into()) })
        .unwrap();
    let n = burst();
    assert_eq!(connect_all(ours.local_addr().unwrap(), n).len(), n);
    // The control, which the simulator's listener did before: tokio's bind (pinned
    // 1.54.1) answers 129 connections of the burst and drops the SYN of the next.
    let default = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = default.local_addr().unwrap();
    let mut kept = Vec::new();
    let refused =
        (0..n).find(
            |_| match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
                Ok(c) => {
                    kept.push(c);
                    false
                }
                Err(_) => true,
            },
        );
    assert_eq!(refused, Some(129), "tokio's default backlog changed");
}
