//! The inner loop of the PCM analysis ([`super::onset`]): sum of squares, peak and
//! full-scale count of a run of s16le samples, 8 samples at a time.
//!
//! It runs on every body read, on the thread that timestamps the next read, so it is
//! written for the vector unit: on x86-64 with SSE2 instructions (every x86-64 CPU has
//! them), elsewhere in portable code the compiler may vectorise. Both give exactly the
//! sums of one sample at a time (tests below).

/// Sum of squares, peak magnitude and full-scale count of a run of s16le samples.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    pub(super) sum_sq: u64,
    pub(super) peak: u32,
    pub(super) clipped: u64,
}

/// Samples per group: one window (120 samples at 24 kHz) is 15 whole groups.
const LANES: usize = 8;

impl Block {
    /// Sums of `bytes` (whole samples; an odd last byte is ignored). The last partial
    /// group is padded with silence, which adds nothing.
    pub(super) fn of(bytes: &[u8]) -> Block {
        // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU runs it.
        #[cfg(target_arch = "x86_64")]
        return unsafe { sse2::of(bytes) };
        #[cfg(not(target_arch = "x86_64"))]
        return portable(bytes);
    }
}

/// `bytes` in whole groups of `2 * LANES` bytes, the last one padded with silence.
fn groups(bytes: &[u8]) -> (std::slice::ChunksExact<'_, u8>, [u8; 2 * LANES]) {
    let groups = bytes.chunks_exact(2 * LANES);
    let rest = groups.remainder();
    let mut last = [0u8; 2 * LANES];
    let whole = rest.len() & !1;
    last[..whole].copy_from_slice(&rest[..whole]);
    (groups, last)
}

/// [`Block::of`] without vector instructions, and without branches so the compiler may
/// vectorise it. Two squares fit in a `u32` (2 × 2^30 = 2^31), so pairs are added there
/// before widening; peaks are kept as the largest and smallest sample (no absolute value
/// of `i16::MIN` in the loop); full-scale counts per lane in `u16`, emptied before they
/// could wrap.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn portable(bytes: &[u8]) -> Block {
    let (groups, last) = groups(bytes);
    let mut sums = [0u64; LANES / 2];
    let (mut hi, mut lo) = ([0i16; LANES], [0i16; LANES]);
    let (mut clip, mut clipped, mut pending) = ([0u16; LANES], 0u64, 0u16);
    for g in groups.chain([&last[..]]) {
        let s: [i16; LANES] = std::array::from_fn(|i| i16::from_le_bytes([g[2 * i], g[2 * i + 1]]));
        for (i, sum) in sums.iter_mut().enumerate() {
            let (a, b) = (i32::from(s[2 * i]), i32::from(s[2 * i + 1]));
            *sum += u64::from((a * a) as u32 + (b * b) as u32);
        }
        for i in 0..LANES {
            hi[i] = hi[i].max(s[i]);
            lo[i] = lo[i].min(s[i]);
            clip[i] += u16::from(s[i] == i16::MAX || s[i] <= -i16::MAX);
        }
        pending += 1;
        if pending == u16::MAX {
            clipped += clip.iter().map(|&c| u64::from(c)).sum::<u64>();
            (clip, pending) = ([0; LANES], 0);
        }
    }
    clipped += clip.iter().map(|&c| u64::from(c)).sum::<u64>();
    let top = i32::from(hi.into_iter().max().unwrap_or(0));
    let bottom = i32::from(lo.into_iter().min().unwrap_or(0));
    Block {
        sum_sq: sums.iter().sum(),
        peak: top.unsigned_abs().max(bottom.unsigned_abs()),
        clipped,
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    //! Every function here is compiled for SSE2, so the intrinsics are safe inside them;
    //! only the entry point's caller asserts the CPU has SSE2 (all x86-64 CPUs do).

    use std::arch::x86_64::{
        __m128i, _mm_add_epi64, _mm_cmpeq_epi16, _mm_cmplt_epi16, _mm_cvtsi128_si64,
        _mm_extract_epi16, _mm_madd_epi16, _mm_max_epi16, _mm_min_epi16, _mm_or_si128,
        _mm_set_epi64x, _mm_set1_epi16, _mm_setzero_si128, _mm_srli_si128, _mm_sub_epi16,
        _mm_unpackhi_epi32, _mm_unpacklo_epi32,
    };

    use super::{Block, groups};

    /// [`Block::of`] 8 samples per instruction: `pmaddwd` squares the 8 samples and adds
    /// them in pairs (at most 2 × 2^30 = 2^31, exact when read as `u32`), which are widened
    /// to `u64` lanes before they are summed; peaks are the lane-wise largest and smallest
    /// samples; full-scale counts in `u16` lanes, emptied before they could wrap.
    #[target_feature(enable = "sse2")]
    pub(super) fn of(bytes: &[u8]) -> Block {
        let (groups, last) = groups(bytes);
        let zero = _mm_setzero_si128();
        let top_value = _mm_set1_epi16(i16::MAX);
        // `s <= -32767` is `s < -32766`.
        let bottom_bound = _mm_set1_epi16(-i16::MAX + 1);
        let (mut sum_lo, mut sum_hi) = (zero, zero);
        let (mut hi, mut lo) = (zero, zero);
        let (mut clip, mut clipped, mut pending) = (zero, 0u64, 0u16);
        for g in groups.chain([&last[..]]) {
            let v = load(g);
            let pairs = _mm_madd_epi16(v, v);
            sum_lo = _mm_add_epi64(sum_lo, _mm_unpacklo_epi32(pairs, zero));
            sum_hi = _mm_add_epi64(sum_hi, _mm_unpackhi_epi32(pairs, zero));
            hi = _mm_max_epi16(hi, v);
            lo = _mm_min_epi16(lo, v);
            let full = _mm_or_si128(
                _mm_cmpeq_epi16(v, top_value),
                _mm_cmplt_epi16(v, bottom_bound),
            );
            // A match is all ones (-1): subtracting it counts one.
            clip = _mm_sub_epi16(clip, full);
            pending += 1;
            if pending == u16::MAX {
                clipped += lane_sum_u16(clip);
                (clip, pending) = (zero, 0);
            }
        }
        clipped += lane_sum_u16(clip);
        let sums = _mm_add_epi64(sum_lo, sum_hi);
        let top = lanes_i16(hi).into_iter().max().unwrap_or(0);
        let bottom = lanes_i16(lo).into_iter().min().unwrap_or(0);
        Block {
            sum_sq: lane_u64(sums, 0) + lane_u64(sums, 1),
            peak: i32::from(top)
                .unsigned_abs()
                .max(i32::from(bottom).unsigned_abs()),
            clipped,
        }
    }

    /// Eight little-endian samples (a group of 16 bytes) in one register.
    #[target_feature(enable = "sse2")]
    fn load(g: &[u8]) -> __m128i {
        let half = |k: usize| {
            let b: [u8; 8] = std::array::from_fn(|i| g[8 * k + i]);
            i64::from_le_bytes(b)
        };
        _mm_set_epi64x(half(1), half(0))
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
    fn lane_sum_u16(v: __m128i) -> u64 {
        // `_mm_extract_epi16` zero-extends: the lanes read as `u16`.
        lanes_i16(v).into_iter().map(|c| u64::from(c as u16)).sum()
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
            assert_eq!(portable(bytes), want, "portable, {what}");
        }
    }
}
