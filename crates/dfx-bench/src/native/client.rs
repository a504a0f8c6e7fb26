//! One streamed request: send, read every non-empty TCP read with its arrival time, and
//! classify how it ended. The clock starts right before the request is handed to the
//! connection (the caller already holds its concurrency slot); a new connection's
//! set-up time is measured by a connector layer and recorded separately.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::HeaderMap;

use crate::audio::onset::{PcmAnalyzer, PcmStats};
use crate::audio::pcm::{SNIFF_LEN, Sniff, sniff};

tokio::task_local! {
    /// Set by [`TimedConnect`] when the current request had to open a connection.
    static CONNECT_TIME: Cell<Option<Duration>>;
}

/// Connector layer that times connection establishment for the request being polled.
#[derive(Debug, Clone, Copy)]
struct TimeConnects;

impl<S> tower_layer::Layer<S> for TimeConnects {
    type Service = TimedConnect<S>;
    fn layer(&self, inner: S) -> TimedConnect<S> {
        TimedConnect(inner)
    }
}

#[derive(Debug, Clone)]
struct TimedConnect<S>(S);

type BoxFut<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, R> tower_service::Service<R> for TimedConnect<S>
where
    S: tower_service::Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFut<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        let start = Instant::now();
        let fut = self.0.call(req);
        Box::pin(async move {
            let out = fut.await;
            // Outside a request's scope (a connect finished in the background) there is
            // nobody to attribute it to.
            let _ = CONNECT_TIME.try_with(|c| c.set(Some(start.elapsed())));
            out
        })
    }
}

/// Per-request limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Whole request, send to end of body.
    pub request_timeout: Duration,
    /// Longest wait for the response head or the next byte (stall detection).
    pub read_timeout: Duration,
    /// Body size cap.
    pub max_body_bytes: u64,
}

/// How a failed request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// A non-200 status.
    Http(u16),
    /// Connection refused/reset, malformed response, …
    Transport,
    /// No byte for the read timeout.
    Stall,
    /// The total request timeout.
    Timeout,
    /// The body exceeded the size cap.
    Oversize,
    /// The body is a WAV file or an event stream, not raw PCM.
    NotPcm,
    /// Never sent: the saturation gate found the open-loop cap full.
    Saturated,
}

impl FailureClass {
    /// The `error_counts` key: `http_500`, `transport`, `stall`, `timeout`, `oversize`,
    /// `not_pcm`, `saturated`.
    pub fn key(&self) -> String {
        match self {
            FailureClass::Http(s) => format!("http_{s}"),
            FailureClass::Transport => "transport".into(),
            FailureClass::Stall => "stall".into(),
            FailureClass::Timeout => "timeout".into(),
            FailureClass::Oversize => "oversize".into(),
            FailureClass::NotPcm => "not_pcm".into(),
            FailureClass::Saturated => "saturated".into(),
        }
    }
}

/// A failure with its message (status and body excerpt, or the transport error).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub class: FailureClass,
    pub message: String,
}

/// Everything observed about one request.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The clock read right before sending.
    pub send_at: Instant,
    /// When the request ended (end of body, or the failure).
    pub end_at: Instant,
    pub status: Option<u16>,
    /// `(seconds since send, bytes)` of every non-empty body read.
    pub chunks: Vec<(f64, u64)>,
    pub bytes: u64,
    /// Connection set-up time when this request opened one.
    pub connect: Option<Duration>,
    pub failure: Option<Failure>,
    pub pcm: PcmStats,
    /// The whole body, when the target captures audio ([`Target::capturing`]).
    pub audio: Option<Vec<u8>>,
}

/// A configured HTTP client for one endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    limits: Limits,
    capture: bool,
}

