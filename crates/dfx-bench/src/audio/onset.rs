//! Audible onset and PCM sanity, computed while the stream is read (no audio is kept).
//!
//! Convention (TheTalker's, documented in this crate's README): the clip is cut into 5 ms
//! windows from its first sample; the onset is the first window whose RMS reaches 5 % of
//! the clip's own peak sample and stays at or above it for 20 ms (4 consecutive windows).
//! The leading silence is that window's offset. Empty audio, audio that is never loud that
//! long, and audio loud from the start give 0. A trailing partial window is ignored.

/// Window length of the onset detector.
pub const WINDOW_S: f64 = 0.005;
/// A window is loud when its RMS is at least this fraction of the clip's peak sample.
pub const LOUD_FRACTION: f64 = 0.05;
/// Consecutive loud windows (20 ms) that make an onset.
pub const HOLD_WINDOWS: usize = 4;

const FULL_SCALE: f64 = 32768.0;

/// Figures of one clip.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PcmStats {
    /// Offset of the audible onset in seconds (see the module doc).
    pub leading_silence_s: f64,
    /// Peak absolute sample, 0..1 of full scale.
    pub peak: f64,
    /// RMS over the whole clip, 0..1 of full scale.
    pub rms: f64,
    /// Share of samples at full scale (|s| ≥ 32767).
    pub clipping_ratio: f64,
    /// Share of full 5 ms windows below the loudness threshold (0 for empty audio).
    pub silence_ratio: f64,
    /// Samples analysed (an odd trailing byte is not a sample).
    pub samples: u64,
}

/// Streaming analyser: feed the body as it arrives, in pieces of any size.
#[derive(Debug, Clone)]
pub struct PcmAnalyzer {
    window: usize,
    sample_rate: u32,
    carry: Option<u8>,
    win_sum_sq: f64,
    win_n: usize,
    windows: Vec<f32>,
    peak: u32,
    sum_sq: f64,
    samples: u64,
    clipped: u64,
}

impl PcmAnalyzer {
    /// An analyser for mono s16le audio at `sample_rate` Hz.
    pub fn new(sample_rate: u32) -> Self {
        let window = ((f64::from(sample_rate) * WINDOW_S).round() as usize).max(1);
        PcmAnalyzer {
            window,
            sample_rate: sample_rate.max(1),
            carry: None,
            win_sum_sq: 0.0,
            win_n: 0,
            windows: Vec::new(),
            peak: 0,
            sum_sq: 0.0,
            samples: 0,
            clipped: 0,
        }
    }

