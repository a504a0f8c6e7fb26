//! Per-request records: what `records.jsonl` holds, one line per request (written by
//! the crate's records sink, `native::sink`).

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::client::Exchange;
use super::quality::QualityRow;
use crate::audio::pcm::{self, CHANNELS, SAMPLE_WIDTH};
use crate::metrics::continuity::{self, DEFAULT_THRESHOLD_S, VERDICT_THRESHOLDS_S};
use crate::metrics::{audio_duration, e2el, rtf, ttfa_audible, ttfp};

/// When and how a request was scheduled, in the driver's clock.
#[derive(Debug, Clone, Copy)]
pub struct Dispatch {
    /// Index within its phase (measured requests: the `x-request-id` suffix).
    pub index: usize,
    /// A warmup request (sent before the measured phase, not counted in the metrics).
    pub warmup: bool,
    /// When the schedule wanted it sent (open loop: its deadline; closed loop: when its
    /// worker became free).
    pub planned: Instant,
    /// When the driver handed it to the runtime.
    pub dispatched: Instant,
    /// When it got its concurrency slot.
    pub slot: Instant,
    /// `Some(cap)` when the saturation gate found `cap` requests in flight at its
    /// deadline: it is not sent, and its record is a failure.
    pub saturated: Option<usize>,
}

/// Identity of the row a request sent.
#[derive(Debug, Clone)]
pub struct Sample {
    /// `x-request-id` sent with it (`<request_id_prefix><index>`); `None` for warmups.
    pub request_id: Option<String>,
    /// The row's utterance id from the dataset's `meta.lst`.
    pub sample_id: String,
    /// Length of the text sent, in characters (a realtime request: all its turns' texts).
    pub text_len: usize,
    /// What the quality manifest says of the row, when the entry keeps audio.
    pub quality: Option<Arc<QualityRow>>,
}

/// Where a request stands in its phase: the first keys of every protocol's record.
#[derive(Debug, Clone, Serialize)]
pub struct Identity {
    /// Index within its phase (measured requests: the `x-request-id` suffix).
    pub index: usize,
    /// A warmup request (not counted in the metrics).
    pub warmup: bool,
    /// `x-request-id` sent with it; null for warmups.
    pub request_id: Option<String>,
}

impl Identity {
    /// The identity of the request `d` scheduled.
    pub fn new(d: &Dispatch, request_id: Option<String>) -> Self {
        Identity {
            index: d.index,
            warmup: d.warmup,
            request_id,
        }
    }
}

/// When a request was planned and sent: seconds from the start of its phase (warmup or
/// measured), the same keys in every protocol's record.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sending {
    /// When the schedule wanted it sent.
    pub planned_send_s: f64,
    /// When it was sent (the clock read right before sending).
    pub actual_send_s: f64,
    /// Waiting for a concurrency slot (client queueing, not latency).
    pub queue_s: f64,
    /// Not sent: the saturation gate found the open-loop cap full at `planned_send_s`
    /// (`actual_send_s` is then when it was refused).
    pub saturated: bool,
    /// Send lag not explained by queueing: actual − planned − queue.
    pub lag_s: f64,
}

impl Sending {
    /// The schedule of the request `d` dispatched and the transport sent at `send_at`.
    pub fn new(d: &Dispatch, send_at: Instant, base: Instant) -> Self {
        let queue_s = d.slot.saturating_duration_since(d.dispatched).as_secs_f64();
        let lag_s = (send_at.saturating_duration_since(d.planned).as_secs_f64() - queue_s).max(0.0);
        Sending {
            planned_send_s: since(base, d.planned),
            actual_send_s: since(base, send_at),
            queue_s,
            saturated: d.saturated.is_some(),
            lag_s,
        }
    }
}

/// How a request ended: the same keys in every protocol's record.
#[derive(Debug, Clone, Serialize)]
pub struct Ending {
    /// When the request ended (end of body, or the failure), seconds from its phase's start.
    pub end_s: f64,
    /// HTTP status of the response; null when no response head arrived (or no HTTP).
    pub status: Option<u16>,
    /// Whether it succeeded.
    pub ok: bool,
    /// `error_counts` key of the failure; null on success.
    pub error_class: Option<String>,
    /// Failure message; null on success.
    pub error: Option<String>,
}