impl Target {
    /// `reuse` keeps idle connections for later requests (pooled); otherwise every
    /// request opens a fresh connection.
    pub(crate) fn new(
        url: &str,
        headers: HeaderMap,
        limits: Limits,
        reuse: bool,
    ) -> Result<Self, String> {
        let url = reqwest::Url::parse(url).map_err(|e| format!("bad server URL {url:?}: {e}"))?;
        let mut b = reqwest::Client::builder()
            .no_proxy()
            .http1_only()
            .tcp_nodelay(true)
            .connector_layer(TimeConnects);
        if !reuse {
            b = b.pool_max_idle_per_host(0);
        }
        let client = b
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Target {
            client,
            url,
            headers,
            limits,
            capture: false,
        })
    }

    /// Keeps every response body in [`Exchange::audio`] (quality capture): at most the
    /// body cap per request in flight.
    pub(crate) fn capturing(mut self, on: bool) -> Self {
        self.capture = on;
        self
    }

    /// Sends one request and reads the whole stream. Never panics on server misbehaviour.
    pub(crate) async fn execute(
        &self,
        body: Bytes,
        request_id: Option<&str>,
        sample_rate: u32,
    ) -> Exchange {
        CONNECT_TIME
            .scope(
                Cell::new(None),
                self.exchange(body, request_id, sample_rate),
            )
            .await
    }

    async fn exchange(&self, body: Bytes, request_id: Option<&str>, sample_rate: u32) -> Exchange {
        let mut rb = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body);
        if let Some(id) = request_id {
            rb = rb.header("x-request-id", id);
        }
        let request = rb.build();
        let send_at = Instant::now();
        let mut x = Exchange {
            send_at,
            end_at: send_at,
            status: None,
            chunks: Vec::new(),
            bytes: 0,
            connect: None,
            failure: None,
            pcm: PcmStats::default(),
            audio: self.capture.then(Vec::new),
        };
        let request = match request {
            Ok(r) => r,
            Err(e) => return x.fail(FailureClass::Transport, error_chain(&e)),
        };
        let deadline = send_at + self.limits.request_timeout;
        let response = self.client.execute(request);
        let response = match self.wait(send_at, deadline, response).await {
            Err(class) => {
                let what = "response head";
                return x.fail(class, self.timeout_message(class, what));
            }
            Ok(Err(e)) => return x.fail(FailureClass::Transport, error_chain(&e)),
            Ok(Ok(r)) => r,
        };
        x.connect = CONNECT_TIME.with(Cell::get);
        let status = response.status();
        x.status = Some(status.as_u16());
        if status != reqwest::StatusCode::OK {
            let excerpt = self.excerpt(response, deadline).await;
            let reason = status.canonical_reason().unwrap_or("");
            let msg = format!("HTTP {} {reason}: {excerpt}", status.as_u16());
            return x.fail(
                FailureClass::Http(status.as_u16()),
                msg.trim_end_matches([' ', ':']).to_string(),
            );
        }
        self.read_body(response, deadline, sample_rate, x).await
    }

    async fn read_body(
        &self,
        mut response: reqwest::Response,
        deadline: Instant,
        sample_rate: u32,
        mut x: Exchange,
    ) -> Exchange {
        let mut analyzer = PcmAnalyzer::new(sample_rate);
        let mut prefix: Vec<u8> = Vec::with_capacity(SNIFF_LEN);
        let mut sniffed = false;
        // The response head was the last byte seen: the stall clock restarts there.
        let mut last = Instant::now();
        // One timer for the whole body, moved only when it fires early: re-arming a timer
        // per read costs two timer-wheel locks on the path that timestamps the next read.
        let timer = tokio::time::sleep_until(self.body_timer_at(last, deadline).into());
        tokio::pin!(timer);
        loop {
            let next = tokio::select! {
                biased;
                c = response.chunk() => c,
                () = &mut timer => {
                    let due = self.body_timer_at(last, deadline);
                    if Instant::now() < due {
                        timer.as_mut().reset(due.into());
                        continue;
                    }
                    let class = self.expired_class(last, deadline);
                    return x.fail(class, self.timeout_message(class, "next body byte"));
                }
            };
            let chunk = match next {
                Err(e) => return x.fail(FailureClass::Transport, error_chain(&e)),
                Ok(None) => break,
                Ok(Some(c)) if c.is_empty() => continue,
                Ok(Some(c)) => c,
            };
            last = Instant::now();
            x.chunks
                .push(((last - x.send_at).as_secs_f64(), chunk.len() as u64));
            x.bytes += chunk.len() as u64;
            if x.bytes > self.limits.max_body_bytes {
                let msg = format!("body exceeded the {} byte cap", self.limits.max_body_bytes);
                return x.fail(FailureClass::Oversize, msg);
            }
            if !sniffed {
                let take = (SNIFF_LEN - prefix.len()).min(chunk.len());
                prefix.extend_from_slice(&chunk[..take]);
                match sniff(&prefix, false) {
                    Sniff::NotPcm(what) => return x.fail(FailureClass::NotPcm, not_pcm(what)),
                    Sniff::RawPcm => sniffed = true,
                    Sniff::NeedMore => {}
                }
            }
            analyzer.feed(&chunk);
            if let Some(audio) = x.audio.as_mut() {
                audio.extend_from_slice(&chunk);
            }
        }
        if let Sniff::NotPcm(what) = sniff(&prefix, true) {
            return x.fail(FailureClass::NotPcm, not_pcm(what));
        }
        x.end_at = Instant::now();
        x.pcm = analyzer.finish();
        x
    }

    /// Awaits `fut` for at most the read timeout after `since`, and never past `deadline`.
    async fn wait<F: Future>(
        &self,
        since: Instant,
        deadline: Instant,
        fut: F,
    ) -> Result<F::Output, FailureClass> {
        tokio::time::timeout_at(self.body_timer_at(since, deadline).into(), fut)
            .await
            .map_err(|_| self.expired_class(since, deadline))
    }

    /// When waiting since `since` ends: the read timeout after it, never past `deadline`.
    fn body_timer_at(&self, since: Instant, deadline: Instant) -> Instant {
        (since + self.limits.read_timeout).min(deadline)
    }

    /// Which limit a wait since `since` that ran out hit.
    fn expired_class(&self, since: Instant, deadline: Instant) -> FailureClass {
        if deadline <= since + self.limits.read_timeout {
            FailureClass::Timeout
        } else {
            FailureClass::Stall
        }
    }

    fn timeout_message(&self, class: FailureClass, what: &str) -> String {
        match class {
            FailureClass::Timeout => format!(
                "request timed out after {:.1} s (total timeout) waiting for the {what}",
                self.limits.request_timeout.as_secs_f64()
            ),
            _ => format!(
                "stream stalled: no {what} for {:.1} s (read timeout)",
                self.limits.read_timeout.as_secs_f64()
            ),
        }
    }

    /// Up to 200 characters of an error body, read within a few seconds.
    async fn excerpt(&self, mut response: reqwest::Response, deadline: Instant) -> String {
        let until =
            deadline.min(Instant::now() + self.limits.read_timeout.min(Duration::from_secs(5)));
        let mut buf = Vec::new();
        while buf.len() < 512 {
            match tokio::time::timeout_at(until.into(), response.chunk()).await {
                Ok(Ok(Some(c))) => buf.extend_from_slice(&c),
                _ => break,
            }
        }
        let text = String::from_utf8_lossy(&buf);
        let collapsed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        collapsed.chars().take(200).collect()
    }
}