    /// Adds the next bytes of the body.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(lo) = self.carry.take() {
            self.sample(i16::from_le_bytes([lo, bytes[0]]));
            bytes = &bytes[1..];
        }
        let mut pairs = bytes.chunks_exact(2);
        for p in &mut pairs {
            self.sample(i16::from_le_bytes([p[0], p[1]]));
        }
        if let [last] = pairs.remainder() {
            self.carry = Some(*last);
        }
    }

    fn sample(&mut self, s: i16) {
        let a = u32::from(s.unsigned_abs());
        self.peak = self.peak.max(a);
        if a >= 32767 {
            self.clipped += 1;
        }
        let v = f64::from(s);
        self.win_sum_sq += v * v;
        self.win_n += 1;
        self.samples += 1;
        if self.win_n == self.window {
            self.windows
                .push((self.win_sum_sq / self.window as f64).sqrt() as f32);
            self.sum_sq += self.win_sum_sq;
            self.win_sum_sq = 0.0;
            self.win_n = 0;
        }
    }

    /// The clip's figures so far.
    pub fn finish(&self) -> PcmStats {
        if self.samples == 0 {
            return PcmStats::default();
        }
        let threshold = LOUD_FRACTION * f64::from(self.peak);
        let loud = |rms: f32| self.peak > 0 && f64::from(rms) >= threshold;
        let mut onset_window = None;
        let mut run = 0usize;
        for (i, &rms) in self.windows.iter().enumerate() {
            run = if loud(rms) { run + 1 } else { 0 };
            if run == HOLD_WINDOWS {
                onset_window = Some(i + 1 - HOLD_WINDOWS);
                break;
            }
        }
        let quiet = self.windows.iter().filter(|&&r| !loud(r)).count();
        let n = self.samples as f64;
        PcmStats {
            leading_silence_s: onset_window
                .map(|w| (w * self.window) as f64 / f64::from(self.sample_rate))
                .unwrap_or(0.0),
            peak: f64::from(self.peak) / FULL_SCALE,
            rms: ((self.sum_sq + self.win_sum_sq) / n).sqrt() / FULL_SCALE,
            clipping_ratio: self.clipped as f64 / n,
            silence_ratio: if self.windows.is_empty() {
                0.0
            } else {
                quiet as f64 / self.windows.len() as f64
            },
            samples: self.samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcm(samples: &[i16]) -> Vec<u8> {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    fn sine(n: usize, amp: f64) -> Vec<i16> {
        (0..n)
            .map(|i| (amp * (i as f64 * 0.3).sin()) as i16)
            .collect()
    }

    fn analyse_in_pieces(bytes: &[u8], rate: u32, piece: usize) -> PcmStats {
        let mut a = PcmAnalyzer::new(rate);
        for c in bytes.chunks(piece) {
            a.feed(c);
        }
        a.finish()
    }

    #[test]
    fn leading_silence_of_200_ms_in_odd_pieces() {
        let mut s = vec![0i16; 4800]; // 0.2 s at 24 kHz = 40 windows of 120 samples
        s.extend(sine(2400, 10_000.0));
        let bytes = pcm(&s);
        for piece in [1, 7, 4801, bytes.len()] {
            let st = analyse_in_pieces(&bytes, 24_000, piece);
            assert!(
                (st.leading_silence_s - 0.2).abs() < 1e-12,
                "{piece}: {st:?}"
            );
            assert_eq!(st.samples, 7200);
        }
        // 48 kHz: 9600 samples of silence is still 0.2 s.
        let mut s = vec![0i16; 9600];
        s.extend(sine(4800, 10_000.0));
        let st = analyse_in_pieces(&pcm(&s), 48_000, 999);
        assert!((st.leading_silence_s - 0.2).abs() < 1e-12, "{st:?}");
    }

    #[test]
    fn a_click_is_not_an_onset() {
        // Silence, one loud sample at 50 ms (the peak), silence, speech at 300 ms.
        let mut s = vec![0i16; 7200];
        s[1200] = 30_000;
        s.extend(sine(2400, 10_000.0));
        let st = analyse_in_pieces(&pcm(&s), 24_000, 4096);
        assert!((st.leading_silence_s - 0.3).abs() < 1e-12, "{st:?}");
        assert!((st.peak - 30_000.0 / 32768.0).abs() < 1e-12);
    }

    #[test]
    fn empty_never_loud_and_loud_from_start_give_zero() {
        assert_eq!(PcmAnalyzer::new(24_000).finish(), PcmStats::default());
        let st = analyse_in_pieces(&pcm(&vec![0i16; 2400]), 24_000, 100);
        assert_eq!(st.leading_silence_s, 0.0);
        assert_eq!(st.silence_ratio, 1.0);
        let st = analyse_in_pieces(&pcm(&sine(2400, 8000.0)), 24_000, 100);
        assert_eq!(st.leading_silence_s, 0.0);
        // Loud for only 15 ms (3 windows) after silence: never held, so 0.
        let mut s = vec![0i16; 1200];
        s.extend(sine(360, 8000.0));
        s.extend(vec![0i16; 1200]);
        let st = analyse_in_pieces(&pcm(&s), 24_000, 100);
        assert_eq!(st.leading_silence_s, 0.0);
    }

    #[test]
    fn odd_byte_is_carried_not_counted() {
        let mut a = PcmAnalyzer::new(24_000);
        a.feed(&[0x10]);
        assert_eq!(a.finish().samples, 0);
        a.feed(&[0x27, 0xff]); // 0x2710 = 10000, then a dangling byte
        let st = a.finish();
        assert_eq!(st.samples, 1);
        assert!((st.peak - 10_000.0 / 32768.0).abs() < 1e-12);
        assert!((st.rms - 10_000.0 / 32768.0).abs() < 1e-12);
    }

    #[test]
    fn clipping_ratio_counts_full_scale_samples() {
        let s = [i16::MAX, i16::MIN, 0, 100];
        let st = analyse_in_pieces(&pcm(&s), 24_000, 3);
        assert_eq!(st.clipping_ratio, 0.5);
        assert_eq!(st.peak, 1.0);
    }
}
