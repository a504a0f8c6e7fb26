//! Per-turn figures of a native-duplex session, as upstream's `RealtimeEventCollector.
//! timing_summary` computes its `request_metrics` (`vllm_omni/experimental/fullduplex/
//! client.py`): every time is measured from the client's send of
//! `input_audio_buffer.commit`.

use std::time::Instant;

use crate::native::lapse::TimeLapse;

use serde::Serialize;

use crate::metrics::{audio_duration, elapsed_ms, rtf, ttfp, ttft};

/// A response as the client saw it (arrival times of its events).
#[derive(Debug, Clone)]
pub(crate) struct Resp {
    pub id: String,
    pub created: Instant,
    pub first_text: Option<Instant>,
    pub transcript_chars: usize,
    pub first_audio: Option<Instant>,
    pub last_audio: Option<Instant>,
    /// Decoded audio bytes of every non-empty delta.
    pub bytes: u64,
    pub deltas: u64,
    /// Largest `metadata.audio_duration_ms` (cumulative) seen.
    pub meta_ms: Option<f64>,
    /// `sample_rate_hz` of the deltas (upstream's collector default 24000).
    pub rate: u32,
    pub done: Option<Instant>,
    /// `response.metadata.playback.sent_ms` of its `response.done`.
    pub sent_ms: Option<u64>,
}

impl Resp {
    /// A copy on the real-time scale ([`TimeLapse`]) from `base`: its creation, first
    /// text, first and last audio and completion times mapped.
    pub(crate) fn lapsed(&self, k: TimeLapse, base: Instant) -> Resp {
        let at = |t: Instant| k.instant(base, t);
        Resp {
            created: at(self.created),
            first_text: self.first_text.map(at),
            first_audio: self.first_audio.map(at),
            last_audio: self.last_audio.map(at),
            done: self.done.map(at),
            ..self.clone()
        }
    }

    /// A response created at `at`.
    pub(crate) fn new(id: String, at: Instant, rate: u32) -> Self {
        Resp {
            id,
            created: at,
            first_text: None,
            transcript_chars: 0,
            first_audio: None,
            last_audio: None,
            bytes: 0,
            deltas: 0,
            meta_ms: None,
            rate,
            done: None,
            sent_ms: None,
        }
    }

    /// Upstream's eligibility in response-required mode: done, with audio and a
    /// non-empty transcript.
    pub(crate) fn eligible(&self) -> bool {
        self.done.is_some() && self.bytes > 0 && self.transcript_chars > 0
    }

    /// Emitted audio, ms: the largest cumulative `metadata.audio_duration_ms`, else the
    /// bytes at the delta's rate (PCM16 mono).
    pub(crate) fn audio_duration_ms(&self) -> f64 {
        audio_duration::reported_or_pcm_ms(self.meta_ms, self.bytes, self.rate)
    }
}

/// One turn of one session (a `records.jsonl` line with `"kind": "turn"`).
#[derive(Debug, Clone, Serialize)]
pub struct TurnRecord {
    pub kind: &'static str,
    /// Index among all trials of the entry (warmups first, as upstream's `trial`).
    pub trial: usize,
    pub warmup: bool,
    pub session: usize,
    pub turn: usize,
    pub ok: bool,
    pub error: Option<String>,
    pub response_id: Option<String>,
    /// Seconds since the start of the trial.
    pub commit_s: f64,
    pub created_s: Option<f64>,
    pub first_text_s: Option<f64>,
    pub first_audio_s: Option<f64>,
    pub last_audio_s: Option<f64>,
    pub done_s: Option<f64>,
    pub audio_bytes: u64,
    pub audio_deltas: u64,
    pub transcript_chars: usize,
    /// Commit send → first non-empty text/transcript delta.
    pub ttft_ms: Option<f64>,
    /// Commit send → first audio delta.
    pub ttfp_ms: Option<f64>,
    /// Commit send → last audio delta.
    pub audio_generation_ms: Option<f64>,
    pub audio_duration_ms: Option<f64>,
    /// `audio_generation_ms / audio_duration_ms` (null without audio).
    pub rtf: Option<f64>,
}

/// Rounds to 3 decimals (upstream's `_rounded_ms`).
pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Where a turn happened: trial, session and turn indices, and the trial's start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TurnAt {
    pub trial: usize,
    pub warmup: bool,
    pub session: usize,
    pub turn: usize,
    pub base: Instant,
    /// Observed times go to the real-time scale through it.
    pub lapse: TimeLapse,
}

/// The record of a turn committed at `commit` whose response is `r` (`None` when none
/// became eligible), failing with `error` if given.
pub(crate) fn turn_record(
    at: TurnAt,
    commit: Instant,
    r: Option<&Resp>,
    error: Option<String>,
) -> TurnRecord {
    let lapsed = r.map(|r| r.lapsed(at.lapse, at.base));
    let (commit, r) = (at.lapse.instant(at.base, commit), lapsed.as_ref());
    let rel = |t: Instant| t.saturating_duration_since(at.base).as_secs_f64();
    let since =
        |t: Option<Instant>, f: fn(Instant, Instant) -> f64| t.map(|t| round3(f(commit, t)));
    let duration = r
        .filter(|r| r.first_audio.is_some())
        .map(|r| round3(r.audio_duration_ms()));
    let generation = r.and_then(|r| since(r.last_audio, elapsed_ms));
    TurnRecord {
        kind: "turn",
        trial: at.trial,
        warmup: at.warmup,
        session: at.session,
        turn: at.turn,
        ok: error.is_none() && r.is_some_and(Resp::eligible),
        error,
        response_id: r.map(|r| r.id.clone()),
        commit_s: rel(commit),
        created_s: r.map(|r| rel(r.created)),
        first_text_s: r.and_then(|r| r.first_text.map(rel)),
        first_audio_s: r.and_then(|r| r.first_audio.map(rel)),
        last_audio_s: r.and_then(|r| r.last_audio.map(rel)),
        done_s: r.and_then(|r| r.done.map(rel)),
        audio_bytes: r.map_or(0, |r| r.bytes),
        audio_deltas: r.map_or(0, |r| r.deltas),
        transcript_chars: r.map_or(0, |r| r.transcript_chars),
        ttft_ms: r.and_then(|r| since(r.first_text, ttft::ttft_ms)),
        ttfp_ms: r.and_then(|r| since(r.first_audio, ttfp::ttfp_ms)),
        audio_generation_ms: generation,
        audio_duration_ms: duration,
        rtf: match (generation, duration) {
            (Some(g), Some(d)) if d > 0.0 => Some(rtf::round6(rtf::rtf(g, d))),
            _ => None,
        },
    }
}
