//! Measurements of the realtime backends (`docs/bench.md` ("Realtime")): per turn
//! (ttft, ttfp, generation time, duration, rtf, relative to the turn's first append), per
//! request (means over turns, Σ durations, E2EL over the whole request), and the records
//! written to `records.jsonl`.

use std::time::Instant;

use serde::Serialize;

use super::session::{Response, TurnError, TurnOutcome};
use crate::audio::onset::PcmStats;
use crate::metrics::{audio_duration, continuity, elapsed_ms, rtf, ttfa_audible, ttfp, ttft};
use crate::native::client::{Exchange, Failure, FailureClass};
use crate::native::record::{Dispatch, RequestRecord, Sample};

/// Rounds to 0.001 (upstream's rounding of every ms figure).
pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Upstream's audio frames of a request: duration × 24000, whatever the real rate.
pub(crate) const FRAMES_RATE: f64 = 24_000.0;

/// The figures of one successful turn.
#[derive(Debug, Clone, Serialize)]
pub struct TurnMetrics {
    /// The selected response's id.
    pub response_id: String,
    /// `client`, or `server` when the server's `response_request_metrics.ttft_ms` was used.
    pub source: String,
    /// Where ttft was measured from: the server's `measurement_origin`, else `turn_start`.
    pub measurement_origin: String,
    /// Time to the first transcript or text delta, ms from the turn start (the server's figure
    /// when it sent one); null when neither came.
    pub ttft_ms: Option<f64>,
    /// Time to the first audio delta, ms from the turn start.
    pub ttfp_ms: f64,
    /// Time to the last audio delta, ms from the turn start.
    pub audio_generation_ms: f64,
    /// Audio duration in ms: the largest `metadata.audio_duration_ms`, else from the decoded
    /// bytes at the response's sample rate.
    pub audio_duration_ms: f64,
    /// `audio_generation_ms / audio_duration_ms` (0 without audio), rounded to 1e-6.
    pub rtf: f64,
    /// Largest playback underrun of the selected response's audio deltas, ms (the
    /// continuity rule from the first delta at the response's rate); null when the
    /// timeline was cut at `max_deltas` (not measured).
    pub underrun_ms: Option<f64>,
    /// Stage-0 tokens from stage metrics, else the transcript's word count.
    pub output_tokens: u64,
    /// The selected response's transcript.
    pub transcript: String,
}

/// The metrics of a finished turn, or why it failed.
pub fn turn_metrics(o: &TurnOutcome) -> Result<TurnMetrics, (TurnError, String)> {
    if let Some(e) = &o.error {
        return Err(e.clone());
    }
    let start = o
        .turn_start
        .ok_or((TurnError::Handshake, "the turn never started".to_string()))?;
    let Some(r) = o.selected() else {
        let why = if o.responses.is_empty() {
            "response.done without a response.created (no announced response)"
        } else {
            "no announced response carried audio"
        };
        return Err((TurnError::NoAudio, why.into()));
    };
    let client_ttft = r.first_text.map(|t| ttft::ttft_ms(start, t));
    let ttft = o.server_ttft_ms.or(client_ttft).map(round3);
    let ttfp = round3(r.first_audio.map_or(0.0, |t| ttfp::ttfp_ms(start, t)));
    let gen_ms = round3(r.last_audio.map_or(0.0, |t| elapsed_ms(start, t)));
    // A zero `audio_duration_ms` is no report: the bytes decide.
    let reported = r.meta_ms.filter(|m| *m > 0.0);
    let dur = round3(audio_duration::reported_or_pcm_ms(
        reported, r.bytes, r.rate,
    ));
    let rtf = rtf::round6(rtf::rtf(gen_ms, dur));
    let underrun_ms = underrun_ms(r, start);
    let words = r.transcript.split_whitespace().count() as u64;
    Ok(TurnMetrics {
        response_id: r.id.clone(),
        source: if o.server_ttft_ms.is_some() {
            "server"
        } else {
            "client"
        }
        .into(),
        measurement_origin: o
            .measurement_origin
            .clone()
            .unwrap_or_else(|| "turn_start".into()),
        ttft_ms: ttft,
        ttfp_ms: ttfp,
        audio_generation_ms: gen_ms,
        audio_duration_ms: dur,
        rtf,
        underrun_ms,
        output_tokens: o.stage_tokens.unwrap_or(words),
        transcript: r.transcript.clone(),
    })
}

