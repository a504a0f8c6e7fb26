//! A virtual bench for the omni model: drives `OmniEngine` in virtual time the way
//! `vllm bench serve --omni` drives a server (open loop at a request rate with Poisson
//! arrivals, or closed loop at a concurrency) and measures what the bench measures
//! (TTFT, TPOT, E2EL, audio TTFP, audio RTF). Exact and instant; used by the
//! calibration example and tests.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::OmniConfig;
use super::engine::{OmniEmission, OmniEngine, OmniEngineConfig, OmniJob, OmniOutput};
use super::profile::OMNI_FRAME_RATE_HZ;
use crate::engine::drive::{Sends, drive};
use crate::engine::{VTime, secs};

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
    itl_ms: Vec<f64>,
    first_audio: Option<VTime>,
    last_audio: VTime,
    frames: u64,
    done: Option<VTime>,
}

/// The 48 requests of the parity trial chat c = 16 (`scripts/parity/omni_chat.json`:
/// `random` 100 in / 30 out with audio, seed 0) as the simulator planned them, in
/// dataset order: (prompt tokens, codec frames of speech). Taken from a native run's
/// records (`prompt_len`, `audio_duration_s` × 12.5); every request makes 30 tokens.
#[rustfmt::skip]
pub const PARITY_CHAT_C16: [(u32, u32); 48] = [
    (158, 115), (158, 122), (158, 115), (133, 124), (133, 124), (130, 124), (133, 117),
    (118, 121), (133, 116), (158, 115), (158, 118), (158, 121), (158, 118), (158, 121),
    (127, 118), (158, 124), (158, 117), (158, 124), (158, 118), (158, 125), (133, 124),
    (158, 118), (158, 120), (115, 123), (133, 122), (158, 122), (158, 115), (132, 118),
    (158, 115), (158, 117), (158, 119), (133, 122), (133, 116), (158, 119), (128, 115),
    (158, 116), (133, 118), (133, 123), (158, 121), (133, 126), (133, 120), (132, 125),
    (121, 125), (133, 116), (123, 120), (158, 125), (158, 117), (158, 116),
];

/// [`PARITY_CHAT_C16`] as engine jobs of the profile in `cfg` (text prompts, no media).
pub fn parity_chat_c16_jobs(cfg: &OmniConfig) -> Vec<OmniJob> {
    PARITY_CHAT_C16
        .iter()
        .map(|&(prompt, frames)| {
            let prefill_s = cfg.profile.thinker.prefill_per_token_s * f64::from(prompt);
            text_job(cfg, prefill_s, 30, frames)
        })
        .collect()
}

/// The engine job of a text-only chat request of the profile in `cfg` (its fixed
/// pre-processing) with this prefill, output length and speech (e.g. one a step trace
/// shows: `prefill_ms`, `text_tokens`, `audio_frames`).
pub fn text_job(cfg: &OmniConfig, prefill_s: f64, text_tokens: u32, audio_frames: u32) -> OmniJob {
    OmniJob {
        id: 0,
        preprocess_s: cfg.profile.thinker.request_overhead_s,
        prefill_s,
        text_tokens,
        audio_frames,
    }
}

/// Runs `jobs` (ids are reassigned 1.. in send order) under `load`; `seed` draws the
/// Poisson gaps.
pub fn run(cfg: &OmniEngineConfig, jobs: &[OmniJob], load: Load, seed: u64) -> Vec<Sample> {
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
                    at += secs(-u.ln() / r.max(1e-9));
                }
                planned.push((at, i));
            }
            Sends {
                planned,
                closed_loop: None,
            }
        }
    };
    measure(cfg, jobs, sends).iter().map(sample).collect()
}

/// Closed loop at concurrency `first_wave_s.len()`: the first wave's sends reach the
/// server at the given offsets (seconds; a real client's first wave is not one instant),
/// each later job `turnaround_s` after a completion (the client's own time to send it).
/// Every measurement of [`run`], plus every inter-token latency pooled over the requests
/// as the bench's ITL is (milliseconds).
pub fn run_closed_loop(
    cfg: &OmniEngineConfig,
    jobs: &[OmniJob],
    first_wave_s: &[f64],
    turnaround_s: f64,
) -> (Vec<Sample>, Vec<f64>) {
    let sends = Sends {
        planned: first_wave_s
            .iter()
            .take(jobs.len())
            .enumerate()
            .map(|(i, s)| (secs(s.max(0.0)), i))
            .collect(),
        closed_loop: Some(secs(turnaround_s.max(0.0))),
    };
    let tracks = measure(cfg, jobs, sends);
    let itls = tracks
        .iter()
        .flat_map(|t| t.itl_ms.iter().copied())
        .collect();
    (tracks.iter().map(sample).collect(), itls)
}

