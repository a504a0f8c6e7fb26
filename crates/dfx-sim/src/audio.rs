//! Audio content: a deterministic speech-like signal, rendered chunk by chunk from one
//! shared buffer per sample rate (no per-request clip is ever held), plus the WAV header
//! and the per-request audio plan (length, leading silence, start offset).
//!
//! The buffer is built once from a fixed seed: syllables of 120–280 ms with a raised
//! cosine envelope, a drifting pitch of 95–230 Hz with eight harmonics shaped by two
//! vowel-like formants, a little noise, and short pauses between words. A request starts
//! at the beginning of a word, after a leading silence of 80–150 ms, so an audible-onset
//! detector finds a real onset right after the silence.

use std::collections::HashMap;
use std::f64::consts::PI;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::{BufMut, Bytes, BytesMut};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Seconds of speech in the shared buffer (requests wrap around it).
const BUFFER_SECS: f64 = 24.0;
/// Peak level of the buffer relative to full scale.
const PEAK: f64 = 0.6;

/// The shared speech-like signal for one sample rate.
#[derive(Debug)]
pub(crate) struct VoiceBuffer {
    /// Samples per second of the buffer (and of every response rendered from it).
    pub sample_rate: u32,
    samples: Vec<i16>,
    /// Sample offsets where words start (request start points).
    word_starts: Vec<usize>,
}

impl VoiceBuffer {
    /// The process-wide buffer for `sample_rate`, built on first use.
    pub(crate) fn shared(sample_rate: u32) -> Arc<Self> {
        static CACHE: OnceLock<Mutex<HashMap<u32, Arc<VoiceBuffer>>>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let mut map = cache.lock().expect("voice cache lock");
        map.entry(sample_rate)
            .or_insert_with(|| VoiceBuffer::new(sample_rate))
            .clone()
    }

    /// Builds the buffer (deterministic: same rate, same samples).
    pub(crate) fn new(sample_rate: u32) -> Arc<Self> {
        let sr = f64::from(sample_rate);
        let total = (BUFFER_SECS * sr) as usize;
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_5eec);
        let mut out = vec![0f64; total];
        let mut word_starts = Vec::new();
        let mut pos = 0usize;
        let mut phase = 0f64;
        while pos < total {
            word_starts.push(pos);
            let syllables = rng.random_range(1..=3);
            for _ in 0..syllables {
                let len = (rng.random_range(0.12..0.28) * sr) as usize;
                let end = (pos + len).min(total);
                synth_syllable(&mut out[pos..end], sr, pos, &mut phase, &mut rng);
                pos = end;
            }
            let pause = (rng.random_range(0.04..0.14) * sr) as usize;
            let end = (pos + pause).min(total);
            for s in &mut out[pos..end] {
                *s = rng.random_range(-0.002..0.002);
            }
            pos = end;
        }
        let peak = out.iter().fold(0f64, |m, s| m.max(s.abs())).max(1e-9);
        let gain = PEAK * f64::from(i16::MAX) / peak;
        let samples = out.iter().map(|s| (s * gain).round() as i16).collect();
        word_starts.retain(|&w| w + (sr as usize) < total);
        Arc::new(VoiceBuffer {
            sample_rate,
            samples,
            word_starts,
        })
    }

    /// Number of word starts a request may begin at.
    pub(crate) fn word_count(&self) -> usize {
        self.word_starts.len()
    }

    /// s16le bytes of samples `[from, to)` of the utterance `plan`.
    pub(crate) fn render(&self, plan: &AudioPlan, from: u64, to: u64, buf: &mut BytesMut) {
        buf.reserve(to.saturating_sub(from) as usize * 2);
        let lead = plan.leading_silence_samples;
        let mut i = from;
        if i < lead {
            let n = to.min(lead) - i;
            buf.put_bytes(0, n as usize * 2);
            i += n;
        }
        let len = self.samples.len() as u64;
        let start = self.word_starts[plan.word % self.word_starts.len()] as u64;
        while i < to {
            let idx = (start + i - lead) % len;
            let n = (to - i).min(len - idx);
            for &s in &self.samples[idx as usize..(idx + n) as usize] {
                buf.put_i16_le(s);
            }
            i += n;
        }
    }
}

fn synth_syllable(out: &mut [f64], sr: f64, at: usize, phase: &mut f64, rng: &mut ChaCha8Rng) {
    let len = out.len().max(1) as f64;
    let f0_base = rng.random_range(95.0..230.0);
    let f1 = rng.random_range(350.0..850.0);
    let f2 = rng.random_range(1000.0..2400.0);
    let fricative = rng.random_bool(0.3);
    let attack = 0.015 * sr;
    let release = 0.04 * sr;
    // Harmonic weights: a 1/h tilt plus two formant bumps (vowel colour).
    let weights: Vec<f64> = (1..=8)
        .map(|h| {
            let f = f0_base * f64::from(h);
            let formant =
                (-((f - f1) / 300.0).powi(2)).exp() + 0.6 * (-((f - f2) / 400.0).powi(2)).exp();
            0.25 / f64::from(h) + formant
        })
        .collect();
    for (n, s) in out.iter_mut().enumerate() {
        let t = (at + n) as f64 / sr;
        let f0 = f0_base * (1.0 + 0.08 * (2.0 * PI * 0.7 * t).sin());
        *phase = (*phase + 2.0 * PI * f0 / sr) % (2.0 * PI * 64.0);
        let v: f64 = weights
            .iter()
            .enumerate()
            .map(|(h, w)| w * (*phase * (h + 1) as f64).sin())
            .sum();
        let x = n as f64;
        let env = if x < attack {
            0.5 - 0.5 * (PI * x / attack).cos()
        } else if x > len - release {
            0.5 - 0.5 * (PI * (len - x).max(0.0) / release).cos()
        } else {
            1.0
        };
        let noise = if fricative && x < 0.03 * sr {
            0.3
        } else {
            0.02
        };
        *s = env * (v + noise * rng.random_range(-1.0..1.0));
    }
}