impl Ending {
    /// The end at `end_at` with `status`, failed with `(class key, message)` or not.
    pub fn new(
        end_at: Instant,
        base: Instant,
        status: Option<u16>,
        failure: Option<(String, String)>,
    ) -> Self {
        let (error_class, error) = failure.unzip();
        Ending {
            end_s: since(base, end_at),
            status,
            ok: error.is_none(),
            error_class,
            error,
        }
    }
}

/// Seconds from `base` to `t` (0 when `t` is earlier).
fn since(base: Instant, t: Instant) -> f64 {
    t.saturating_duration_since(base).as_secs_f64()
}

/// What a step's closing reads of any protocol's per-request record: the parts every
/// record shares.
pub(crate) trait PhaseRecord {
    /// Where it stands in its phase.
    fn identity(&self) -> &Identity;
    /// When it was planned and sent.
    fn sending(&self) -> &Sending;
    /// How it ended.
    fn ending(&self) -> &Ending;
    /// A warmup request.
    fn warmup(&self) -> bool {
        self.identity().warmup
    }
    /// Index within its phase.
    fn index(&self) -> usize {
        self.identity().index
    }
    /// Whether it succeeded.
    fn ok(&self) -> bool {
        self.ending().ok
    }
    /// When its schedule planned it, seconds from the phase's start.
    fn planned_send_s(&self) -> f64 {
        self.sending().planned_send_s
    }
    /// When it was sent, seconds from the phase's start.
    fn actual_send_s(&self) -> f64 {
        self.sending().actual_send_s
    }
    /// The saturation gate refused it (never sent).
    fn saturated(&self) -> bool {
        self.sending().saturated
    }
    /// Its failure message; `None` on success.
    fn error(&self) -> Option<&String> {
        self.ending().error.as_ref()
    }
}

/// Implements [`PhaseRecord`] for a record type with the shared parts as its fields `id`,
/// `sent` and `end`.
macro_rules! phase_record {
    ($record:ty) => {
        impl $crate::native::record::PhaseRecord for $record {
            fn identity(&self) -> &$crate::native::record::Identity {
                &self.id
            }
            fn sending(&self) -> &$crate::native::record::Sending {
                &self.sent
            }
            fn ending(&self) -> &$crate::native::record::Ending {
                &self.end
            }
        }
    };
}
pub(crate) use phase_record;

phase_record!(RequestRecord);

/// One request, as written to `records.jsonl`. Times are seconds relative to the start of
/// the request's phase (warmup or measured).
#[derive(Debug, Clone, Serialize)]
pub struct RequestRecord {
    /// Index, warmup, request id.
    #[serde(flatten)]
    pub id: Identity,
    /// The row's utterance id from the dataset's `meta.lst`.
    pub sample_id: String,
    /// Length of the text sent, in characters.
    pub text_len: usize,
    /// The schedule: planned and actual send, queueing, the gate, lag.
    #[serde(flatten)]
    pub sent: Sending,
    /// Part of the lag before the request reached the runtime (open loop: the dispatcher
    /// thread woke late); the rest is the runtime picking the request up.
    pub dispatch_lag_s: f64,
    /// Connection set-up when this request opened a connection, else null.
    pub connect_s: Option<f64>,
    /// The end: time, HTTP status (null when no response head arrived), success (HTTP
    /// 200 and the whole raw-PCM body read, an empty body included), the `error_counts` key
    /// (`http_500`, `transport`, `stall`, `timeout`, `oversize`, `not_pcm`, `saturated`) and
    /// message of a failure.
    #[serde(flatten)]
    pub end: Ending,
    /// A 200 with an empty body (a success with zero audio, upstream compatible).
    pub empty: bool,
    /// Body bytes received.
    pub bytes: u64,
    /// Output sample rate (Hz) every audio figure uses (`--sample-rate` or the model's).
    pub sample_rate: u32,
    /// Bytes per PCM sample (s16le: 2).
    pub sample_width: u32,
    /// PCM channels (mono: 1).
    pub channels: u32,
    /// PCM frames in the body; 0 for a failure.
    pub audio_frames: u64,
    /// Audio duration in seconds: `audio_frames / sample_rate`.
    pub audio_s: f64,
    /// First non-empty read − send; null when nothing arrived.
    pub ttfp_s: Option<f64>,
    /// End of body − send (successes only).
    pub e2el_s: Option<f64>,
    /// `e2el_s / audio_s` (0 without audio); null for a failure.
    pub rtf: Option<f64>,
    /// Largest playback deficit; null when not measured (failure or empty body).
    pub underrun_s: Option<f64>,
    /// Chunks that arrived after the player had run dry; null when not measured.
    pub underrun_events: Option<u32>,
    /// No underrun longer than 50 ms; null when not measured.
    pub continuous_50ms: Option<bool>,
    /// No underrun longer than 100 ms (upstream's `continuous` threshold); null when not
    /// measured.
    pub continuous_100ms: Option<bool>,
    /// No underrun longer than 200 ms; null when not measured.
    pub continuous_200ms: Option<bool>,
    /// Offset of the audible onset in the body, in seconds (0 without audio).
    pub leading_silence_s: f64,
    /// `ttfp + leading_silence`; null without audio.
    pub ttfa_audible_s: Option<f64>,
    /// Largest gap between two consecutive body reads, in seconds; null with fewer than two.
    pub gap_max_s: Option<f64>,
    /// Peak absolute sample, 0..1 of full scale.
    pub pcm_peak: f64,
    /// RMS over the whole body, 0..1 of full scale.
    pub pcm_rms: f64,
    /// Share of samples at full scale (|s| ≥ 32767).
    pub clipping_ratio: f64,
    /// Share of 5 ms windows below the loudness threshold (0 without audio).
    pub silence_ratio: f64,
    /// Seconds since send of every non-empty body read.
    pub chunk_t_s: Vec<f64>,
    /// Bytes of every non-empty body read, in the order of `chunk_t_s`.
    pub chunk_bytes: Vec<u64>,
    /// The body, kept for the quality capture until the writer thread stores it.
    #[serde(skip)]
    pub audio: Option<Vec<u8>>,
    /// The row's quality-manifest entry, when the entry keeps audio (measured requests only).
    #[serde(skip)]
    pub quality: Option<Arc<QualityRow>>,
}