/// Drives `jobs` as `sends` says and keeps each job's stamps.
fn measure(cfg: &OmniEngineConfig, jobs: &[OmniJob], sends: Sends) -> Vec<Track> {
    let mut tracks: Vec<Track> = vec![Track::default(); jobs.len()];
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
    tracks
}

fn record(tr: &mut Track, e: &OmniEmission) {
    match e.out {
        OmniOutput::Text { tokens, .. } => {
            if tr.first_text.is_some() {
                tr.itl_ms
                    .push(e.at.saturating_sub(tr.last_text) as f64 / 1e6);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimOptions;

    fn qwen_async() -> OmniConfig {
        let mut o = SimOptions::new("Qwen/Qwen3-Omni-30B-A3B-Instruct");
        o.extra_flags.push(("--async-chunk".into(), None));
        o.resolve().unwrap().omni.unwrap()
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        (v[(v.len() - 1) / 2] + v[v.len() / 2]) / 2.0
    }

    #[test]
    fn closed_loop_sends_the_first_wave_at_its_offsets() {
        let cfg = qwen_async();
        // Two text-only requests half a second apart: the first is done before the
        // second arrives, so both are served alone, alike, one token per 1-seq step.
        let jobs = vec![text_job(&cfg, 0.003, 30, 0); 2];
        let (s, itls) = run_closed_loop(&cfg.engine, &jobs, &[0.0, 0.5], 0.0);
        assert_eq!(s.len(), 2);
        assert!(s[0].e2el_ms < 500.0, "{s:?}");
        assert!((s[0].ttft_ms - s[1].ttft_ms).abs() < 1e-6, "{s:?}");
        let t = &cfg.engine.thinker;
        let step_ms = (t.step_base_s + t.step_per_seq_s) * 1e3;
        assert_eq!(itls.len(), 2 * 29);
        assert!(itls.iter().all(|x| (x - step_ms).abs() < 1e-3), "{itls:?}");
        // At concurrency 1 the second job follows the first's completion instead.
        let (s1, _) = run_closed_loop(&cfg.engine, &jobs, &[0.0], 0.002);
        assert!((s1[1].ttft_ms - s[1].ttft_ms).abs() < 1e-6, "{s1:?}");
    }

    /// Chat c = 16 of the parity matrix (BENCHMARKS.md, "Parity with vllm bench"): which
    /// of the two modes a run lands in is decided by which request reaches the server
    /// first (it is prefilled alone, one thinker step ahead of the other 15), not by
    /// how far the first wave is spread.
    #[test]
    fn chat_c16_mode_follows_the_first_arrival_not_the_spread() {
        let cfg = qwen_async();
        let jobs = parity_chat_c16_jobs(&cfg);
        let spread =
            |ms: f64| -> Vec<f64> { (0..16).map(|i| ms / 1e3 * f64::from(i) / 15.0).collect() };
        let itl = |jobs: &[OmniJob], wave: &[f64]| {
            median(run_closed_loop(&cfg.engine, jobs, wave, 0.0).1)
        };
        let one_ms = itl(&jobs, &spread(1.0));
        for ms in [0.5, 5.0, 10.0] {
            assert_eq!(itl(&jobs, &spread(ms)), one_ms, "spread {ms} ms");
        }
        // Dataset order starts with a 115-frame request; put a 124-frame one first.
        assert_eq!((jobs[0].audio_frames, jobs[3].audio_frames), (115, 124));
        let mut swapped = jobs.clone();
        swapped.swap(0, 3);
        let other = itl(&swapped, &spread(1.0));
        assert!(
            other > one_ms * 1.05,
            "first arrival 124 frames: {other} against {one_ms}"
        );
        // The slow mode is the batch-16 contended thinker step.
        let t = &cfg.engine.thinker;
        let full = (t.step_base_s + 16.0 * t.step_per_seq_s) * (1.0 + t.contention) * 1e3;
        assert!((other - full).abs() < 1e-3, "{other} against {full}");
    }
}
