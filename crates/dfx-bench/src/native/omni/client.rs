//! One streamed chat-omni request: send, frame the event stream incrementally
//! ([`super::sse`]), timestamp every message at the body read that completed it, and
//! classify how it ended. Same limits as the TTS client (`client::Limits`): body cap,
//! read timeout (stall), total timeout.

use std::time::Instant;

use bytes::Bytes;
use dfx_core::plan::ConnectionMode;
use reqwest::header::HeaderMap;

use super::sse::{SseMessage, SseParser};
use super::stream::StreamState;
use crate::native::BenchError;
use crate::native::client::{Limits, error_chain};
use crate::native::stall::{Progress, SharedWatch};

/// How a failed chat request failed (`error_counts` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChatFailure {
    /// A non-200 status.
    Http(u16),
    /// Connection refused/reset, malformed HTTP.
    Transport,
    /// No byte for the read timeout.
    Stall,
    /// The total request timeout.
    Timeout,
    /// The body exceeded the size cap.
    Oversize,
    /// The stream carried an `error` chunk.
    StreamError,
    /// A message that is not `data: <JSON>`, or non-UTF-8 bytes.
    Malformed,
    /// Cut by the suite's interruption ([`dfx_core::stop`]): not the server's failure.
    Interrupted,
    /// Not sent: the saturation gate found the in-flight cap full.
    Saturated,
}

impl ChatFailure {
    /// `http_500`, `transport`, `stall`, `timeout`, `oversize`, `stream_error`,
    /// `malformed`, `interrupted`, `saturated`.
    pub(crate) fn key(&self) -> String {
        match self {
            ChatFailure::Http(s) => format!("http_{s}"),
            ChatFailure::Transport => "transport".into(),
            ChatFailure::Stall => "stall".into(),
            ChatFailure::Timeout => "timeout".into(),
            ChatFailure::Oversize => "oversize".into(),
            ChatFailure::StreamError => "stream_error".into(),
            ChatFailure::Malformed => "malformed".into(),
            ChatFailure::Interrupted => "interrupted".into(),
            ChatFailure::Saturated => "saturated".into(),
        }
    }
}

/// Everything observed about one chat request.
#[derive(Debug, Clone)]
pub(crate) struct ChatExchange {
    pub send_at: Instant,
    /// Seconds from the send to the response's headers: the upload of the body and the
    /// server's parsing of it (the time-lapse keeps it unscaled, [`TimeLapse::chat`]).
    ///
    /// [`TimeLapse::chat`]: crate::native::lapse::TimeLapse
    pub head_s: Option<f64>,
    pub end_at: Instant,
    pub status: Option<u16>,
    pub bytes: u64,
    pub reads: u64,
    pub failure: Option<(ChatFailure, String)>,
    pub stream: StreamState,
}

impl ChatExchange {
    /// Whether the request succeeded.
    pub(crate) fn ok(&self) -> bool {
        self.failure.is_none()
    }

    /// A request that failed at `send_at` before anything arrived.
    pub(crate) fn failed(send_at: Instant, class: ChatFailure, msg: String) -> ChatExchange {
        ChatExchange {
            send_at,
            head_s: None,
            end_at: send_at,
            status: None,
            bytes: 0,
            reads: 0,
            failure: None,
            stream: StreamState::default(),
        }
        .fail(class, msg)
    }

    /// Ends the request as failed; once the run's stop was requested, whatever cut it is
    /// the interruption's doing, not the server's.
    fn fail(mut self, class: ChatFailure, msg: String) -> ChatExchange {
        self.end_at = Instant::now();
        self.failure = Some(
            if dfx_core::stop::requested() && class != ChatFailure::Saturated {
                (ChatFailure::Interrupted, dfx_core::stop::cut_message(&msg))
            } else {
                (class, msg)
            },
        );
        self
    }
}

/// A configured HTTP client for one chat endpoint.
#[derive(Debug, Clone)]
pub(crate) struct ChatTarget {
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    limits: Limits,
}

impl ChatTarget {
    /// An HTTP/1.1 client (`TCP_NODELAY`) for `url`: idle connections reused when
    /// `Pooled`, a new connection per request when `Fresh` (vllm-omni's bench session has
    /// `force_close`).
    pub(crate) fn new(
        url: &str,
        mode: ConnectionMode,
        headers: HeaderMap,
        limits: Limits,
    ) -> Result<Self, BenchError> {
        let url = reqwest::Url::parse(url).map_err(|e| BenchError::BadUrl {
            url: url.to_string(),
            why: e.to_string(),
        })?;
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .http1_only()
            .tcp_nodelay(true);
        if mode == ConnectionMode::Fresh {
            builder = builder.pool_max_idle_per_host(0);
        }
        let client = builder.build().map_err(BenchError::HttpClient)?;
        Ok(ChatTarget {
            client,
            url,
            headers,
            limits,
        })
    }

    /// A request that was never sent because its body could not be built.
    pub(crate) fn refused(&self, why: String) -> ChatExchange {
        let msg = format!("request body: {why}");
        ChatExchange::failed(Instant::now(), ChatFailure::Transport, msg)
    }