/// The response's largest underrun (`metrics::continuity`, 16-bit mono at its rate), ms
/// rounded to 0.001; `None` when its delta timeline is incomplete (capped) or has no
/// audio.
fn underrun_ms(r: &Response, start: Instant) -> Option<f64> {
    let timeline: Vec<(f64, u64)> = r
        .deltas
        .iter()
        .filter(|(_, b)| *b > 0)
        .map(|(t, b)| (elapsed_ms(start, *t) / 1000.0, *b))
        .collect();
    let seen: u64 = timeline.iter().map(|(_, b)| b).sum();
    if seen != r.bytes {
        return None;
    }
    let c = continuity::analyse(&timeline, f64::from(r.rate) * 2.0)?;
    Some(round3(c.max_underrun_s * 1000.0))
}

/// One turn in `records.jsonl`. Times are seconds from the request's start.
#[derive(Debug, Clone, Serialize)]
pub struct TurnRecord {
    /// Turn number within the request, from 0.
    pub turn: usize,
    /// Utterance id of the row the turn spoke.
    pub utterance_id: String,
    /// The server's session id, when it gave one.
    pub session_id: Option<String>,
    /// Connection attempts (retries of `resource_exhausted` included).
    pub attempts: u32,
    /// Time spent opening connections, all attempts, in seconds.
    pub connect_s: f64,
    /// When the turn began (before connecting).
    pub start_s: f64,
    /// Turn start (first append), null when the handshake failed.
    pub turn_start_s: Option<f64>,
    /// Silence appends sent (200 ms each).
    pub appends: u64,
    /// When the turn ended.
    pub end_s: f64,
    /// `session.closed` arrived after the client's `session.close`.
    pub closed: bool,
    /// The turn has metrics: no failure and a response with audio.
    pub ok: bool,
    /// `error_counts` key of the failure (`transport`, `handshake`, `server_error`, `timeout`,
    /// `no_audio`); null on success.
    pub error_class: Option<String>,
    /// Failure message; null on success.
    pub error: Option<String>,
    /// The turn's figures; null when it failed.
    pub metrics: Option<TurnMetrics>,
    /// Arrival (s from the turn start) and bytes of every audio delta of the selected
    /// response.
    pub audio_t_s: Vec<f64>,
    /// Bytes of every audio delta, in the order of `audio_t_s`.
    pub audio_bytes: Vec<u64>,
}

impl TurnRecord {
    /// The record of turn `turn` (row `utt`) relative to the request start `base`.
    pub fn new(turn: usize, utt: &str, o: &TurnOutcome, base: Instant) -> (Self, PcmStats) {
        let rel = |t: Instant| t.saturating_duration_since(base).as_secs_f64();
        let m = turn_metrics(o);
        let sel = o.selected();
        let ts = o.turn_start.unwrap_or(o.started);
        let (audio_t_s, audio_bytes) = sel
            .map(|r| {
                r.deltas
                    .iter()
                    .map(|(t, b)| (round3(t.saturating_duration_since(ts).as_secs_f64()), *b))
                    .unzip()
            })
            .unwrap_or_default();
        let pcm = sel.map(|r| r.pcm.finish()).unwrap_or_default();
        let (ok, class, err, metrics) = match m {
            Ok(m) => (true, None, None, Some(m)),
            Err((c, e)) => (false, Some(c.key().to_string()), Some(e), None),
        };
        let rec = TurnRecord {
            turn,
            utterance_id: utt.to_string(),
            session_id: o.session_id.clone(),
            attempts: o.attempts,
            connect_s: o.connect_s,
            start_s: rel(o.started),
            turn_start_s: o.turn_start.map(rel),
            appends: o.appends,
            end_s: rel(o.end),
            closed: o.closed,
            ok,
            error_class: class,
            error: err,
            metrics,
            audio_t_s,
            audio_bytes,
        };
        (rec, pcm)
    }
}

