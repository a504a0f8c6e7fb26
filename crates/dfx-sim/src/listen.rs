//! The simulator's listening socket, with the accept backlog vLLM's server asks for.
//!
//! tokio's `TcpListener::bind` listens with a backlog of 128. A closed loop of hundreds of
//! streams opening fresh connections at once (the default connection mode) then overflowed
//! the accept queue: the kernel dropped the 129th SYN onward, and those requests waited
//! 1 s for the SYN to be sent again, a second of TTFP that no real server would add
//! (uvicorn, which serves vLLM's API, listens with a backlog of 2048).

use std::io;
use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};

/// The accept backlog (uvicorn's default); the kernel caps it at `net.core.somaxconn`.
pub const BACKLOG: u32 = 2048;

/// Listens on `addr` with [`BACKLOG`] (`SO_REUSEADDR` set, as tokio's `bind` does).
pub fn listen_on(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Listens on the first address of `host:port` that can be bound.
pub(crate) async fn listen(host: &str, port: u16) -> io::Result<TcpListener> {
    let mut last = None;
    for addr in tokio::net::lookup_host((host, port)).await? {
        match listen_on(addr) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::AddrNotAvailable, "no address to listen on")
    }))
}
