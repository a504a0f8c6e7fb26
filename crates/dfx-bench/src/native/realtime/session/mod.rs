//! One turn = one WebSocket session (`docs/bench.md` ("Realtime")): connect and handshake
//! (retrying `resource_exhausted` with backoff), stream silence in real time until the
//! server's own response is done, acknowledge playback, close and wait for
//! `session.closed`. Every wait is bounded.

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;

use super::conn::{AudioEv, Conn, Ev};
use super::protocol::{self as p, APPEND_MS, OUTPUT_RATE_HZ};
use crate::audio::onset::PcmAnalyzer;
use crate::native::stall::{Progress, StallRule};
use crate::native::ws::connect;

/// Responses tracked per turn at most (later `response.created`s are ignored).
pub(crate) const MAX_RESPONSES: usize = 256;

/// The bounds of a turn (upstream's values by default).
#[derive(Debug, Clone, Copy)]
pub struct TurnLimits {
    /// Wait for `session.created` after `session.update` (120 s).
    pub handshake: Duration,
    /// How long `resource_exhausted` is retried from the first attempt (120 s).
    pub retry_for: Duration,
    /// First retry delay (0.25 s), doubled up to [`TurnLimits::backoff_max`].
    pub backoff: Duration,
    /// Largest retry delay (2 s).
    pub backoff_max: Duration,
    /// Wall time between two appends of 200 ms of input audio: 200 ms in real time, 200/K
    /// ms time-lapsed ([`TimeLapse`](crate::native::lapse::TimeLapse)).
    pub append_every: Duration,
    /// Appends at most (150 × 200 ms = 30 s of audio).
    pub max_appends: u64,
    /// Wait for `response.done` once the appends stopped (180 s).
    pub wait_after: Duration,
    /// Wait for `session.closed` after `session.close` (30 s).
    pub close_wait: Duration,
    /// Largest server message and frame (64 MiB).
    pub max_message: usize,
    /// Audio deltas timed per response at most (a longer timeline keeps its totals).
    pub max_deltas: usize,
    /// Once audio has started, the fewest audio bytes per window (`--stall-window`,
    /// `--stall-floor`): a turn whose audio stops or trickles fails as `stall`.
    pub stall: StallRule,
}

impl Default for TurnLimits {
    fn default() -> Self {
        TurnLimits {
            handshake: Duration::from_secs(120),
            retry_for: Duration::from_secs(120),
            backoff: Duration::from_millis(250),
            backoff_max: Duration::from_secs(2),
            append_every: Duration::from_millis(APPEND_MS),
            max_appends: 150,
            wait_after: Duration::from_secs(180),
            close_wait: Duration::from_secs(30),
            max_message: crate::native::ws::MAX_MESSAGE,
            max_deltas: 100_000,
            stall: StallRule::DEFAULT,
        }
    }
}

/// Why a turn failed (`error_counts` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnError {
    /// Connection refused or lost.
    Transport,
    /// `session.created` never came, or the handshake was refused.
    Handshake,
    /// An `error` event during the turn.
    Server,
    /// No `response.done` in time.
    Timeout,
    /// The audio stopped or trickled below the stall rule's floor.
    Stall,
    /// A response ended without announced audio (`response.created` missing, or no audio).
    NoAudio,
    /// Cut by the suite's interruption ([`dfx_core::stop`]): not the server's failure.
    Interrupted,
}

impl TurnError {
    /// The `error_counts` key.
    pub fn key(self) -> &'static str {
        match self {
            TurnError::Transport => "transport",
            TurnError::Handshake => "handshake",
            TurnError::Server => "server_error",
            TurnError::Timeout => "timeout",
            TurnError::Stall => "stall",
            TurnError::NoAudio => "no_audio",
            TurnError::Interrupted => "interrupted",
        }
    }
}

