//! The inner loop of the PCM analysis ([`super::onset`]): sums of squares window by window,
//! peak and full-scale count of s16le samples, 8 samples at a time.
//!
//! It runs on every body read, on the thread that timestamps the next read, so it is
//! written for the vector unit: on x86-64 with SSE2 instructions (every x86-64 CPU has
//! them), elsewhere in portable code the compiler may vectorise. One call takes every
//! whole window of a read, so the lanes are reduced once per read, not once per window;
//! full-scale samples are counted in a second pass only when the peak is at full scale
//! (clipped audio is rare, and the count is then exact). Both kernels give exactly the
//! sums of one sample at a time (tests below).

/// Sum of squares, peak magnitude and full-scale count of a run of s16le samples.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    pub(super) sum_sq: u64,
    pub(super) peak: u32,
    pub(super) clipped: u64,
}

/// Samples per group.
const LANES: usize = 8;
/// Bytes per group.
const GROUP: usize = 2 * LANES;

impl Block {
    /// Sums of `bytes` (whole samples; an odd last byte is ignored).
    pub(super) fn of(bytes: &[u8]) -> Block {
        Block::windows(bytes, bytes.len(), &mut |_| {})
    }

    /// Sums of `bytes` (whole samples; an odd last byte is ignored) cut into windows of
    /// `window` bytes from the first: `each(sum_sq)` is called for every window in order,
    /// the last one short when `window` does not divide the length.
    pub(super) fn windows(bytes: &[u8], window: usize, each: &mut dyn FnMut(u64)) -> Block {
        let bytes = &bytes[..bytes.len() & !1];
        // A window is whole samples; an empty run has no window.
        let window = (window & !1).max(2);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU runs it.
        let (sum_sq, top, bottom) = unsafe { sse2::windows(bytes, window, each) };
        #[cfg(not(target_arch = "x86_64"))]
        let (sum_sq, top, bottom) = portable(bytes, window, each);
        Block::from_lanes(bytes, sum_sq, top, bottom)
    }

    /// The block of `bytes` from a kernel's sum of squares and largest and smallest sample.
    fn from_lanes(bytes: &[u8], sum_sq: u64, top: i16, bottom: i16) -> Block {
        let peak = i32::from(top)
            .unsigned_abs()
            .max(i32::from(bottom).unsigned_abs());
        let clipped = if peak >= 32767 { full_scale(bytes) } else { 0 };
        Block {
            sum_sq,
            peak,
            clipped,
        }
    }
}

/// Samples at full scale (|s| ≥ 32767): the pass taken only when the peak is there.
fn full_scale(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(2)
        .map(|p| u64::from(i16::from_le_bytes([p[0], p[1]]).unsigned_abs() >= 32767))
        .sum()
}

/// One window's groups: the whole ones, and the last partial one padded with silence
/// (which adds nothing), when there is one.
fn groups(w: &[u8]) -> (std::slice::ChunksExact<'_, u8>, Option<[u8; GROUP]>) {
    let groups = w.chunks_exact(GROUP);
    let rest = groups.remainder();
    let last = (!rest.is_empty()).then(|| {
        let mut last = [0u8; GROUP];
        last[..rest.len()].copy_from_slice(rest);
        last
    });
    (groups, last)
}

