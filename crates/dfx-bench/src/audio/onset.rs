//! Audible onset and PCM sanity, computed while the stream is read (no audio is kept).
//!
//! Convention (TheTalker's, documented in this crate's README): the clip is cut into 5 ms
//! windows from its first sample; the onset is the first window whose RMS reaches 5 % of
//! the clip's own peak sample and stays at or above it for 20 ms (4 consecutive windows).
//! The leading silence is that window's offset. Empty audio, audio that is never loud that
//! long, and audio loud from the start give 0. A trailing partial window is ignored.

/// Window length of the onset detector.
pub(crate) const WINDOW_S: f64 = 0.005;
/// A window is loud when its RMS is at least this fraction of the clip's peak sample.
pub(crate) const LOUD_FRACTION: f64 = 0.05;
/// Consecutive loud windows (20 ms) that make an onset.
pub(crate) const HOLD_WINDOWS: usize = 4;

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
///
/// Sums are exact integers (a sample squared is at most 2^30; an hour at 48 kHz stays
/// below 2^58), and whole windows are summed in one tight loop: this runs on the request
/// path of every body read, so it must not delay the next read's timestamp.
#[derive(Debug, Clone)]
pub struct PcmAnalyzer {
    window: usize,
    sample_rate: u32,
    carry: Option<u8>,
    win_sum_sq: u64,
    win_n: usize,
    windows: Vec<f32>,
    peak: u32,
    sum_sq: u64,
    samples: u64,
    clipped: u64,
}

use super::block::Block;

/// RMS of a whole window of `window` samples from their sum of squares.
fn window_rms(sum_sq: u64, window: usize) -> f32 {
    (sum_sq as f64 / window as f64).sqrt() as f32
}

impl PcmAnalyzer {
    /// An analyser for mono s16le audio at `sample_rate` Hz.
    pub fn new(sample_rate: u32) -> Self {
        let window = ((f64::from(sample_rate) * WINDOW_S).round() as usize).max(1);
        PcmAnalyzer {
            window,
            sample_rate: sample_rate.max(1),
            carry: None,
            win_sum_sq: 0,
            win_n: 0,
            // 1.28 s of audio before the first regrowth: a request's windows cost one
            // allocation, not one per doubling.
            windows: Vec::with_capacity(256),
            peak: 0,
            sum_sq: 0,
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
            self.add(1, Block::of(&[lo, bytes[0]]));
            bytes = &bytes[1..];
        }
        let whole = bytes.len() & !1;
        if whole < bytes.len() {
            self.carry = Some(bytes[whole]);
        }
        let rest = &bytes[..whole];
        if rest.is_empty() {
            return;
        }
        // The open window's rest, then every whole window in one kernel call, then the
        // start of the next window.
        let take = ((self.window - self.win_n) * 2).min(rest.len());
        let (head, rest) = rest.split_at(take);
        self.add(take / 2, Block::of(head));
        let full = rest.len() / (2 * self.window) * (2 * self.window);
        let (windows, tail) = rest.split_at(full);
        if !windows.is_empty() {
            let (rms, window) = (&mut self.windows, self.window);
            let b = Block::windows(windows, 2 * window, &mut |sum_sq| {
                rms.push(window_rms(sum_sq, window));
            });
            self.peak = self.peak.max(b.peak);
            self.clipped += b.clipped;
            self.sum_sq += b.sum_sq;
            self.samples += (full / 2) as u64;
        }
        if !tail.is_empty() {
            self.add(tail.len() / 2, Block::of(tail));
        }
    }

    /// Adds `n` samples that do not cross a window boundary.
    fn add(&mut self, n: usize, b: Block) {
        self.peak = self.peak.max(b.peak);
        self.clipped += b.clipped;
        self.win_sum_sq += b.sum_sq;
        self.win_n += n;
        self.samples += n as u64;
        if self.win_n == self.window {
            self.windows.push(window_rms(self.win_sum_sq, self.window));
            self.sum_sq += self.win_sum_sq;
            self.win_sum_sq = 0;
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
            rms: ((self.sum_sq + self.win_sum_sq) as f64 / n).sqrt() / FULL_SCALE,
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

    /// The window-slice fast path against a sample-by-sample reference, for pieces that
    /// split samples and windows anywhere.
    #[test]
    fn pieces_of_any_size_match_a_per_sample_reference() {
        let mut x = 0x2545_f491_u32;
        let samples: Vec<i16> = (0..5000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let amp = if i < 1700 { 300 } else { 20_000 };
                ((x % (2 * amp)) as i32 - amp as i32) as i16
            })
            .chain([i16::MIN, i16::MAX, -32767])
            .collect();
        let bytes = pcm(&samples);
        let window = 120;
        let wins: Vec<f64> = samples
            .chunks_exact(window)
            .map(|w| (w.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / 120.0).sqrt())
            .collect();
        let peak = samples.iter().map(|s| s.unsigned_abs()).max().unwrap();
        let loud = |r: f64| r >= LOUD_FRACTION * f64::from(peak);
        let onset = (0..wins.len() - 3).find(|&i| wins[i..i + 4].iter().all(|&r| loud(r)));
        let sum_sq: f64 = samples.iter().map(|&s| f64::from(s).powi(2)).sum();
        for piece in [1, 3, 119, 240, 241, 4095, bytes.len()] {
            let st = analyse_in_pieces(&bytes, 24_000, piece);
            assert_eq!(st.samples, samples.len() as u64, "{piece}");
            assert_eq!(st.peak, f64::from(peak) / FULL_SCALE);
            assert_eq!(st.clipping_ratio, 3.0 / samples.len() as f64);
            let rms = (sum_sq / samples.len() as f64).sqrt() / FULL_SCALE;
            assert!((st.rms - rms).abs() < 1e-12, "{piece}: {} vs {rms}", st.rms);
            let want = onset.unwrap() as f64 * window as f64 / 24_000.0;
            assert!((st.leading_silence_s - want).abs() < 1e-12, "{piece}");
            let quiet = wins.iter().filter(|&&r| !loud(r)).count() as f64;
            assert!((st.silence_ratio - quiet / wins.len() as f64).abs() < 1e-12);
        }
    }

    #[test]
    fn clipping_ratio_counts_full_scale_samples() {
        let s = [i16::MAX, i16::MIN, 0, 100];
        let st = analyse_in_pieces(&pcm(&s), 24_000, 3);
        assert_eq!(st.clipping_ratio, 0.5);
        assert_eq!(st.peak, 1.0);
    }
}