/// A response as the client saw it.
#[derive(Debug, Clone)]
pub struct Response {
    /// The response's id (from `response.created`).
    pub id: String,
    /// Arrival of its first non-empty transcript or text delta.
    pub first_text: Option<Instant>,
    /// Its transcript and text deltas, concatenated (kept up to 1 MiB).
    pub transcript: String,
    /// `(arrival, decoded bytes)` of each audio delta (at most `max_deltas`).
    pub deltas: Vec<(Instant, u64)>,
    /// Decoded audio bytes received, over all its deltas.
    pub bytes: u64,
    /// Arrival of its first non-empty audio delta.
    pub first_audio: Option<Instant>,
    /// Arrival of its last non-empty audio delta.
    pub last_audio: Option<Instant>,
    /// Largest `metadata.audio_duration_ms` seen.
    pub meta_ms: Option<f64>,
    /// Sample rate of its audio in Hz: `sample_rate_hz` of a delta before its first audio,
    /// else 24000.
    pub rate: u32,
    /// A `response.done` named it.
    pub done: bool,
    /// Onset, level and silence analysis of its decoded audio.
    pub pcm: PcmAnalyzer,
}

/// Everything observed in one turn.
#[derive(Debug)]
pub struct TurnOutcome {
    /// When the turn began, before the first connection attempt.
    pub started: Instant,
    /// Time spent opening connections (all attempts), seconds.
    pub connect_s: f64,
    /// Connection attempts made (retries of `resource_exhausted` included).
    pub attempts: u32,
    /// The server's session id from `session.created`, when it gave one.
    pub session_id: Option<String>,
    /// Just before the first append.
    pub turn_start: Option<Instant>,
    /// Silence appends sent (200 ms of audio each).
    pub appends: u64,
    /// In order of `response.created`.
    pub responses: Vec<Response>,
    /// The server's `response_request_metrics.ttft_ms`, when it sent one.
    pub server_ttft_ms: Option<f64>,
    /// The server's `response_request_metrics.measurement_origin` (first 100 characters).
    pub measurement_origin: Option<String>,
    /// Sum of the stage-0 `num_tokens_out` of the `response.done` events' stage metrics.
    pub stage_tokens: Option<u64>,
    /// `session.closed` arrived after the client's `session.close`.
    pub closed: bool,
    /// When the turn ended (closed, failed or timed out).
    pub end: Instant,
    /// The first failure and its message; `None` when the turn succeeded.
    pub error: Option<(TurnError, String)>,
}

impl TurnOutcome {
    /// A turn beginning `now`: nothing observed yet.
    fn begin(now: Instant) -> Self {
        TurnOutcome {
            started: now,
            connect_s: 0.0,
            attempts: 0,
            session_id: None,
            turn_start: None,
            appends: 0,
            responses: Vec::new(),
            server_ttft_ms: None,
            measurement_origin: None,
            stage_tokens: None,
            closed: false,
            end: now,
            error: None,
        }
    }

    fn fail(&mut self, class: TurnError, msg: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some((class, msg.into()));
        }
    }

    /// The first response (creation order) that received audio.
    pub fn selected(&self) -> Option<&Response> {
        self.responses.iter().find(|r| r.bytes > 0)
    }
}

/// Runs one turn: `url` is the `ws://…/v1/realtime?…` address, `update` the
/// `session.update` text without its event id (one is added per attempt).
pub async fn run_turn(
    url: &str,
    update: &serde_json::Map<String, Value>,
    lim: &TurnLimits,
) -> TurnOutcome {
    let update = p::EventText::new(update.clone());
    run_turn_with(url, &update, lim, &|_| {}).await
}

/// [`run_turn`], telling `progressed` whenever the turn's audio made progress (the step's
/// stall rule, `crate::native::stall`).
pub(crate) async fn run_turn_with(
    url: &str,
    update: &p::EventText,
    lim: &TurnLimits,
    progressed: &(dyn Fn(Instant) + Send + Sync),
) -> TurnOutcome {
    let mut out = TurnOutcome::begin(Instant::now());
    if let Some(mut c) = handshake(url, update, lim, &mut out).await {
        stream_turn(&mut c, lim, &mut out, progressed).await;
        if !matches!(out.error, Some((TurnError::Transport, _))) {
            finish(&mut c, lim, &mut out).await;
        }
    }
    out.end = Instant::now();
    out
}