impl Exchange {
    /// A request the saturation gate did not send: `cap` requests were in flight.
    pub fn saturated(cap: usize) -> Exchange {
        let now = Instant::now();
        Exchange {
            send_at: now,
            end_at: now,
            status: None,
            chunks: Vec::new(),
            bytes: 0,
            connect: None,
            failure: Some(Failure {
                class: FailureClass::Saturated,
                message: saturated_message(cap),
            }),
            pcm: PcmStats::default(),
            audio: None,
        }
    }

    fn fail(mut self, class: FailureClass, message: String) -> Exchange {
        self.end_at = Instant::now();
        self.failure = Some(Failure { class, message });
        self
    }

    /// Whether the request succeeded (HTTP 200, whole raw-PCM body read).
    pub fn ok(&self) -> bool {
        self.failure.is_none()
    }
}

/// The failure message of one arrival the saturation gate did not send.
pub(crate) fn saturated_message(cap: usize) -> String {
    format!("load generator saturated: max_concurrency={cap} requests in flight")
}

fn not_pcm(what: &str) -> String {
    format!("response body is {what}, not raw PCM (response_format pcm expected)")
}

/// An error with its causes (`error sending request: connection refused`).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_keys() {
        assert_eq!(FailureClass::Http(500).key(), "http_500");
        assert_eq!(FailureClass::NotPcm.key(), "not_pcm");
        assert_eq!(FailureClass::Stall.key(), "stall");
    }
}