/// What one request's audio looks like: its length and where its signal comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioPlan {
    /// Codec frames of the utterance.
    pub frames: u32,
    /// Audio samples per codec frame (sample rate / 12.5).
    pub samples_per_frame: u32,
    /// Zero samples before the speech starts.
    pub leading_silence_samples: u64,
    /// Index of the buffer word the speech starts at.
    pub word: usize,
}

impl AudioPlan {
    /// Samples of the whole utterance.
    pub(crate) fn total_samples(&self) -> u64 {
        u64::from(self.frames) * u64::from(self.samples_per_frame)
    }

    /// PCM bytes of the whole utterance.
    pub(crate) fn total_bytes(&self) -> u64 {
        self.total_samples() * 2
    }

    /// Sample range `[from, to)` of a chunk of `frames` frames starting at `start_frame`.
    pub(crate) fn chunk_samples(&self, start_frame: u32, frames: u32) -> (u64, u64) {
        let spf = u64::from(self.samples_per_frame);
        let from = u64::from(start_frame) * spf;
        (from, from + u64::from(frames) * spf)
    }
}

/// A 44-byte RIFF/WAVE header for mono s16le PCM of `data_bytes` bytes.
pub(crate) fn wav_header(sample_rate: u32, data_bytes: u64) -> Bytes {
    let data = u32::try_from(data_bytes).unwrap_or(u32::MAX - 36);
    let mut h = BytesMut::with_capacity(44);
    h.put_slice(b"RIFF");
    h.put_u32_le(data.saturating_add(36));
    h.put_slice(b"WAVEfmt ");
    h.put_u32_le(16);
    h.put_u16_le(1); // PCM
    h.put_u16_le(1); // mono
    h.put_u32_le(sample_rate);
    h.put_u32_le(sample_rate * 2);
    h.put_u16_le(2);
    h.put_u16_le(16);
    h.put_slice(b"data");
    h.put_u32_le(data);
    h.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout() {
        let h = wav_header(24_000, 96_000);
        assert_eq!(h.len(), 44);
        assert_eq!(&h[0..4], b"RIFF");
        assert_eq!(u32::from_le_bytes(h[4..8].try_into().unwrap()), 96_036);
        assert_eq!(&h[8..16], b"WAVEfmt ");
        assert_eq!(u32::from_le_bytes(h[24..28].try_into().unwrap()), 24_000);
        assert_eq!(u32::from_le_bytes(h[28..32].try_into().unwrap()), 48_000);
        assert_eq!(&h[36..40], b"data");
        assert_eq!(u32::from_le_bytes(h[40..44].try_into().unwrap()), 96_000);
    }

    fn rms(s: &[i16]) -> f64 {
        (s.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / s.len() as f64).sqrt()
    }

    #[test]
    fn silence_then_speech_like_signal() {
        let vb = VoiceBuffer::new(24_000);
        assert!(vb.word_count() > 20);
        let plan = AudioPlan {
            frames: 50,
            samples_per_frame: 1920,
            leading_silence_samples: 2400,
            word: 3,
        };
        let mut buf = BytesMut::new();
        vb.render(&plan, 0, plan.total_samples(), &mut buf);
        assert_eq!(buf.len() as u64, plan.total_bytes());
        let s: Vec<i16> = buf
            .chunks(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert!(s[..2400].iter().all(|&x| x == 0));
        let peak = s.iter().map(|x| x.unsigned_abs()).max().unwrap();
        assert!(peak > 5000, "peak {peak}");
        // Loud within 30 ms of the end of the silence (word onset).
        assert!(rms(&s[2400 + 360..2400 + 720]) > 0.05 * f64::from(peak));
        // Speech-like: the level varies (syllables and pauses), it is not a steady tone.
        let windows: Vec<f64> = s[2400..].chunks(480).map(rms).collect();
        let max = windows.iter().cloned().fold(0.0, f64::max);
        let min = windows.iter().cloned().fold(f64::MAX, f64::min);
        assert!(min < 0.2 * max, "min {min} max {max}");
    }

    #[test]
    fn rendering_by_chunks_equals_rendering_at_once() {
        let vb = VoiceBuffer::new(48_000);
        let plan = AudioPlan {
            frames: 10,
            samples_per_frame: 3840,
            leading_silence_samples: 5000,
            word: 7,
        };
        let mut whole = BytesMut::new();
        vb.render(&plan, 0, plan.total_samples(), &mut whole);
        let mut parts = BytesMut::new();
        for (start, n) in [(0, 1), (1, 4), (5, 5)] {
            let (a, b) = plan.chunk_samples(start, n);
            vb.render(&plan, a, b, &mut parts);
        }
        assert_eq!(whole, parts);
    }
}
