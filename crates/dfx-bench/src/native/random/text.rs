//! Text prompts of the `random` datasets (vLLM's `RandomDataset` rules): each request is
//! `prefix + allowed[(offset_i + i + k) mod len(allowed)]` for `k < input_len_i`, decoded
//! to text. With a real tokenizer (`--tokenizer`) the draws are NumPy's
//! (`np.random.default_rng(seed)`, [`NpGenerator`]) and the text is decoded, re-encoded and
//! adjusted up to 10 times, as upstream does: the same prompts as vllm bench 0.30 with the
//! same tokenizer. Without one the tokens are words of a fixed vocabulary (about one token
//! each) drawn with ChaCha8, and every count is an approximation that the result says it is.

use std::path::Path;

use crate::native::BenchError;
use crate::native::upstream_rng::NpGenerator;
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Common English words, each a single token (with its leading space) in the BPE
/// vocabularies of the served models: the approximate tokenizer's vocabulary.
const WORDS: &str = "the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there one all we their been has when who will more no if out so said what up its about into than them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three";

/// What counts tokens: a real tokenizer (`tokenizer.json`) or the word approximation.
pub enum Counter {
    /// A Hugging Face tokenizer loaded from a local file.
    Real(Box<tokenizers::Tokenizer>),
    /// Words of `WORDS`, one token each.
    Approximate,
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_real() {
            "Counter::Real"
        } else {
            "Counter::Approximate"
        })
    }
}

/// Largest `tokenizer.json` loaded.
const MAX_TOKENIZER_BYTES: u64 = 256 * 1024 * 1024;

/// Why the tokenizer at `path` cannot be used.
fn tokenizer_error(path: &Path, why: String) -> BenchError {
    BenchError::Tokenizer {
        path: path.to_path_buf(),
        why,
    }
}

impl Counter {
    /// Loads `path` (a Hugging Face `tokenizer.json`); the error names the file.
    pub fn load(path: &Path) -> Result<Counter, BenchError> {
        let bytes = dfx_core::fsutil::read_bounded(path, MAX_TOKENIZER_BYTES)
            .map_err(|e| tokenizer_error(path, e.problem()))?;
        let t = tokenizers::Tokenizer::from_bytes(&bytes)
            .map_err(|e| tokenizer_error(path, format!("cannot load: {e}")))?;
        if t.get_vocab_size(false) == 0 {
            return Err(tokenizer_error(path, "empty vocabulary".into()));
        }
        Ok(Counter::Real(Box::new(t)))
    }

    /// Whether counts come from a real tokenizer.
    pub fn is_real(&self) -> bool {
        matches!(self, Counter::Real(_))
    }

    /// Tokens of `text` (no special tokens); `None` for the approximation.
    pub fn count(&self, text: &str) -> Option<u64> {
        match self {
            Counter::Real(t) => t
                .encode_fast(text, false)
                .ok()
                .map(|e| e.get_ids().len() as u64),
            Counter::Approximate => None,
        }
    }

    /// Tokens of `text` as Hugging Face's `tokenizer.encode(text)` counts them (special
    /// tokens added: what vllm bench's seed-tts datasets record as `prompt_len`); `None`
    /// for the approximation.
    pub fn prompt_len(&self, text: &str) -> Option<u64> {
        Some(self.count(text)? + self.special_added())
    }

    /// Special tokens the tokenizer adds to a single sequence (0 for the approximation).
    fn special_added(&self) -> u64 {
        use tokenizers::PostProcessor;
        match self {
            Counter::Real(t) => t
                .get_post_processor()
                .map(|p| p.added_tokens(false) as u64)
                .unwrap_or(0),
            Counter::Approximate => 0,
        }
    }

