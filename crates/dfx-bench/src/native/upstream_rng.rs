//! The random streams `vllm bench serve` draws from, reproduced bit for bit so the native
//! bench sends the same prompts in the same order at the same planned times for the same
//! `--seed`: Python's `random.Random` (the seed-tts datasets shuffle their rows with
//! `random.Random(seed).shuffle`, and oversample with `random.choice` after
//! `random.seed(seed)`) and NumPy's legacy `RandomState` (the open loop's gaps are
//! `np.random.gamma(burstiness, theta)` after `np.random.seed(seed)`). Both are MT19937;
//! they differ in seeding and in how a draw is made from the 32-bit words.

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
}
