//! The random streams `vllm bench serve` draws from, reproduced bit for bit so the native
//! bench sends the same prompts in the same order at the same planned times for the same
//! `--seed`: Python's `random.Random` (the seed-tts datasets shuffle their rows with
//! `random.Random(seed).shuffle`, and oversample with `random.choice` after
//! `random.seed(seed)`) and NumPy's legacy `RandomState` (the open loop's gaps are
//! `np.random.gamma(burstiness, theta)` after `np.random.seed(seed)`). Both are MT19937;
//! they differ in seeding and in how a draw is made from the 32-bit words. The `random`
//! dataset draws its lengths, offsets and padding from NumPy's `np.random.default_rng(seed)`
//! ([`NpGenerator`]: PCG64 seeded through `SeedSequence`, `Generator.integers`).

const N: usize = 624;
const M: usize = 397;

/// The Mersenne Twister MT19937 (32-bit), as CPython's `_random` and NumPy's `mt19937`.
#[derive(Clone)]
struct Mt19937 {
    mt: Box<[u32; N]>,
    pos: usize,
}

impl Mt19937 {
    /// `init_genrand(s)`.
    fn genrand(s: u32) -> Self {
        let mut mt = Box::new([0u32; N]);
        mt[0] = s;
        for i in 1..N {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { mt, pos: N }
    }

    /// `init_by_array(key)`.
    fn by_array(key: &[u32]) -> Self {
        let mut g = Mt19937::genrand(19_650_218);
        let mt = &mut g.mt;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        g
    }

    fn next_u32(&mut self) -> u32 {
        if self.pos >= N {
            self.twist();
        }
        let mut y = self.mt[self.pos];
        self.pos += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    fn twist(&mut self) {
        let mt = &mut self.mt;
        for k in 0..N {
            let y = (mt[k] & 0x8000_0000) | (mt[(k + 1) % N] & 0x7fff_ffff);
            let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
            mt[k] = mt[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.pos = 0;
    }

    /// A double in [0, 1) from 53 bits (`genrand_res53`, NumPy's `legacy_double`).
    fn next_f64(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }
}

/// Python's `random.Random(seed)` for a non-negative integer seed (CPython 3.11).
#[derive(Clone)]
pub struct PyRandom(Mt19937);

impl PyRandom {
    /// `random.Random(seed)` / `random.seed(seed)`: the seed's 32-bit words, least
    /// significant first, through `init_by_array` (seed 0 is the key `[0]`).
    pub fn new(seed: u64) -> Self {
        let (lo, hi) = (seed as u32, (seed >> 32) as u32);
        let key: &[u32] = if hi == 0 { &[lo] } else { &[lo, hi] };
        PyRandom(Mt19937::by_array(key))
    }

    /// `getrandbits(k)` for `1 <= k <= 32`.
    fn bits(&mut self, k: u32) -> u32 {
        self.0.next_u32() >> (32 - k)
    }

    /// `_randbelow(n)` (`n >= 1`): `k = n.bit_length()` bits, redrawn while `>= n`.
    pub fn below(&mut self, n: u32) -> u32 {
        let k = 32 - n.leading_zeros();
        loop {
            let r = self.bits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `shuffle(x)`: Fisher–Yates from the end.
    pub fn shuffle<T>(&mut self, x: &mut [T]) {
        for i in (1..x.len()).rev() {
            let j = self.below((i + 1) as u32) as usize;
            x.swap(i, j);
        }
    }

    /// `choice(seq)` of a sequence of `len >= 1` items: the index drawn.
    pub fn choice(&mut self, len: usize) -> usize {
        self.below(len as u32) as usize
    }
}

/// NumPy's legacy `RandomState(seed)` (`np.random.seed(seed)`), the draws `vllm bench`
/// makes from it.
#[derive(Clone)]
pub struct NpLegacy {
    mt: Mt19937,
    gauss: Option<f64>,
}

impl NpLegacy {
    /// `np.random.seed(seed)` for a seed below 2³² (`init_genrand`); larger seeds, which
    /// NumPy refuses, are reduced modulo 2³².
    pub fn new(seed: u64) -> Self {
        NpLegacy {
            mt: Mt19937::genrand(seed as u32),
            gauss: None,
        }
    }

    /// `random_sample()`: [0, 1).
    pub fn double(&mut self) -> f64 {
        self.mt.next_f64()
    }

    fn exponential(&mut self) -> f64 {
        -(1.0 - self.double()).ln()
    }

    /// `legacy_gauss`: the polar method, the second value kept for the next call.
    fn gauss(&mut self) -> f64 {
        if let Some(g) = self.gauss.take() {
            return g;
        }
        loop {
            let x1 = 2.0 * self.double() - 1.0;
            let x2 = 2.0 * self.double() - 1.0;
            let r2 = x1 * x1 + x2 * x2;
            if r2 < 1.0 && r2 != 0.0 {
                let f = (-2.0 * r2.ln() / r2).sqrt();
                self.gauss = Some(f * x1);
                return f * x2;
            }
        }
    }

    /// `legacy_standard_gamma(shape)` (`shape > 0`).
    fn standard_gamma(&mut self, shape: f64) -> f64 {
        if shape == 1.0 {
            return self.exponential();
        }
        if shape < 1.0 {
            loop {
                let u = self.double();
                let v = self.exponential();
                if u <= 1.0 - shape {
                    let x = u.powf(1.0 / shape);
                    if x <= v {
                        return x;
                    }
                } else {
                    let y = -((1.0 - u) / shape).ln();
                    let x = (1.0 - shape + shape * y).powf(1.0 / shape);
                    if x <= v + y {
                        return x;
                    }
                }
            }
        }
        let b = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * b).sqrt();
        loop {
            let (x, mut v) = loop {
                let x = self.gauss();
                let v = 1.0 + c * x;
                if v > 0.0 {
                    break (x, v);
                }
            };
            v = v * v * v;
            let u = self.double();
            if u < 1.0 - 0.0331 * (x * x) * (x * x) {
                return b * v;
            }
            if u.ln() < 0.5 * x * x + b * (1.0 - v + v.ln()) {
                return b * v;
            }
        }
    }

    /// `np.random.gamma(shape, scale)`.
    pub fn gamma(&mut self, shape: f64, scale: f64) -> f64 {
        scale * self.standard_gamma(shape)
    }
}

/// `SeedSequence(seed).generate_state(4, np.uint64)`: the entropy's 32-bit words hashed
/// into a pool of four, then four 64-bit words drawn from the pool.
fn seed_sequence_state(seed: u64) -> [u64; 4] {
    const INIT_A: u32 = 0x43b0_d7e5;
    const MULT_A: u32 = 0x931e_8875;
    const INIT_B: u32 = 0x8b51_f9dd;
    const MULT_B: u32 = 0x58f3_8ded;
    let hashmix = |value: u32, h: &mut u32| {
        let mut v = value ^ *h;
        *h = h.wrapping_mul(MULT_A);
        v = v.wrapping_mul(*h);
        v ^ (v >> 16)
    };
    let mix = |x: u32, y: u32| {
        let r = 0xca01_f9ddu32
            .wrapping_mul(x)
            .wrapping_sub(0x4973_f715u32.wrapping_mul(y));
        r ^ (r >> 16)
    };
    let (lo, hi) = (seed as u32, (seed >> 32) as u32);
    let entropy: &[u32] = if hi == 0 { &[lo] } else { &[lo, hi] };
    let mut h = INIT_A;
    let mut pool = [0u32; 4];
    for (i, p) in pool.iter_mut().enumerate() {
        *p = hashmix(entropy.get(i).copied().unwrap_or(0), &mut h);
    }
    for src in 0..4 {
        for dst in 0..4 {
            if src != dst {
                pool[dst] = mix(pool[dst], hashmix(pool[src], &mut h));
            }
        }
    }
    let mut h = INIT_B;
    let mut words = [0u32; 8];
    for (i, w) in words.iter_mut().enumerate() {
        let mut v = pool[i % 4] ^ h;
        h = h.wrapping_mul(MULT_B);
        v = v.wrapping_mul(h);
        *w = v ^ (v >> 16);
    }
    std::array::from_fn(|i| u64::from(words[2 * i]) | (u64::from(words[2 * i + 1]) << 32))
}

/// NumPy's `np.random.default_rng(seed)`: PCG64 (XSL-RR, 128-bit LCG) seeded through
/// `SeedSequence`, and the draws `Generator.integers` makes from it.
#[derive(Clone)]
pub struct NpGenerator {
    state: u128,
    inc: u128,
    /// The high half of the last 64-bit output, kept for the next 32-bit draw.
    half: Option<u32>,
}

impl NpGenerator {
    const MULT: u128 = 0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645;

    /// `np.random.default_rng(seed)` for a non-negative integer seed below 2⁶⁴.
    pub fn new(seed: u64) -> Self {
        let s = seed_sequence_state(seed);
        let init = (u128::from(s[0]) << 64) | u128::from(s[1]);
        let seq = (u128::from(s[2]) << 64) | u128::from(s[3]);
        let mut g = NpGenerator {
            state: 0,
            inc: (seq << 1) | 1,
            half: None,
        };
        g.step();
        g.state = g.state.wrapping_add(init);
        g.step();
        g
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(Self::MULT).wrapping_add(self.inc);
    }

    /// `next_uint64`: one step, then the XSL-RR output.
    fn next_u64(&mut self) -> u64 {
        self.step();
        let (hi, lo) = ((self.state >> 64) as u64, self.state as u64);
        (hi ^ lo).rotate_right((self.state >> 122) as u32)
    }

    /// `next_uint32`: the low half of a fresh 64-bit output, then its high half.
    fn next_u32(&mut self) -> u32 {
        if let Some(h) = self.half.take() {
            return h;
        }
        let v = self.next_u64();
        self.half = Some((v >> 32) as u32);
        v as u32
    }

    /// `integers(low, high)` (int64, `low < high`, `high − low ≤ 2⁶³`): Lemire's bounded
    /// method on 32-bit draws when the range fits 32 bits, on 64-bit draws otherwise.
    pub fn integers(&mut self, low: u64, high: u64) -> u64 {
        let rng = high.saturating_sub(low).saturating_sub(1);
        low + match rng {
            0 => 0,
            r if r == u64::from(u32::MAX) => u64::from(self.next_u32()),
            r if r < u64::from(u32::MAX) => u64::from(self.lemire32(r as u32)),
            u64::MAX => self.next_u64(),
            r => self.lemire64(r),
        }
    }

    fn lemire32(&mut self, rng: u32) -> u32 {
        let excl = rng + 1;
        let mut m = u64::from(self.next_u32()) * u64::from(excl);
        if (m as u32) < excl {
            let threshold = (u32::MAX - rng) % excl;
            while (m as u32) < threshold {
                m = u64::from(self.next_u32()) * u64::from(excl);
            }
        }
        (m >> 32) as u32
    }

    fn lemire64(&mut self, rng: u64) -> u64 {
        let excl = rng + 1;
        let mut m = u128::from(self.next_u64()) * u128::from(excl);
        if (m as u64) < excl {
            let threshold = (u64::MAX - rng) % excl;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(excl);
            }
        }
        (m >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by CPython 3.11 (`random.Random(0).shuffle(list(range(13)))`, then
    /// `random.seed(0); [random.choice(x) for _ in range(7)]`).
    #[test]
    fn python_shuffle_and_choice() {
        let mut x: Vec<u32> = (0..13).collect();
        PyRandom::new(0).shuffle(&mut x);
        assert_eq!(x, [1, 10, 9, 5, 11, 2, 3, 7, 8, 4, 0, 12, 6]);
        let mut r = PyRandom::new(0);
        let picks: Vec<u32> = (0..7).map(|_| x[r.choice(x.len())]).collect();
        assert_eq!(picks, [3, 6, 3, 1, 11, 8, 7]);
        // A seed of two 32-bit words (`random.Random(2**40 + 3)`).
        let mut y: Vec<u32> = (0..31).collect();
        PyRandom::new((1 << 40) + 3).shuffle(&mut y);
        assert_eq!(
            y,
            [
                2, 20, 11, 6, 27, 23, 0, 29, 25, 16, 5, 21, 12, 4, 14, 24, 8, 10, 19, 28, 15, 30,
                13, 22, 9, 18, 3, 26, 17, 1, 7
            ]
        );
    }

    /// Values printed by NumPy 2.4 (`np.random.seed(s); np.random.gamma(shape, scale)`,
    /// three times): the exponential, the shape < 1 and the shape > 1 branches.
    #[test]
    fn numpy_legacy_gamma() {
        let draws = |seed, shape, scale| {
            let mut np = NpLegacy::new(seed);
            [0; 3].map(|_| np.gamma(shape, scale))
        };
        let close = |a: [f64; 3], b: [f64; 3]| {
            a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= 1e-15 * y.abs())
        };
        let cases = [
            (
                3,
                1.0,
                0.25,
                [0.20007059672061994, 0.3078769616850862, 0.08594135042279882],
            ),
            (
                0,
                0.5,
                2.0,
                [0.6080037795214088, 0.7565434401356311, 0.3589667780057752],
            ),
            (
                0,
                2.5,
                0.1,
                [0.593870070324508, 0.281066964168471, 0.6242122324898662],
            ),
        ];
        for (seed, shape, scale, want) in cases {
            let got = draws(seed, shape, scale);
            assert!(
                close(got, want),
                "gamma({shape}, {scale}) seed {seed}: {got:?}"
            );
        }
    }

    /// Values printed by the vllm 0.30 venv's NumPy 2.3.5: `SeedSequence(s).generate_state(4,
    /// np.uint64)`, `default_rng(0).bit_generator.random_raw(3)` and `default_rng(0)`'s
    /// `integers` over ranges of 32 bits, exactly 2³² and 40 bits, and a single value.
    #[test]
    fn numpy_default_rng_integers() {
        let cases: [(u64, [u64; 4]); 3] = [
            (
                0,
                [
                    0xdb2c_d7e7_b0f4_78be,
                    0xabf4_641a_2c71_ba49,
                    0x20c6_ed6d_9d7b_8d41,
                    0x2c40_99de_223c_39d4,
                ],
            ),
            (
                12345,
                [
                    0xb5ae_6482_a03d_837c,
                    0xbbe2_996f_fa1f_7a2f,
                    0x64e3_9a9f_3715_8f94,
                    0x3ebb_0f96_a013_fd73,
                ],
            ),
            (
                (1 << 40) + 3,
                [
                    0x5418_c9b7_a646_74f4,
                    0x6b87_af38_305b_b452,
                    0x67a7_79a8_6253_d291,
                    0x35c1_4f1e_d476_091f,
                ],
            ),
        ];
        for (seed, want) in cases {
            assert_eq!(seed_sequence_state(seed), want, "SeedSequence({seed})");
        }
        let mut g = NpGenerator::new(0);
        let raw = [0; 3].map(|_| g.next_u64());
        assert_eq!(
            raw,
            [
                0xa30f_ebcf_d9c2_825f,
                0x4510_bdf8_82d9_d721,
                0x0a7d_3da9_4ecd_e8b8
            ]
        );
        let mut g = NpGenerator::new(0);
        let ten: Vec<u64> = (0..10).map(|_| g.integers(0, 2003)).collect();
        assert_eq!(ten, [1703, 1275, 1023, 540, 616, 82, 150, 33, 351, 1628]);
        assert_eq!([0; 3].map(|_| g.integers(5, 6)), [5, 5, 5], "no draw");
        assert_eq!(g.integers(0, 2003), 1300);
        let full = [0; 3].map(|_| g.integers(0, 1 << 32));
        assert_eq!(full, [3_920_255_353, 2_163_061_375, 2_605_480_817]);
        let wide = [0; 3].map(|_| g.integers(0, 1 << 40));
        assert_eq!(wide, [802_089_951_224, 597_721_999_265, 1_028_123_002_767]);
        let mut g = NpGenerator::new(7);
        let qwen: Vec<u64> = (0..10).map(|_| g.integers(0, 151_643)).collect();
        assert_eq!(
            qwen,
            [
                143_288, 94_791, 103_751, 136_056, 87_694, 117_627, 126_417, 34_151, 8420, 45_518
            ]
        );
    }
}