    /// The vocabulary size and the ids a prompt may use (no special tokens), ascending.
    fn allowed(&self) -> (u32, Vec<u32>) {
        match self {
            Counter::Real(t) => {
                let n = t.get_vocab_size(false) as u32;
                let special: std::collections::HashSet<u32> = t
                    .get_added_tokens_decoder()
                    .into_iter()
                    .filter(|(_, a)| a.special)
                    .map(|(id, _)| id)
                    .collect();
                let allowed = (0..n).filter(|i| !special.contains(i)).collect();
                (n, allowed)
            }
            Counter::Approximate => {
                let n = WORDS.split(' ').count() as u32;
                (n, (0..n).collect())
            }
        }
    }

    fn decode(&self, ids: &[u32]) -> String {
        match self {
            Counter::Real(t) => t.decode(ids, false).unwrap_or_default(),
            Counter::Approximate => {
                let words: Vec<&str> = WORDS.split(' ').collect();
                let mut s = String::with_capacity(ids.len() * 6);
                for (i, &id) in ids.iter().enumerate() {
                    if i > 0 {
                        s.push(' ');
                    }
                    s.push_str(words[id as usize % words.len()]);
                }
                s
            }
        }
    }
}

/// The text lengths of the `random` datasets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextConfig {
    /// Mean input length, tokens (`random_input_len` / `input_len`, default 1024).
    pub input_len: u64,
    /// Mean output length, tokens (`random_output_len` / `output_len`, default 128).
    pub output_len: u64,
    /// Shared prefix length, tokens (`random_prefix_len`, default 0).
    pub prefix_len: u64,
    /// Range ratio of the input length (`random_range_ratio`; equal to `ratio_out` unless
    /// a dict was given): lengths are drawn from `[n(1−r), n(1+r)]`.
    pub ratio_in: f64,
    /// Range ratio of the output length.
    pub ratio_out: f64,
}

/// One request's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The prompt text sent.
    pub text: String,
    /// Prefix + input tokens (the real tokenizer's count after adjustment, else words).
    pub prompt_len: u64,
    /// The sampled output length (`max_tokens`).
    pub output_len: u64,
}

/// The closed ranges of the input and output lengths: `[floor(n(1−r)), ceil(n(1+r))]` with
/// n the input length less the tokenizer's special tokens; outputs at least 1.
fn length_bounds(cfg: &TextConfig, special: u64) -> ((u64, u64), (u64, u64)) {
    let real_in = cfg.input_len.saturating_sub(special) as f64;
    let (ri, ro) = (cfg.ratio_in, cfg.ratio_out);
    let out = cfg.output_len as f64;
    (
        (
            (real_in * (1.0 - ri)).floor() as u64,
            (real_in * (1.0 + ri)).ceil() as u64,
        ),
        (
            ((out * (1.0 - ro)).floor() as u64).max(1),
            ((out * (1.0 + ro)).ceil() as u64).max(1),
        ),
    )
}

/// `n` prompts of `cfg`, seeded with `seed`. With a real tokenizer they are vllm bench
/// 0.30's `RandomDataset` prompts, bit for bit (`upstream`); without one, words of the
/// fixed vocabulary drawn with ChaCha8 (`approximate`).
pub fn prompts(cfg: &TextConfig, counter: &Counter, n: usize, seed: u64) -> Vec<Prompt> {
    match counter {
        Counter::Real(t) => upstream(cfg, counter, t, n, seed),
        Counter::Approximate => approximate(cfg, counter, n, seed),
    }
}

fn range(rng: &mut ChaCha8Rng, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        lo
    } else {
        rng.random_range(lo..=hi)
    }
}

