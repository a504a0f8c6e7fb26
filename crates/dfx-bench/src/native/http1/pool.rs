//! The client: one endpoint, its request head built once, and (pooled) the idle
//! keep-alive connections to it; fresh clients open a connection per request.
//!
//! A pooled request takes the most recently used idle connection that the server has
//! not closed. If the server closed it anyway (the close raced the request), the request
//! is sent once more on a new connection, but only when not one byte of a response had
//! arrived: a request the server answered in part is never sent twice.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;

use super::conn::{Conn, Response};
use super::request::RequestHead;
use super::{Endpoint, Error};

/// Idle connections older than this are closed, not reused (reqwest's default).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// An HTTP/1.1 client for POST requests to one endpoint.
#[derive(Debug)]
pub(crate) struct Client {
    endpoint: Endpoint,
    head: RequestHead,
    /// Idle connections, most recently used last; `None` for fresh connections.
    idle: Option<Mutex<Vec<Conn>>>,
}

/// A response whose head arrived, and the connect time if the request opened a connection.
#[derive(Debug)]
pub(crate) struct Sent {
    pub response: Response,
    pub connect: Option<Duration>,
}

impl Client {
    /// A client for `url` sending `headers` with every request; `reuse` keeps idle
    /// connections (pooled), otherwise each request opens its own (fresh).
    pub(crate) fn new(url: &str, headers: &HeaderMap, reuse: bool) -> Result<Client, Error> {
        let endpoint = Endpoint::parse(url)?;
        let head = RequestHead::post(&endpoint, headers);
        Ok(Client {
            endpoint,
            head,
            idle: reuse.then(|| Mutex::new(Vec::new())),
        })
    }

    /// Sends one POST and reads the response head.
    pub(crate) async fn send(&self, request_id: Option<&str>, body: &[u8]) -> Result<Sent, Error> {
        if let Some(conn) = self.take_idle() {
            match self.exchange(conn, request_id, body).await {
                Err(e) if e.unanswered() => {}
                other => {
                    return other.map(|response| Sent {
                        response,
                        connect: None,
                    });
                }
            }
        }
        let start = Instant::now();
        let conn = Conn::open(&self.endpoint.addrs().await?).await?;
        let connect = Some(start.elapsed());
        let response = self.exchange(conn, request_id, body).await?;
        Ok(Sent { response, connect })
    }

    /// Returns a finished response's connection to the pool when it can be reused.
    pub(crate) fn recycle(&self, response: Response) {
        let Some(idle) = &self.idle else { return };
        if let Some(mut conn) = response.into_reusable() {
            conn.idle_since = Instant::now();
            if let Ok(mut v) = idle.lock() {
                v.push(conn);
            }
        }
    }

    /// Idle connections in the pool (for tests).
    #[cfg(test)]
    pub(crate) fn idle_count(&self) -> usize {
        self.idle
            .as_ref()
            .and_then(|m| m.lock().ok().map(|v| v.len()))
            .unwrap_or(0)
    }

    async fn exchange(
        &self,
        mut conn: Conn,
        request_id: Option<&str>,
        body: &[u8],
    ) -> Result<Response, Error> {
        conn.send(&self.head, request_id, body).await?;
        conn.response().await
    }

    /// The most recently used idle connection still open; closes the stale ones.
    fn take_idle(&self) -> Option<Conn> {
        let idle = self.idle.as_ref()?;
        loop {
            let mut conn = idle.lock().ok()?.pop()?;
            if conn.idle_since.elapsed() < IDLE_TIMEOUT && conn.still_open() {
                return Some(conn);
            }
        }
    }
}
