//! One streamed request: send, read every non-empty TCP read with its arrival time, and
//! classify how it ended. The clock starts right before the request is handed to the
//! connection (the caller already holds its concurrency slot), so a new connection's
//! set-up is inside the TTFP as it is for upstream's client; its time is also recorded
//! separately (`connect_s`). The transport is the purpose-built [`http1`] client: one
//! read buffer per connection, one record per TCP read that carried body bytes.

use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::HeaderMap;

use super::http1::{self, Response};
use crate::audio::onset::{PcmAnalyzer, PcmStats};
use crate::audio::pcm::{SNIFF_LEN, Sniff, sniff};

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
#[derive(Debug)]
pub(crate) struct Target {
    http: http1::Client,
    limits: Limits,
    capture: bool,
}

impl Target {
    /// `reuse` keeps idle connections for later requests (pooled); otherwise every
    /// request opens a fresh connection. `url` must be a plain `http://` URL.
    pub(crate) fn new(
        url: &str,
        headers: HeaderMap,
        limits: Limits,
        reuse: bool,
    ) -> Result<Self, String> {
        let http = http1::Client::new(url, &headers, reuse).map_err(|e| e.to_string())?;
        Ok(Target {
            http,
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
        let send_at = Instant::now();
        let x = Exchange {
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
        let deadline = send_at + self.limits.request_timeout;
        let sent = self.http.send(request_id, &body);
        let sent = match self.wait(send_at, deadline, sent).await {
            Err(class) => {
                let what = "response head";
                return x.fail(class, self.timeout_message(class, what));
            }
            Ok(Err(e)) => return x.fail(FailureClass::Transport, error_chain(&e)),
            Ok(Ok(s)) => s,
        };
        let head_at = Instant::now();
        let mut x = Exchange {
            connect: sent.connect,
            ..x
        };
        let mut response = sent.response;
        let status = response.status();
        x.status = Some(status);
        if status != 200 {
            let excerpt = self.excerpt(&mut response, deadline).await;
            let reason = reqwest::StatusCode::from_u16(status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("");
            let msg = format!("HTTP {status} {reason}: {excerpt}");
            return x.fail(
                FailureClass::Http(status),
                msg.trim_end_matches([' ', ':']).to_string(),
            );
        }
        let x = self
            .read_body(&mut response, head_at, deadline, sample_rate, x)
            .await;
        if x.ok() {
            self.http.recycle(response);
        }
        x
    }

    /// Reads the body of `r` (its head arrived at `head_at`): one record per TCP read
    /// that carried body bytes, stamped when the read returned.
    async fn read_body(
        &self,
        r: &mut Response,
        head_at: Instant,
        deadline: Instant,
        sample_rate: u32,
        mut x: Exchange,
    ) -> Exchange {
        let mut check = BodyCheck::new(sample_rate, self.limits.max_body_bytes);
        // The response head was the last byte seen: the stall clock restarts there.
        let mut last = head_at;
        // When the bytes being decoded were read (those after the head came with it).
        let mut read_at = head_at;
        // One timer for the whole body, moved only when it fires early: re-arming a timer
        // per read costs two timer-wheel locks on the path that timestamps the next read.
        let timer = tokio::time::sleep_until(self.body_timer_at(last, deadline).into());
        tokio::pin!(timer);
        loop {
            if !r.has_pending() {
                if r.is_done() {
                    break;
                }
                let filled = tokio::select! {
                    biased;
                    f = r.fill() => f,
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
                read_at = Instant::now();
                if let Err(e) = filled {
                    return x.fail(FailureClass::Transport, error_chain(&e));
                }
            }
            let mut first = true;
            loop {
                let data = match r.next_data() {
                    Err(e) => return x.fail(FailureClass::Transport, error_chain(&e)),
                    Ok(None) => break,
                    Ok(Some(d)) => d,
                };
                if first {
                    first = false;
                    last = read_at;
                    x.chunks.push(((read_at - x.send_at).as_secs_f64(), 0));
                }
                if let Err((class, msg)) = check.feed(&mut x, data) {
                    return x.fail(class, msg);
                }
            }
        }
        match check.finish() {
            Err((class, msg)) => x.fail(class, msg),
            Ok(pcm) => {
                x.end_at = Instant::now();
                x.pcm = pcm;
                x
            }
        }
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
    async fn excerpt(&self, r: &mut Response, deadline: Instant) -> String {
        let until =
            deadline.min(Instant::now() + self.limits.read_timeout.min(Duration::from_secs(5)));
        let mut buf = Vec::new();
        'read: while buf.len() < 512 {
            loop {
                match r.next_data() {
                    Ok(Some(d)) => buf.extend_from_slice(d),
                    Ok(None) => break,
                    Err(_) => break 'read,
                }
            }
            if r.is_done() || buf.len() >= 512 {
                break;
            }
            match tokio::time::timeout_at(until.into(), r.fill()).await {
                Ok(Ok(())) => {}
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

/// What every piece of a body goes through: the byte counts, the size cap, the PCM sniff
/// of its first bytes, the PCM analysis and (capturing) the copy of the audio.
struct BodyCheck {
    analyzer: PcmAnalyzer,
    prefix: [u8; SNIFF_LEN],
    have: usize,
    sniffed: bool,
    max_body_bytes: u64,
}

impl BodyCheck {
    fn new(sample_rate: u32, max_body_bytes: u64) -> BodyCheck {
        BodyCheck {
            analyzer: PcmAnalyzer::new(sample_rate),
            prefix: [0; SNIFF_LEN],
            have: 0,
            sniffed: false,
            max_body_bytes,
        }
    }

    /// Takes one piece of body data into `x` (its bytes go to the latest chunk record).
    fn feed(&mut self, x: &mut Exchange, data: &[u8]) -> Result<(), (FailureClass, String)> {
        if let Some(c) = x.chunks.last_mut() {
            c.1 += data.len() as u64;
        }
        x.bytes += data.len() as u64;
        if x.bytes > self.max_body_bytes {
            let msg = format!("body exceeded the {} byte cap", self.max_body_bytes);
            return Err((FailureClass::Oversize, msg));
        }
        if !self.sniffed {
            let take = (SNIFF_LEN - self.have).min(data.len());
            self.prefix[self.have..self.have + take].copy_from_slice(&data[..take]);
            self.have += take;
            match sniff(&self.prefix[..self.have], false) {
                Sniff::NotPcm(what) => return Err((FailureClass::NotPcm, not_pcm(what))),
                Sniff::RawPcm => self.sniffed = true,
                Sniff::NeedMore => {}
            }
        }
        self.analyzer.feed(data);
        if let Some(audio) = x.audio.as_mut() {
            audio.extend_from_slice(data);
        }
        Ok(())
    }

    /// The PCM statistics once the body ended, or why it was not PCM after all.
    fn finish(self) -> Result<PcmStats, (FailureClass, String)> {
        if let Sniff::NotPcm(what) = sniff(&self.prefix[..self.have], true) {
            return Err((FailureClass::NotPcm, not_pcm(what)));
        }
        Ok(self.analyzer.finish())
    }
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
