//! The `random` and `random-mm` datasets of the chat-omni bench (`docs/bench.md`,
//! "random datasets"): the entry's keys parsed and bounded at load ([`parse`]), the
//! text prompts ([`text`]), the multimodal item shapes ([`mm`]) and their noise payloads,
//! made lazily while the step runs ([`media`], [`mp4`]).

mod error;
pub mod media;
pub mod mm;
pub mod mp4;
pub mod text;

use serde_json::{Map, Value};

use dfx_core::plan::BenchEntry;

pub use self::error::RandomError;
use self::mm::{Item, MmConfig};
use self::text::{Counter, Prompt, TextConfig};

/// Longest input (prefix included) and output length accepted, in tokens.
pub(crate) const MAX_LEN: u64 = 262_144;
/// Most prompt tokens a step may hold (number of prompts × longest prompt).
pub(crate) const MAX_STEP_TOKENS: u64 = 64 * 1024 * 1024;

/// What an entry asks of the dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomPlan {
    /// The text lengths (`random_input_len`, `random_output_len`, `random_prefix_len`,
    /// `random_range_ratio`).
    pub text: TextConfig,
    /// `random-mm` only.
    pub mm: Option<MmConfig>,
}

/// One request's content: its text and the shapes of its items.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    /// Its text prompt and `max_tokens`.
    pub prompt: Prompt,
    /// Its multimodal items, in content order (empty for `random`).
    pub items: Vec<Item>,
    /// Seed of its items' noise (item `j` uses `seed + j`).
    pub seed: u64,
}

/// The entry's keys with dashes turned into underscores (the flags' spelling).
fn normalised(raw: &Map<String, Value>) -> Map<String, Value> {
    raw.iter()
        .map(|(k, v)| (k.replace('-', "_"), v.clone()))
        .collect()
}

fn len_key(m: &Map<String, Value>, keys: [&str; 2], default: u64) -> Result<u64, RandomError> {
    // `input_len` / `output_len` are copied onto the random keys, so they win.
    for k in keys.iter().rev() {
        if let Some(v) = m.get(*k).filter(|v| !v.is_null()) {
            let n = v
                .as_u64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                .ok_or_else(|| RandomError::NotInteger {
                    key: k.to_string(),
                    value: v.clone(),
                })?;
            if n > MAX_LEN {
                return Err(RandomError::TooLong {
                    key: k.to_string(),
                    n,
                });
            }
            return Ok(n);
        }
    }
    Ok(default)
}

fn ratio(v: &Value, key: &str) -> Result<f64, RandomError> {
    let r = v
        .as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| RandomError::NotNumber {
            key: key.to_string(),
            value: v.clone(),
        })?;
    if !(0.0..1.0).contains(&r) {
        return Err(RandomError::RatioRange {
            key: key.to_string(),
            r,
        });
    }
    Ok(r)
}

/// `random_range_ratio`: a number, a numeric string, or (for `random` only) a JSON dict
/// `{"input": a, "output": b}`, as an object or a string.
fn range_ratios(m: &Map<String, Value>, multimodal: bool) -> Result<(f64, f64), RandomError> {
    const KEY: &str = "random_range_ratio";
    let Some(v) = m.get(KEY).filter(|v| !v.is_null()) else {
        return Ok((0.0, 0.0));
    };
    let dict = match v {
        Value::Object(d) => Some(d.clone()),
        Value::String(s) if s.trim_start().starts_with('{') => Some(
            serde_json::from_str::<Map<String, Value>>(s)
                .map_err(|source| RandomError::NotJsonObject { key: KEY, source })?,
        ),
        _ => None,
    };
    match dict {
        Some(_) if multimodal => Err(RandomError::DictForMm),
        Some(d) => {
            let get = |k: &str| {
                d.get(k)
                    .map_or(Ok(0.0), |v| ratio(v, &format!("{KEY}.{k}")))
            };
            Ok((get("input")?, get("output")?))
        }
        None => {
            let r = ratio(v, KEY)?;
            Ok((r, r))
        }
    }
}

/// Parses and bounds an entry of dataset `random` or `random-mm`. Errors name the key.
pub fn parse(entry: &BenchEntry, num_prompts: u64) -> Result<RandomPlan, RandomError> {
    let dataset = entry.dataset_name.as_deref().unwrap_or("");
    let multimodal = dataset == "random-mm";
    if entry.dataset_path.is_some() {
        return Err(RandomError::DatasetPath(dataset.to_string()));
    }
    let m = normalised(&entry.raw);
    let (ratio_in, ratio_out) = range_ratios(&m, multimodal)?;
    let text = TextConfig {
        input_len: len_key(&m, ["random_input_len", "input_len"], 1024)?,
        output_len: len_key(&m, ["random_output_len", "output_len"], 128)?,
        prefix_len: len_key(&m, ["random_prefix_len", "random_prefix_len"], 0)?,
        ratio_in,
        ratio_out,
    };
    let longest = text.prefix_len + (text.input_len as f64 * (1.0 + ratio_in)).ceil() as u64;
    if longest > MAX_LEN {
        return Err(RandomError::PromptsTooLong(longest));
    }
    if longest.saturating_mul(num_prompts) > MAX_STEP_TOKENS {
        return Err(RandomError::StepTooBig {
            num_prompts,
            longest,
        });
    }
    let mm = if multimodal {
        Some(MmConfig::parse(&m)?)
    } else {
        None
    };
    Ok(RandomPlan { text, mm })
}

impl RandomPlan {
    /// The `n` requests of a step: prompts (seeded with `seed`), then item shapes.
    pub fn requests(&self, counter: &Counter, n: usize, seed: u64) -> Vec<RequestSpec> {
        let prompts = text::prompts(&self.text, counter, n, seed);
        let items = match &self.mm {
            Some(mm) => mm.draw(n, seed),
            None => vec![Vec::new(); n],
        };
        prompts
            .into_iter()
            .zip(items)
            .enumerate()
            .map(|(i, (prompt, items))| RequestSpec {
                prompt,
                items,
                seed: seed
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add((i as u64) << 20),
            })
            .collect()
    }
}
