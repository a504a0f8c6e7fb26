//! Text prompts of the `random` datasets (vLLM's `RandomDataset` rules, seeded with
//! ChaCha8 instead of numpy's PCG64, so the draws are not bit-identical to upstream's):
//! each request is `prefix + allowed[(offset_i + i + k) mod len(allowed)]` for
//! `k < input_len_i`, decoded to text. With a real tokenizer (`--tokenizer`) the text is
//! decoded, re-encoded and adjusted up to 10 times, as upstream does; without one the
//! tokens are words of a fixed vocabulary (about one token each), and every count is an
//! approximation that the result says it is.

use std::path::Path;

use crate::native::BenchError;
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

fn range(rng: &mut ChaCha8Rng, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        lo
    } else {
        rng.random_range(lo..=hi)
    }
}

/// `n` prompts of `cfg`, seeded with `seed` (draw order as upstream: every input length,
/// then every output length, then every offset).
pub fn prompts(cfg: &TextConfig, counter: &Counter, n: usize, seed: u64) -> Vec<Prompt> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (vocab, allowed) = counter.allowed();
    if allowed.is_empty() {
        return Vec::new();
    }
    let prefix: Vec<u32> = (0..cfg.prefix_len)
        .map(|_| allowed[rng.random_range(0..allowed.len())])
        .collect();
    let real_in = cfg.input_len.saturating_sub(counter.special_added()) as f64;
    let (ri, ro) = (cfg.ratio_in, cfg.ratio_out);
    let in_lo = (real_in * (1.0 - ri)).floor() as u64;
    let in_hi = (real_in * (1.0 + ri)).ceil() as u64;
    let out = cfg.output_len as f64;
    let out_lo = ((out * (1.0 - ro)).floor() as u64).max(1);
    let out_hi = ((out * (1.0 + ro)).ceil() as u64).max(1);
    let ins: Vec<u64> = (0..n).map(|_| range(&mut rng, in_lo, in_hi)).collect();
    let outs: Vec<u64> = (0..n).map(|_| range(&mut rng, out_lo, out_hi)).collect();
    let offsets: Vec<u64> = (0..n)
        .map(|_| rng.random_range(0..u64::from(vocab.max(1))))
        .collect();
    (0..n)
        .map(|i| {
            let mut ids = prefix.clone();
            let len = allowed.len() as u64;
            ids.extend((0..ins[i]).map(|k| allowed[((offsets[i] + i as u64 + k) % len) as usize]));
            let target = ids.len();
            let (text, prompt_len) = adjust(counter, ids, target, vocab, &mut rng);
            Prompt {
                text,
                prompt_len,
                output_len: outs[i],
            }
        })
        .collect()
}

/// Upstream's decode → re-encode loop: up to 10 rounds, padding with random ids when the
/// re-encoded text is short, truncating when long.
fn adjust(
    counter: &Counter,
    mut ids: Vec<u32>,
    target: usize,
    vocab: u32,
    rng: &mut ChaCha8Rng,
) -> (String, u64) {
    let Counter::Real(t) = counter else {
        return (counter.decode(&ids), target as u64);
    };
    for _ in 0..10 {
        let text = counter.decode(&ids);
        let Ok(enc) = t.encode_fast(text.as_str(), false) else {
            break;
        };
        let mut re = enc.get_ids().to_vec();
        if re.len() == target {
            return (text, target as u64);
        }
        if re.len() < target {
            let pad = target - re.len();
            re.extend((0..pad).map(|_| rng.random_range(0..vocab.max(1))));
        } else {
            re.truncate(target);
        }
        ids = re;
    }
    let text = counter.decode(&ids);
    let n = counter.count(&text).unwrap_or(ids.len() as u64);
    (text, n)
}
