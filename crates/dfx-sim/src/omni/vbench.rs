//! A virtual bench for the omni model: drives `OmniEngine` in virtual time the way
//! `vllm bench serve --omni` drives a server (open loop at a request rate with Poisson
//! arrivals, or closed loop at a concurrency) and measures what the bench measures
//! (TTFT, TPOT, E2EL, audio TTFP, audio RTF). Exact and instant; used by the
//! calibration example and tests.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::engine::{OmniEmission, OmniEngine, OmniEngineConfig, OmniJob, OmniOutput};
use super::profile::OMNI_FRAME_RATE_HZ;
use crate::engine::VTime;
use crate::engine::drive::{Sends, drive};

/// How requests are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Poisson arrivals at `rate` requests per second (`--request-rate`).
    Rate(f64),
    /// `n` requests in flight at a time (`--max-concurrency`, rate inf).
    Concurrency(usize),
}

/// One request's measurements, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Sample {
    /// First text token − send.
    pub ttft_ms: f64,
    /// Mean gap between later text tokens.
    pub tpot_ms: f64,
    /// Last output − send.
    pub e2el_ms: f64,
    /// First audio chunk − send (0 without audio).
    pub audio_ttfp_ms: f64,
    /// (Last audio − send) / audio duration (0 without audio).
    pub audio_rtf: f64,
    /// Seconds of audio.
    pub audio_s: f64,
}

/// Means over samples.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    /// Samples summarised (the means are 0 when there are none).
    pub n: usize,
    /// Mean [`Sample::ttft_ms`], milliseconds.
    pub mean_ttft_ms: f64,
    /// Mean [`Sample::tpot_ms`], milliseconds.
    pub mean_tpot_ms: f64,
    /// Mean [`Sample::e2el_ms`], milliseconds.
    pub mean_e2el_ms: f64,
    /// Mean [`Sample::audio_ttfp_ms`], milliseconds (text-only samples count as 0).
    pub mean_audio_ttfp_ms: f64,
    /// Mean [`Sample::audio_rtf`] (text-only samples count as 0).
    pub mean_audio_rtf: f64,
    /// Mean [`Sample::audio_s`], seconds of audio.
    pub mean_audio_s: f64,
}

/// Means of `samples`.
pub fn summarize(samples: &[Sample]) -> Summary {
    let n = samples.len().max(1) as f64;
    let m = |f: fn(&Sample) -> f64| samples.iter().map(f).sum::<f64>() / n;
    Summary {
        n: samples.len(),
        mean_ttft_ms: m(|s| s.ttft_ms),
        mean_tpot_ms: m(|s| s.tpot_ms),
        mean_e2el_ms: m(|s| s.e2el_ms),
        mean_audio_ttfp_ms: m(|s| s.audio_ttfp_ms),
        mean_audio_rtf: m(|s| s.audio_rtf),
        mean_audio_s: m(|s| s.audio_s),
    }
}

#[derive(Debug, Default, Clone)]
struct Track {
    sent: VTime,
    first_text: Option<VTime>,
    last_text: VTime,
    tokens: u32,
    first_audio: Option<VTime>,
    last_audio: VTime,
    frames: u64,
    done: Option<VTime>,
}

/// Runs `jobs` (ids are reassigned 1.. in send order) under `load`; `seed` draws the
/// Poisson gaps.
pub fn run(cfg: &OmniEngineConfig, jobs: &[OmniJob], load: Load, seed: u64) -> Vec<Sample> {
    let mut tracks: Vec<Track> = vec![Track::default(); jobs.len()];
    let sends = match load {
        Load::Concurrency(c) => Sends {
            planned: (0..c.max(1).min(jobs.len())).map(|i| (0, i)).collect(),
            closed_loop: Some(0),
        },
        Load::Rate(r) => {
            // Each gap is drawn after the previous send, from the seed, in send order.
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut at: VTime = 0;
            let mut planned = Vec::with_capacity(jobs.len());
            for i in 0..jobs.len() {
                if i > 0 {
                    let u: f64 = rng.random_range(f64::EPSILON..1.0);
                    at += crate::engine::secs(-u.ln() / r.max(1e-9));
                }
                planned.push((at, i));
            }
            Sends {
                planned,
                closed_loop: None,
            }
        }
    };
    let engine = OmniEngine::new(cfg.clone());
    let sent = drive(engine, jobs, sends, |i, e: &OmniEmission, finishes| {
        record(&mut tracks[i], e);
        if finishes {
            tracks[i].done = Some(e.at);
        }
    });
    for (tr, at) in tracks.iter_mut().zip(sent) {
        tr.sent = at;
    }
    tracks.iter().map(sample).collect()
}

fn record(tr: &mut Track, e: &OmniEmission) {
    match e.out {
        OmniOutput::Text { tokens, .. } => {
            tr.first_text.get_or_insert(e.at);
            tr.last_text = e.at;
            tr.tokens = tokens;
        }
        OmniOutput::Audio { frames, .. } => {
            tr.first_audio.get_or_insert(e.at);
            tr.last_audio = e.at;
            tr.frames += u64::from(frames);
        }
    }
}

fn sample(tr: &Track) -> Sample {
    let ms = |a: VTime| a.saturating_sub(tr.sent) as f64 / 1e6;
    let ttft = tr.first_text.map_or(0.0, ms);
    let tpot = if tr.tokens > 1 {
        (ms(tr.last_text) - ttft) / f64::from(tr.tokens - 1)
    } else {
        0.0
    };
    let audio_s = tr.frames as f64 / OMNI_FRAME_RATE_HZ;
    Sample {
        ttft_ms: ttft,
        tpot_ms: tpot,
        e2el_ms: tr.done.map_or(0.0, ms),
        audio_ttfp_ms: tr.first_audio.map_or(0.0, ms),
        audio_rtf: if audio_s > 0.0 {
            ms(tr.last_audio) / 1000.0 / audio_s
        } else {
            0.0
        },
        audio_s,
    }
}