    /// Sends one request and reads the whole stream, its progress told to `watch`. Never
    /// panics on server input.
    pub(crate) async fn execute(
        &self,
        body: Bytes,
        request_id: Option<&str>,
        watch: &SharedWatch,
    ) -> ChatExchange {
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
        let mut x = ChatExchange::failed(send_at, ChatFailure::Transport, String::new());
        x.failure = None;
        let request = match request {
            Ok(r) => r,
            Err(e) => return x.fail(ChatFailure::Transport, e.to_string()),
        };
        let deadline = send_at + self.limits.request_timeout;
        let head = tokio::time::timeout_at(
            self.timer(send_at, deadline).into(),
            self.client.execute(request),
        )
        .await;
        let mut response = match head {
            Err(_) => {
                let class = self.expired(send_at, deadline);
                return x.fail(class, self.expired_msg(class));
            }
            Ok(Err(e)) => return x.fail(ChatFailure::Transport, error_chain(&e)),
            Ok(Ok(r)) => r,
        };
        let mut x = x;
        x.head_s = Some(send_at.elapsed().as_secs_f64());
        let status = response.status();
        x.status = Some(status.as_u16());
        if status != reqwest::StatusCode::OK {
            let reason = status.canonical_reason().unwrap_or("");
            let mut excerpt = Vec::new();
            let until = self.timer(Instant::now(), deadline);
            while excerpt.len() < 512 {
                match tokio::time::timeout_at(until.into(), response.chunk()).await {
                    Ok(Ok(Some(c))) => excerpt.extend_from_slice(&c),
                    _ => break,
                }
            }
            let text = String::from_utf8_lossy(&excerpt);
            let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let msg = format!(
                "HTTP {} {reason}: {}",
                status.as_u16(),
                text.chars().take(200).collect::<String>()
            );
            return x.fail(
                ChatFailure::Http(status.as_u16()),
                msg.trim_end_matches([' ', ':']).to_string(),
            );
        }
        self.read_stream(response, deadline, x, watch).await
    }

    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        deadline: Instant,
        mut x: ChatExchange,
        watch: &SharedWatch,
    ) -> ChatExchange {
        let mut parser = SseParser::new();
        let mut last = Instant::now();
        let (rule, mut progress) = (self.limits.stall, Progress::default());
        loop {
            let read_at = self.timer(last, deadline);
            // The minimum-progress rule, when it comes before the read and total timeouts.
            let stall_at = progress.due(&rule).filter(|d| *d < read_at);
            let until = stall_at.unwrap_or(read_at);
            let next = tokio::time::timeout_at(until.into(), response.chunk()).await;
            let chunk = match next {
                Err(_) if stall_at.is_some() => {
                    let msg = progress.message(&rule, x.bytes);
                    return x.fail(ChatFailure::Stall, msg);
                }
                Err(_) => {
                    let class = self.expired(last, deadline);
                    return x.fail(class, self.expired_msg(class));
                }
                Ok(Err(e)) => return x.fail(ChatFailure::Transport, error_chain(&e)),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(c))) if c.is_empty() => continue,
                Ok(Ok(Some(c))) => c,
            };
            last = Instant::now();
            let t = (last - x.send_at).as_secs_f64();
            x.reads += 1;
            x.bytes += chunk.len() as u64;
            if progress.advance(&rule, x.bytes, last) {
                watch.progressed(last);
            }
            if x.bytes > self.limits.max_body_bytes {
                let msg = format!("body exceeded the {} byte cap", self.limits.max_body_bytes);
                return x.fail(ChatFailure::Oversize, msg);
            }
            match parser.feed(&chunk) {
                Ok(msgs) => take(&mut x.stream, t, msgs),
                Err(e) => return x.fail(ChatFailure::Malformed, e.to_string()),
            }
        }
        let t = (last - x.send_at).as_secs_f64();
        match parser.finish() {
            Ok(m) => take(&mut x.stream, t, m.into_iter().collect()),
            Err(e) => return x.fail(ChatFailure::Malformed, e.to_string()),
        }
        x.end_at = Instant::now();
        if let Some(e) = x.stream.error.clone() {
            return x.fail(ChatFailure::StreamError, format!("stream error: {e}"));
        }
        x
    }

    fn timer(&self, since: Instant, deadline: Instant) -> Instant {
        (since + self.limits.read_timeout).min(deadline)
    }

    fn expired(&self, since: Instant, deadline: Instant) -> ChatFailure {
        if deadline <= since + self.limits.read_timeout {
            ChatFailure::Timeout
        } else {
            ChatFailure::Stall
        }
    }

    fn expired_msg(&self, class: ChatFailure) -> String {
        match class {
            ChatFailure::Timeout => format!(
                "request timed out after {:.1} s (total timeout)",
                self.limits.request_timeout.as_secs_f64()
            ),
            _ => format!(
                "stream stalled: no byte for {:.1} s (read timeout)",
                self.limits.read_timeout.as_secs_f64()
            ),
        }
    }
}

fn take(s: &mut StreamState, t: f64, msgs: Vec<SseMessage>) {
    for m in msgs {
        if let SseMessage::Json(v) = m {
            s.on_message(t, &v);
        }
    }
}