/// The word approximation: a prefix drawn once, then every input length, every output
/// length and every offset, from ChaCha8; one word per "token".
fn approximate(cfg: &TextConfig, counter: &Counter, n: usize, seed: u64) -> Vec<Prompt> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (vocab, allowed) = counter.allowed();
    if allowed.is_empty() {
        return Vec::new();
    }
    let prefix: Vec<u32> = (0..cfg.prefix_len)
        .map(|_| allowed[rng.random_range(0..allowed.len())])
        .collect();
    let ((in_lo, in_hi), (out_lo, out_hi)) = length_bounds(cfg, 0);
    let ins: Vec<u64> = (0..n).map(|_| range(&mut rng, in_lo, in_hi)).collect();
    let outs: Vec<u64> = (0..n).map(|_| range(&mut rng, out_lo, out_hi)).collect();
    let offsets: Vec<u64> = (0..n)
        .map(|_| rng.random_range(0..u64::from(vocab.max(1))))
        .collect();
    let len = allowed.len() as u64;
    (0..n)
        .map(|i| {
            let mut ids = prefix.clone();
            ids.extend((0..ins[i]).map(|k| allowed[((offsets[i] + i as u64 + k) % len) as usize]));
            Prompt {
                text: counter.decode(&ids),
                prompt_len: ids.len() as u64,
                output_len: outs[i],
            }
        })
        .collect()
}

/// vllm 0.30's `RandomDataset.sample` from `np.random.default_rng(seed)`: every input
/// length, every output length, every offset (below the vocabulary size), then the prefix
/// (indices into `allowed`, fitted), then each request's ids fitted in turn; the fitting's
/// padding draws from the same generator.
fn upstream(
    cfg: &TextConfig,
    counter: &Counter,
    t: &tokenizers::Tokenizer,
    n: usize,
    seed: u64,
) -> Vec<Prompt> {
    let mut g = NpGenerator::new(seed);
    let (vocab, allowed) = counter.allowed();
    if allowed.is_empty() {
        return Vec::new();
    }
    let ((in_lo, in_hi), (out_lo, out_hi)) = length_bounds(cfg, counter.special_added());
    let ins: Vec<u64> = (0..n).map(|_| g.integers(in_lo, in_hi + 1)).collect();
    let outs: Vec<u64> = (0..n).map(|_| g.integers(out_lo, out_hi + 1)).collect();
    let offsets: Vec<u64> = (0..n).map(|_| g.integers(0, u64::from(vocab))).collect();
    let len = allowed.len() as u64;
    let prefix = if cfg.prefix_len == 0 {
        Vec::new()
    } else {
        let ids = (0..cfg.prefix_len)
            .map(|_| allowed[g.integers(0, len) as usize])
            .collect();
        fit(t, ids, cfg.prefix_len as usize, vocab, &mut g).1
    };
    (0..n)
        .map(|i| {
            let mut ids = prefix.clone();
            ids.extend((0..ins[i]).map(|k| allowed[((offsets[i] + i as u64 + k) % len) as usize]));
            let target = (cfg.prefix_len + ins[i]) as usize;
            let (text, ids) = fit(t, ids, target, vocab, &mut g);
            Prompt {
                text,
                prompt_len: ids.len() as u64,
                output_len: outs[i],
            }
        })
        .collect()
}

/// vllm's `gen_prompt_decode_to_target_len`: decode, re-encode (no special tokens); stop
/// at `target` tokens or after 10 adjustments, else pad with ids drawn below `vocab` or
/// truncate, and go again. Returns the last decoded text and its re-encoded ids.
fn fit(
    t: &tokenizers::Tokenizer,
    mut ids: Vec<u32>,
    target: usize,
    vocab: u32,
    g: &mut NpGenerator,
) -> (String, Vec<u32>) {
    let mut tries = 10;
    loop {
        let text = t.decode(&ids, false).unwrap_or_default();
        let mut re = t
            .encode_fast(text.as_str(), false)
            .map(|e| e.get_ids().to_vec())
            .unwrap_or_default();
        if tries == 0 || re.len() == target {
            return (text, re);
        }
        if re.len() < target {
            let pad = target - re.len();
            re.extend((0..pad).map(|_| g.integers(0, u64::from(vocab)) as u32));
        } else {
            re.truncate(target);
        }
        ids = re;
        tries -= 1;
    }
}
