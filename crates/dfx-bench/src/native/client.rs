//! What one streamed speech request is and how it ends: the endpoint and limits
//! ([`Target`]), everything observed about the request ([`Exchange`]), how a failure is
//! classified ([`FailureClass`]) and what every piece of the body goes through
//! ([`BodyCheck`]). The clock starts right before the request is handed to its
//! connection (the caller already holds its concurrency slot), so a new connection's
//! set-up is inside the TTFP as it is for upstream's client; its time is also recorded
//! separately (`connect_s`). The requests run on the event loop ([`super::evloop`]), one
//! record per TCP read that carried body bytes.

use std::time::{Duration, Instant};

use dfx_core::plan::ConnectionMode;
use reqwest::header::HeaderMap;

use super::http1::Endpoint;
use super::http1::request::RequestHead;
use super::stall::StallRule;
use crate::audio::onset::{PcmAnalyzer, PcmStats};
use crate::audio::pcm::{SNIFF_LEN, Sniff, sniff};
use crate::native::BenchError;

/// Per-request limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Whole request, send to end of body.
    pub request_timeout: Duration,
    /// Longest wait for the response head or the next byte (stall detection).
    pub read_timeout: Duration,
    /// The minimum-progress rule of a streaming body and of the step.
    pub stall: StallRule,
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
    /// Cut by the suite's interruption ([`dfx_core::stop`]): not the server's failure.
    Interrupted,
}

impl FailureClass {
    /// The `error_counts` key: `http_500`, `transport`, `stall`, `timeout`, `oversize`,
    /// `not_pcm`, `saturated`, `interrupted`.
    pub fn key(&self) -> String {
        match self {
            FailureClass::Http(s) => format!("http_{s}"),
            FailureClass::Transport => "transport".into(),
            FailureClass::Stall => "stall".into(),
            FailureClass::Timeout => "timeout".into(),
            FailureClass::Oversize => "oversize".into(),
            FailureClass::NotPcm => "not_pcm".into(),
            FailureClass::Saturated => "saturated".into(),
            FailureClass::Interrupted => "interrupted".into(),
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

/// A configured speech endpoint: the URL parsed once, the request head every request
/// shares built once, the limits, and how connections and bodies are handled. The
/// requests themselves run on the event loop ([`super::evloop`]).
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) endpoint: Endpoint,
    pub(crate) head: RequestHead,
    pub(crate) limits: Limits,
    /// Idle connections kept for later requests (pooled), else one per request (fresh).
    pub(crate) connection: ConnectionMode,
    /// Every response body kept in [`Exchange::audio`] (quality capture).
    pub(crate) capture: bool,
}

impl Target {
    /// [`ConnectionMode::Pooled`] keeps idle connections for later requests; with
    /// [`ConnectionMode::Fresh`] every request opens its own. `url` must be a plain
    /// `http://` URL.
    pub(crate) fn new(
        url: &str,
        headers: HeaderMap,
        limits: Limits,
        connection: ConnectionMode,
    ) -> Result<Self, BenchError> {
        let endpoint = Endpoint::parse(url).map_err(|e| match e {
            super::http1::Error::Url { url, why } => BenchError::BadUrl { url, why },
            other => BenchError::Connection(other.to_string()),
        })?;
        let head = RequestHead::post(&endpoint, &headers);
        Ok(Target {
            endpoint,
            head,
            limits,
            connection,
            capture: false,
        })
    }

    /// Keeps every response body in [`Exchange::audio`] (quality capture): at most the
    /// body cap per request in flight.
    pub(crate) fn capturing(mut self, on: bool) -> Self {
        self.capture = on;
        self
    }
}

impl Limits {
    /// When waiting since `since` ends: the read timeout after it, never past `deadline`.
    pub(crate) fn wait_until(&self, since: Instant, deadline: Instant) -> Instant {
        (since + self.read_timeout).min(deadline)
    }

    /// Which limit a wait since `since` that ran out hit.
    pub(crate) fn expired_class(&self, since: Instant, deadline: Instant) -> FailureClass {
        if deadline <= since + self.read_timeout {
            FailureClass::Timeout
        } else {
            FailureClass::Stall
        }
    }

    /// The message of a wait for `what` that ran out.
    pub(crate) fn timeout_message(&self, class: FailureClass, what: &str) -> String {
        match class {
            FailureClass::Timeout => format!(
                "request timed out after {:.1} s (total timeout) waiting for the {what}",
                self.request_timeout.as_secs_f64()
            ),
            _ => format!(
                "stream stalled: no {what} for {:.1} s (read timeout)",
                self.read_timeout.as_secs_f64()
            ),
        }
    }

    /// How long an error body's excerpt is read after its head: a few seconds at most.
    pub(crate) fn excerpt_until(&self, now: Instant, deadline: Instant) -> Instant {
        deadline.min(now + self.read_timeout.min(Duration::from_secs(5)))
    }
}

/// The failure message of a non-200 response: status, reason and up to 200 characters of
/// the body read (whitespace collapsed).
pub(crate) fn http_message(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let collapsed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let excerpt: String = collapsed.chars().take(200).collect();
    let reason = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let msg = format!("HTTP {status} {reason}: {excerpt}");
    msg.trim_end_matches([' ', ':']).to_string()
}

impl Exchange {
    /// A request about to be sent at `send_at` (`capture`: its body will be kept).
    pub(crate) fn start(send_at: Instant, capture: bool) -> Exchange {
        Exchange {
            send_at,
            end_at: send_at,
            status: None,
            chunks: Vec::new(),
            bytes: 0,
            connect: None,
            failure: None,
            pcm: PcmStats::default(),
            audio: capture.then(Vec::new),
        }
    }

    /// A request the saturation gate did not send: `cap` requests were in flight.
    pub fn saturated(cap: usize) -> Exchange {
        let mut x = Exchange::start(Instant::now(), false);
        x.failure = Some(Failure {
            class: FailureClass::Saturated,
            message: saturated_message(cap),
        });
        x
    }

    /// Ends the request now as a failure.
    /// Ends the request as failed; once the run's stop was requested, whatever cut a
    /// request that was sent is the interruption's doing, not the server's.
    pub(crate) fn fail(&mut self, class: FailureClass, message: String) {
        self.end_at = Instant::now();
        let (class, message) = if dfx_core::stop::requested() && class != FailureClass::Saturated {
            (
                FailureClass::Interrupted,
                dfx_core::stop::cut_message(&message),
            )
        } else {
            (class, message)
        };
        self.failure = Some(Failure { class, message });
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
pub(crate) struct BodyCheck {
    analyzer: PcmAnalyzer,
    prefix: [u8; SNIFF_LEN],
    have: usize,
    sniffed: bool,
    max_body_bytes: u64,
}

impl BodyCheck {
    pub(crate) fn new(sample_rate: u32, max_body_bytes: u64) -> BodyCheck {
        BodyCheck {
            analyzer: PcmAnalyzer::new(sample_rate),
            prefix: [0; SNIFF_LEN],
            have: 0,
            sniffed: false,
            max_body_bytes,
        }
    }

    /// Takes one piece of body data into `x` (its bytes go to the latest chunk record).
    pub(crate) fn feed(
        &mut self,
        x: &mut Exchange,
        data: &[u8],
    ) -> Result<(), (FailureClass, String)> {
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
    pub(crate) fn finish(self) -> Result<PcmStats, (FailureClass, String)> {
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
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
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