impl RequestRecord {
    /// Builds the record of a finished request; `base` is its phase's start.
    pub fn new(d: &Dispatch, s: Sample, x: &Exchange, base: Instant, sample_rate: u32) -> Self {
        let ok = x.ok();
        let audio_frames = if ok {
            audio_duration::frames(x.bytes, CHANNELS)
        } else {
            0
        };
        let audio_s = audio_duration::duration_s(audio_frames, sample_rate);
        let ttfp_s = ttfp::first_read_s(&x.chunks);
        let e2el_s = ok.then(|| e2el::e2el_s(x.send_at, x.end_at));
        let cont = if ok {
            continuity::analyse(&x.chunks, pcm::bytes_per_s(sample_rate, CHANNELS))
        } else {
            None
        };
        let verdict = |th: f64| cont.map(|c| c.continuous(th));
        let measured_audio = ok && audio_frames > 0;
        let gap_max_s = x
            .chunks
            .windows(2)
            .map(|w| w[1].0 - w[0].0)
            .fold(None, |m: Option<f64>, g| Some(m.map_or(g, |m| m.max(g))));
        RequestRecord {
            id: Identity::new(d, s.request_id),
            sample_id: s.sample_id,
            text_len: s.text_len,
            sent: Sending::new(d, x.send_at, base),
            dispatch_lag_s: d
                .dispatched
                .saturating_duration_since(d.planned)
                .as_secs_f64(),
            connect_s: x.connect.map(|c| c.as_secs_f64()),
            end: Ending::new(
                x.end_at,
                base,
                x.status,
                x.failure
                    .as_ref()
                    .map(|f| (f.class.key(), f.message.clone())),
            ),
            empty: ok && x.bytes == 0,
            bytes: x.bytes,
            sample_rate,
            sample_width: SAMPLE_WIDTH,
            channels: CHANNELS,
            audio_frames,
            audio_s,
            ttfp_s,
            e2el_s,
            rtf: e2el_s.map(|e| rtf::rtf(e, audio_s)),
            underrun_s: cont.map(|c| c.max_underrun_s),
            underrun_events: cont.map(|c| c.underrun_events),
            continuous_50ms: verdict(VERDICT_THRESHOLDS_S[0]),
            continuous_100ms: verdict(DEFAULT_THRESHOLD_S),
            continuous_200ms: verdict(VERDICT_THRESHOLDS_S[2]),
            leading_silence_s: x.pcm.leading_silence_s,
            ttfa_audible_s: if measured_audio {
                ttfp_s.map(|t| ttfa_audible::ttfa_audible_s(t, x.pcm.leading_silence_s))
            } else {
                None
            },
            gap_max_s,
            pcm_peak: x.pcm.peak,
            pcm_rms: x.pcm.rms,
            clipping_ratio: x.pcm.clipping_ratio,
            silence_ratio: x.pcm.silence_ratio,
            chunk_t_s: x.chunks.iter().map(|c| c.0).collect(),
            chunk_bytes: x.chunks.iter().map(|c| c.1).collect(),
            audio: None,
            quality: s.quality,
        }
    }
}