/// One request in `records.jsonl`: the TTS record's fields (with the realtime
/// definitions of ttfp, rtf, duration and frames) plus its TTFT, tokens and turns.
#[derive(Debug, Clone, Serialize)]
pub struct RealtimeRecord {
    /// The TTS record's fields, flattened into the same JSON object.
    #[serde(flatten)]
    pub base: RequestRecord,
    /// Mean turn ttft, seconds (0 when no turn had one).
    pub ttft_s: f64,
    /// Σ of the turns' output tokens; 0 when a turn failed.
    pub output_tokens: u64,
    /// `seed-tts-<request id>` (or `seed-tts-warmup-<i>`).
    pub duplex_session_id: String,
    /// The request's turns, in order.
    pub turns: Vec<TurnRecord>,
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Builds a request's record from its turns; `start`/`end` bound the whole request.
pub fn request_record(
    d: &Dispatch,
    sample: Sample,
    session_label: String,
    turns: Vec<TurnRecord>,
    pcm: PcmStats,
    span: (Instant, Instant),
    base: Instant,
) -> RealtimeRecord {
    let failed = turns.iter().find(|t| !t.ok);
    let x = Exchange {
        send_at: span.0,
        end_at: span.1,
        status: None,
        chunks: Vec::new(),
        bytes: 0,
        connect: None,
        failure: failed.map(|t| Failure {
            class: FailureClass::Transport,
            message: format!("turn {}: {}", t.turn, t.error.clone().unwrap_or_default()),
        }),
        pcm,
        audio: None,
    };
    let mut r = RequestRecord::new(d, sample, &x, base, FRAMES_RATE as u32);
    let ms: Vec<&TurnMetrics> = turns.iter().filter_map(|t| t.metrics.as_ref()).collect();
    let ttfts: Vec<f64> = ms.iter().filter_map(|m| m.ttft_ms).collect();
    let ttft_s = mean(&ttfts) / 1000.0;
    let ok = failed.is_none();
    r.end.error_class = failed.and_then(|t| t.error_class.clone());
    r.connect_s = Some(turns.iter().map(|t| t.connect_s).sum());
    if ok {
        let dur_s: f64 = ms.iter().map(|m| m.audio_duration_ms).sum::<f64>() / 1000.0;
        r.audio_s = dur_s;
        r.audio_frames = audio_duration::frames_at(dur_s, FRAMES_RATE);
        r.ttfp_s = Some(mean(&ms.iter().map(|m| m.ttfp_ms).collect::<Vec<_>>()) / 1000.0);
        r.rtf = Some(mean(&ms.iter().map(|m| m.rtf).collect::<Vec<_>>()));
        r.ttfa_audible_s = r
            .ttfp_s
            .map(|t| ttfa_audible::ttfa_audible_s(t, r.leading_silence_s));
        r.bytes = turns
            .iter()
            .map(|t| t.audio_bytes.iter().sum::<u64>())
            .sum();
        r.empty = false;
    }
    let output_tokens = if ok {
        ms.iter().map(|m| m.output_tokens).sum()
    } else {
        0
    };
    RealtimeRecord {
        base: r,
        ttft_s: if ok { ttft_s } else { 0.0 },
        output_tokens,
        duplex_session_id: session_label,
        turns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::onset::PcmAnalyzer;
    use std::time::Duration;

    /// A response of 24 kHz audio whose deltas of `bytes` arrive at `at_s` after `start`.
    fn response(start: Instant, deltas: &[(f64, u64)]) -> Response {
        Response {
            id: "r".into(),
            first_text: None,
            transcript: String::new(),
            deltas: (deltas.iter())
                .map(|(t, b)| (start + Duration::from_secs_f64(*t), *b))
                .collect(),
            bytes: deltas.iter().map(|(_, b)| b).sum(),
            first_audio: None,
            last_audio: None,
            meta_ms: None,
            rate: 24_000,
            done: true,
            pcm: PcmAnalyzer::new(24_000),
        }
    }

    /// `metrics::continuity`'s worked example on a turn's deltas (0.1 s deltas of 4800 B
    /// at 48 000 B/s): the delta at 0.9 s comes 0.5 s after the player ran dry. An empty
    /// delta is no read; a timeline cut at `max_deltas` (fewer bytes than received) is
    /// not measured.
    #[test]
    fn a_turn_underrun_is_the_continuity_rule_on_its_deltas() {
        let start = Instant::now();
        let tl = [
            (0.10, 4800),
            (0.15, 4800),
            (0.2, 0),
            (0.30, 4800),
            (0.90, 4800),
            (0.95, 4800),
        ];
        assert_eq!(underrun_ms(&response(start, &tl), start), Some(500.0));
        let steady: Vec<(f64, u64)> = (0..5).map(|i| (0.1 * f64::from(i), 4800)).collect();
        assert_eq!(underrun_ms(&response(start, &steady), start), Some(0.0));
        let mut capped = response(start, &tl);
        capped.bytes += 4800;
        assert_eq!(underrun_ms(&capped, start), None);
        assert_eq!(underrun_ms(&response(start, &[]), start), None);
    }
}