/// Opens the session; `None` (with the failure in `out`) when it could not be opened.
async fn handshake(
    url: &str,
    update: &p::EventText,
    lim: &TurnLimits,
    out: &mut TurnOutcome,
) -> Option<Conn> {
    let first = Instant::now();
    let mut backoff = lim.backoff;
    loop {
        out.attempts += 1;
        let t = Instant::now();
        let ws = match connect(url, lim.max_message, lim.handshake).await {
            Ok(ws) => ws,
            Err(e) => {
                out.fail(TurnError::Transport, e.to_string());
                return None;
            }
        };
        out.connect_s += t.elapsed().as_secs_f64();
        let mut c = Conn::new(ws);
        match await_created(&mut c, update, lim).await {
            Ok(id) => {
                out.session_id = id;
                return Some(c);
            }
            Err((code, msg)) => {
                let _ = c.ws.close(None).await;
                let retry =
                    code == "resource_exhausted" && first.elapsed() + backoff < lim.retry_for;
                if !retry {
                    let what = if code.is_empty() {
                        msg
                    } else {
                        format!("{code}: {msg}")
                    };
                    out.fail(TurnError::Handshake, format!("handshake failed: {what}"));
                    return None;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(lim.backoff_max);
            }
        }
    }
}

/// Sends `session.update` and waits for `session.created`: its session id, or the error
/// code and message.
async fn await_created(
    c: &mut Conn,
    update: &p::EventText,
    lim: &TurnLimits,
) -> Result<Option<String>, (String, String)> {
    c.send(update.with_event_id())
        .await
        .map_err(|e| (String::new(), e.to_string()))?;
    let deadline = tokio::time::Instant::now() + lim.handshake;
    loop {
        let ev = tokio::time::timeout_at(deadline, c.next_acked())
            .await
            .map_err(|_| {
                (
                    String::new(),
                    format!("no session.created within {:?}", lim.handshake),
                )
            })?;
        let v = match ev {
            Ev::Json(v) => v,
            Ev::Audio(_) => continue,
            Ev::Ended(why) => return Err((String::new(), why)),
        };
        match v.get("type").and_then(Value::as_str) {
            Some("session.created") => {
                let s = v.get("session");
                let id = s
                    .and_then(|s| s.get("session_id").or_else(|| s.get("id")))
                    .and_then(Value::as_str)
                    .map(String::from);
                return Ok(id);
            }
            Some("error") => return Err(p::error_of(&v)),
            _ => {}
        }
    }
}

/// Appends silence every 200 ms (absolute schedule) until a `response.done` or an
/// `error`, at most `max_appends`, then waits at most `wait_after`.
async fn stream_turn(
    c: &mut Conn,
    lim: &TurnLimits,
    out: &mut TurnOutcome,
    progressed: &(dyn Fn(Instant) + Send + Sync),
) {
    let start = Instant::now();
    out.turn_start = Some(start);
    let start_t = tokio::time::Instant::from_std(start);
    // The first append goes at once: a timer whose deadline is already due still waits
    // for the runtime's next millisecond tick (about 1 ms), which would sit inside every
    // turn's TTFP (vllm bench's clock starts at its first append too).
    if lim.max_appends > 0 {
        out.appends = 1;
        if let Err(e) = c.send(p::append(1)).await {
            out.fail(TurnError::Transport, e.to_string());
            return;
        }
    }
    let mut wait_until: Option<tokio::time::Instant> = None;
    let mut progress = Progress::default();
    loop {
        if let Err(e) = c.flush_acks().await {
            out.fail(TurnError::Transport, e.to_string());
            return;
        }
        let appending = out.appends < lim.max_appends;
        if !appending && wait_until.is_none() {
            wait_until = Some(tokio::time::Instant::now() + lim.wait_after);
        }
        let next_append = start_t + lim.append_every.saturating_mul(sat_u32(out.appends));
        let far = tokio::time::Instant::now() + Duration::from_secs(86_400);
        let stall_at = progress.due(&lim.stall).map(tokio::time::Instant::from_std);
        tokio::select! {
            _ = tokio::time::sleep_until(stall_at.unwrap_or(far)), if stall_at.is_some() => {
                out.fail(TurnError::Stall, progress.message(&lim.stall, audio_bytes(out)));
                return;
            }
            _ = tokio::time::sleep_until(next_append), if appending => {
                out.appends += 1;
                if let Err(e) = c.send(p::append(out.appends)).await {
                    out.fail(TurnError::Transport, e.to_string());
                    return;
                }
            }
            _ = tokio::time::sleep_until(wait_until.unwrap_or(far)), if !appending => {
                out.fail(TurnError::Timeout, format!(
                    "no response.done within {:?} after {} ms of input audio",
                    lim.wait_after, lim.max_appends * APPEND_MS));
                return;
            }
            ev = c.next() => {
                let done = match ev {
                    Ev::Ended(why) => { out.fail(TurnError::Transport, why); return; }
                    Ev::Json(v) => on_event(&v, lim, out),
                    Ev::Audio(a) => { on_audio(&a, &c.rd.pcm, lim, out); false }
                };
                let now = Instant::now();
                if progress.advance(&lim.stall, audio_bytes(out), now) {
                    progressed(now);
                }
                if done { return; }
            }
        }
    }
}

/// `n` as a `u32` multiplier (appends are bounded by `max_appends`, far below).
fn sat_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Decoded audio bytes of every response of the turn so far.
fn audio_bytes(out: &TurnOutcome) -> u64 {
    out.responses.iter().map(|r| r.bytes).sum()
}

/// Handles one server event of the turn; `true` when the turn's response phase is over.
fn on_event(v: &Value, lim: &TurnLimits, out: &mut TurnOutcome) -> bool {
    let now = Instant::now();
    if let Some(m) = p::request_metrics(v) {
        if let Some(t) = m
            .get("ttft_ms")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite())
        {
            out.server_ttft_ms = Some(t);
        }
        if let Some(o) = m.get("measurement_origin").and_then(Value::as_str) {
            out.measurement_origin = Some(o.chars().take(100).collect());
        }
    }
    let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
    let rid = p::response_id(v).map(String::from);
    let find = |out: &mut TurnOutcome| -> Option<usize> {
        let id = rid.as_deref()?;
        out.responses.iter().position(|r| r.id == id)
    };
    match kind {
        "response.created" => {
            let room = out.responses.len() < MAX_RESPONSES;
            if let Some(id) = rid.clone().filter(|_| room && find(out).is_none()) {
                out.responses.push(new_response(id));
            }
        }
        "response.output_audio_transcript.delta"
        | "response.output_text.delta"
        | "response.text.delta" => {
            let delta = v.get("delta").and_then(Value::as_str).unwrap_or_default();
            if let Some(i) = find(out).filter(|_| !delta.is_empty()) {
                let r = &mut out.responses[i];
                r.first_text.get_or_insert(now);
                if r.transcript.len() < 1 << 20 {
                    r.transcript.push_str(delta);
                }
            }
        }
        "response.output_audio.delta" => {
            if let Some(i) = find(out) {
                audio_delta(&mut out.responses[i], v, now, lim.max_deltas);
            }
        }
        "response.done" => {
            if let Some(t) = p::stage0_tokens(v) {
                out.stage_tokens = Some(out.stage_tokens.unwrap_or(0) + t);
            }
            if let Some(i) = find(out) {
                out.responses[i].done = true;
            }
            return true;
        }
        "error" => {
            let (code, msg) = p::error_of(v);
            out.fail(
                TurnError::Server,
                format!("server error during the turn: {code}: {msg}"),
            );
            return true;
        }
        _ => {}
    }
    false
}