/// `,"a":<a>,"b":<b>…` of the named fields of `$r`, each value as `serde_json` writes it.
macro_rules! json_fields {
    ($out:ident, $r:expr; $($name:ident),+ $(,)?) => {{
        $(
            $out.extend_from_slice(concat!(",\"", stringify!($name), "\":").as_bytes());
            serde_json::to_writer(&mut *$out, &$r.$name)?;
        )+
    }};
}

impl RequestRecord {
    /// Appends the record's JSON (no newline) to `out`: the same bytes as `serde_json`
    /// writes for the derived `Serialize`, with the keys written as literals. Escaping
    /// forty constant keys was a tenth of the native client's user-space instructions
    /// per request (docs/benchmarks-history.md); a test keeps both forms equal.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"index\":");
        serde_json::to_writer(&mut *out, &self.id.index)?;
        json_fields!(out, self.id; warmup, request_id);
        json_fields!(out, self; sample_id, text_len);
        json_fields!(out, self.sent; planned_send_s, actual_send_s, queue_s, saturated, lag_s);
        json_fields!(out, self; dispatch_lag_s, connect_s);
        json_fields!(out, self.end; end_s, status, ok, error_class, error);
        json_fields!(
            out,
            self;
            empty,
            bytes,
            sample_rate,
            sample_width,
            channels,
            audio_frames,
            audio_s,
            ttfp_s,
            e2el_s,
            rtf,
            underrun_s,
            underrun_events,
            continuous_50ms,
            continuous_100ms,
            continuous_200ms,
            leading_silence_s,
            ttfa_audible_s,
            gap_max_s,
            pcm_peak,
            pcm_rms,
            clipping_ratio,
            silence_ratio,
            chunk_t_s,
            chunk_bytes,
        );
        out.push(b'}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::client::{Failure, FailureClass};

    fn exchange(ok: bool, chunks: Vec<(f64, u64)>) -> Exchange {
        let t = Instant::now();
        Exchange {
            send_at: t,
            end_at: t + std::time::Duration::from_millis(350),
            status: Some(if ok { 200 } else { 500 }),
            bytes: chunks.iter().map(|c| c.1).sum(),
            chunks,
            connect: ok.then(|| std::time::Duration::from_micros(123)),
            failure: (!ok).then(|| Failure {
                class: FailureClass::Http(500),
                message: "HTTP 500: \"quoted\" \\ back\u{1}slash \u{e9}t\u{e9} \u{1f600}\n".into(),
            }),
            pcm: Default::default(),
            audio: None,
        }
    }

    /// The literal-key writer gives exactly the derived serialisation: successes and
    /// failures, nulls, strings that need escaping, non-finite and tiny floats, empty and
    /// long timelines.
    #[test]
    fn write_json_matches_the_derived_serialisation() {
        let base = Instant::now();
        let d = Dispatch {
            index: 7,
            warmup: false,
            planned: base,
            dispatched: base,
            slot: base,
            saturated: None,
        };
        let sample = |id: Option<&str>| Sample {
            request_id: id.map(str::to_string),
            sample_id: "utt\"\t\u{2028}".into(),
            text_len: 42,
            quality: None,
        };
        let timeline: Vec<(f64, u64)> =
            (0..40).map(|i| (0.1 + f64::from(i) * 0.05, 4800)).collect();
        let mut records = vec![
            RequestRecord::new(
                &d,
                sample(Some("bench-x-7")),
                &exchange(true, timeline),
                base,
                24000,
            ),
            RequestRecord::new(&d, sample(None), &exchange(true, Vec::new()), base, 24000),
            RequestRecord::new(
                &d,
                sample(Some("id")),
                &exchange(false, vec![(1e-9, 1)]),
                base,
                16000,
            ),
        ];
        let mut odd = records[0].clone();
        (odd.pcm_peak, odd.pcm_rms, odd.sent.lag_s) = (f64::NAN, f64::INFINITY, 5e-324);
        odd.gap_max_s = Some(f64::NEG_INFINITY);
        records.push(odd);
        for r in &records {
            let mut ours = Vec::new();
            r.write_json(&mut ours).unwrap();
            let derived = serde_json::to_vec(r).unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(derived).unwrap()
            );
        }
    }
}