/// [`Block::windows`] without vector instructions: the sum of squares of each window,
/// and the largest and smallest sample. Two squares fit in a `u32` (2 × 2^30 = 2^31), so
/// pairs are added there before widening.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn portable(bytes: &[u8], window: usize, each: &mut dyn FnMut(u64)) -> (u64, i16, i16) {
    let (mut hi, mut lo) = ([0i16; LANES], [0i16; LANES]);
    let mut total = 0u64;
    for w in bytes.chunks(window) {
        let mut sums = [0u64; LANES / 2];
        let (groups, last) = groups(w);
        for g in groups.chain(last.as_ref().map(|l| &l[..])) {
            let s: [i16; LANES] =
                std::array::from_fn(|i| i16::from_le_bytes([g[2 * i], g[2 * i + 1]]));
            for (i, sum) in sums.iter_mut().enumerate() {
                let (a, b) = (i32::from(s[2 * i]), i32::from(s[2 * i + 1]));
                *sum += u64::from((a * a) as u32 + (b * b) as u32);
            }
            for i in 0..LANES {
                hi[i] = hi[i].max(s[i]);
                lo[i] = lo[i].min(s[i]);
            }
        }
        let sum: u64 = sums.iter().sum();
        total += sum;
        each(sum);
    }
    let top = hi.into_iter().max().unwrap_or(0);
    let bottom = lo.into_iter().min().unwrap_or(0);
    (total, top, bottom)
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    //! Every function here is compiled for SSE2, so the intrinsics are safe inside them;
    //! only the entry point's caller asserts the CPU has SSE2 (all x86-64 CPUs do).

    use std::arch::x86_64::{
        __m128i, _mm_add_epi64, _mm_cvtsi128_si64, _mm_extract_epi16, _mm_loadu_si128,
        _mm_madd_epi16, _mm_max_epi16, _mm_min_epi16, _mm_setzero_si128, _mm_srli_si128,
        _mm_unpackhi_epi32, _mm_unpacklo_epi32,
    };

    use super::{GROUP, groups};

    /// Lanes carried from group to group.
    struct Acc {
        sum_lo: __m128i,
        sum_hi: __m128i,
        hi: __m128i,
        lo: __m128i,
    }

    /// [`super::portable`] 8 samples per instruction: `pmaddwd` squares the 8 samples and
    /// adds them in pairs (at most 2 × 2^30 = 2^31, exact when read as `u32`), which are
    /// widened to `u64` lanes before they are summed; the largest and smallest samples
    /// lane-wise, reduced once at the end.
    #[target_feature(enable = "sse2")]
    pub(super) fn windows(
        bytes: &[u8],
        window: usize,
        each: &mut dyn FnMut(u64),
    ) -> (u64, i16, i16) {
        let zero = _mm_setzero_si128();
        let mut acc = Acc {
            sum_lo: zero,
            sum_hi: zero,
            hi: zero,
            lo: zero,
        };
        let mut total = 0u64;
        for w in bytes.chunks(window) {
            (acc.sum_lo, acc.sum_hi) = (zero, zero);
            let (groups, last) = groups(w);
            for g in groups {
                step(&mut acc, load(g));
            }
            if let Some(l) = last {
                step(&mut acc, load(&l));
            }
            let s = _mm_add_epi64(acc.sum_lo, acc.sum_hi);
            let sum = lane_u64(s, 0) + lane_u64(s, 1);
            total += sum;
            each(sum);
        }
        let top = lanes_i16(acc.hi).into_iter().max().unwrap_or(0);
        let bottom = lanes_i16(acc.lo).into_iter().min().unwrap_or(0);
        (total, top, bottom)
    }

    #[target_feature(enable = "sse2")]
    #[inline]
    fn step(acc: &mut Acc, v: __m128i) {
        let zero = _mm_setzero_si128();
        let pairs = _mm_madd_epi16(v, v);
        acc.sum_lo = _mm_add_epi64(acc.sum_lo, _mm_unpacklo_epi32(pairs, zero));
        acc.sum_hi = _mm_add_epi64(acc.sum_hi, _mm_unpackhi_epi32(pairs, zero));
        acc.hi = _mm_max_epi16(acc.hi, v);
        acc.lo = _mm_min_epi16(acc.lo, v);
    }

    /// Eight little-endian samples (a group of 16 bytes) in one register.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn load(g: &[u8]) -> __m128i {
        assert!(g.len() >= GROUP);
        // SAFETY: `g` holds at least 16 bytes (checked above); the load is unaligned.
        unsafe { _mm_loadu_si128(g.as_ptr().cast()) }
    }

    #[target_feature(enable = "sse2")]
    fn lanes_i16(v: __m128i) -> [i16; 8] {
        [
            _mm_extract_epi16::<0>(v) as i16,
            _mm_extract_epi16::<1>(v) as i16,
            _mm_extract_epi16::<2>(v) as i16,
            _mm_extract_epi16::<3>(v) as i16,
            _mm_extract_epi16::<4>(v) as i16,
            _mm_extract_epi16::<5>(v) as i16,
            _mm_extract_epi16::<6>(v) as i16,
            _mm_extract_epi16::<7>(v) as i16,
        ]
    }

    #[target_feature(enable = "sse2")]
    fn lane_u64(v: __m128i, lane: usize) -> u64 {
        let v = if lane == 0 { v } else { _mm_srli_si128::<8>(v) };
        _mm_cvtsi128_si64(v) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcm(samples: &[i16]) -> Vec<u8> {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    /// One sample at a time, the definition both kernels must match.
    fn reference(bytes: &[u8]) -> Block {
        let mut b = Block::default();
        for p in bytes.chunks_exact(2) {
            let a = i32::from(i16::from_le_bytes([p[0], p[1]])).unsigned_abs();
            b.sum_sq += u64::from(a * a);
            b.peak = b.peak.max(a);
            b.clipped += u64::from(a >= 32767);
        }
        b
    }

    /// Both kernels against one sample at a time: every length around a group, extremes
    /// in every lane, and more full-scale samples per lane than a `u16` holds.
    #[test]
    fn grouped_block_sums_match_one_sample_at_a_time() {
        let mut x = 0x9e37_79b9_u32;
        let mut noise: Vec<i16> = (0..300)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as i16
            })
            .collect();
        noise[3] = i16::MIN;
        noise[12] = i16::MAX;
        noise[21] = -32767;
        let mut cases: Vec<(String, Vec<u8>)> = (0..40)
            .chain([119, 120, 121, 240, 300])
            .map(|len| (format!("len {len}"), pcm(&noise[..len])))
            .collect();
        // An odd trailing byte is not a sample.
        let mut odd = pcm(&noise[..17]);
        odd.push(0x7f);
        cases.push(("odd byte".into(), odd));
        // More than 65 535 full-scale groups: the u16 lanes must be emptied in time.
        for extreme in [i16::MIN, i16::MAX, -32767, -1, 1] {
            cases.push((format!("{extreme}"), pcm(&vec![extreme; 8 * 70_000 + 5])));
        }
        for (what, bytes) in &cases {
            let want = reference(bytes);
            assert_eq!(Block::of(bytes), want, "{what}");
            let even = &bytes[..bytes.len() & !1];
            for window in [even.len().max(2), 2, 16, 18, 240, 250] {
                let want_each: Vec<u64> =
                    even.chunks(window).map(|w| reference(w).sum_sq).collect();
                let mut got = Vec::new();
                let b = Block::windows(bytes, window, &mut |s| got.push(s));
                assert_eq!((b, &got), (want, &want_each), "{what}, window {window}");
                got.clear();
                let (sum, top, bottom) = portable(even, window, &mut |s| got.push(s));
                let b = Block::from_lanes(even, sum, top, bottom);
                assert_eq!(
                    (b, &got),
                    (want, &want_each),
                    "portable, {what}, window {window}"
                );
            }
        }
    }
}