fn new_response(id: String) -> Response {
    Response {
        id,
        first_text: None,
        transcript: String::new(),
        deltas: Vec::new(),
        bytes: 0,
        first_audio: None,
        last_audio: None,
        meta_ms: None,
        rate: OUTPUT_RATE_HZ,
        done: false,
        pcm: PcmAnalyzer::new(OUTPUT_RATE_HZ),
    }
}

/// [`on_event`] for an audio delta read without a `Value` (`super::event`, which leaves the
/// events with server metrics to `on_event`); its decoded audio is `pcm[..a.pcm_len]`.
fn on_audio(a: &AudioEv, pcm: &[u8], lim: &TurnLimits, out: &mut TurnOutcome) {
    let Some(id) = a.response_id.as_deref() else {
        return;
    };
    let Some(r) = out.responses.iter_mut().find(|r| r.id == id) else {
        return;
    };
    let Some(n) = a.pcm_len else {
        return;
    };
    let fields = (a.sample_rate_hz, a.meta_ms);
    add_audio(r, &pcm[..n], fields, a.at, lim.max_deltas);
}

fn audio_delta(r: &mut Response, v: &Value, now: Instant, max_deltas: usize) {
    let b64 = v.get("delta").and_then(Value::as_str).unwrap_or_default();
    let Ok(pcm) = base64::engine::general_purpose::STANDARD.decode(b64) else {
        return;
    };
    let rate = v.get("sample_rate_hz").and_then(Value::as_u64);
    let ms = v
        .get("metadata")
        .and_then(|m| m.get("audio_duration_ms"))
        .and_then(Value::as_f64);
    add_audio(r, &pcm, (rate, ms), now, max_deltas);
}

/// Adds a delta's decoded audio `pcm`, its `sample_rate_hz` and
/// `metadata.audio_duration_ms` (when numbers) to `r`.
fn add_audio(
    r: &mut Response,
    pcm: &[u8],
    (rate, ms): (Option<u64>, Option<f64>),
    now: Instant,
    max_deltas: usize,
) {
    if let Some(rate) = rate
        && (1..=384_000).contains(&rate)
        && r.bytes == 0
    {
        r.rate = rate as u32;
        r.pcm = PcmAnalyzer::new(r.rate);
    }
    if let Some(ms) = ms.filter(|m| m.is_finite() && *m >= 0.0) {
        r.meta_ms = Some(r.meta_ms.map_or(ms, |m| m.max(ms)));
    }
    if pcm.is_empty() {
        return;
    }
    r.first_audio.get_or_insert(now);
    r.last_audio = Some(now);
    r.bytes += pcm.len() as u64;
    r.pcm.feed(pcm);
    if r.deltas.len() < max_deltas {
        r.deltas.push((now, pcm.len() as u64));
    }
}

/// Acknowledges playback of every response with audio, then closes the session and waits
/// (bounded) for `session.closed`.
async fn finish(c: &mut Conn, lim: &TurnLimits, out: &mut TurnOutcome) {
    let _ = c.flush_acks().await;
    if out.error.is_none() {
        let acks: Vec<String> = out
            .responses
            .iter()
            .filter(|r| r.bytes > 0)
            .map(|r| {
                let ms = r.bytes as f64 / (f64::from(r.rate.max(1)) * 2.0) * 1000.0;
                p::playback_ack(&r.id, ms as u64)
            })
            .collect();
        for a in acks {
            // They leave with `session.close`: one write.
            let _ = c.queue(a).await;
        }
    }
    if c.send(p::session_close()).await.is_ok() {
        let deadline = tokio::time::Instant::now() + lim.close_wait;
        loop {
            match tokio::time::timeout_at(deadline, c.next_acked()).await {
                Ok(Ev::Json(v))
                    if v.get("type").and_then(Value::as_str) == Some("session.closed") =>
                {
                    out.closed = true;
                    break;
                }
                Ok(Ev::Json(_) | Ev::Audio(_)) => {}
                Ok(Ev::Ended(_)) | Err(_) => break,
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), c.ws.close(None)).await;
}

#[cfg(test)]
mod tests;
