//! `random-mm` multimodal items (vllm-omni's `OmniRandomMultiModalDataset` rules): bucket
//! config, per-modality limits and the items-per-request draw. Only the item *shapes*
//! are drawn here (cheap, all up front); their noise payloads are made lazily
//! ([`super::media`]) from a per-item seed.

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

use super::RandomError;

/// One multimodal item to generate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Item {
    /// Noise RGB JPEG.
    Image {
        /// Pixels, 1..=[`MAX_SIDE`].
        height: u32,
        /// Pixels, 1..=[`MAX_SIDE`].
        width: u32,
    },
    /// `frames` noise frames as H.264 MP4 at 30 fps.
    Video {
        /// Pixels, even, 2..=[`MAX_SIDE`].
        height: u32,
        /// Pixels, even, 2..=[`MAX_SIDE`].
        width: u32,
        /// Frame count, 2..=`MAX_FRAMES`.
        frames: u32,
    },
    /// ±0.5 noise, 48 kHz, 16-bit WAV.
    Audio {
        /// Duration, 1..=`MAX_AUDIO_SECONDS` seconds.
        seconds: u32,
        /// Channel count, 1..=`MAX_CHANNELS`.
        channels: u32,
    },
}

impl Item {
    /// `image`, `video` or `audio` (the `limit_mm_per_prompt` key).
    pub fn modality(&self) -> &'static str {
        match self {
            Item::Image { .. } => "image",
            Item::Video { .. } => "video",
            Item::Audio { .. } => "audio",
        }
    }

    /// Raw payload bytes before encoding (for memory bounds).
    pub(crate) fn raw_bytes(&self) -> u64 {
        match *self {
            Item::Image { height, width } => u64::from(height) * u64::from(width) * 3,
            Item::Video {
                height,
                width,
                frames,
            } => u64::from(height) * u64::from(width) * 3 / 2 * u64::from(frames),
            Item::Audio { seconds, channels } => {
                u64::from(seconds) * 48_000 * 2 * u64::from(channels)
            }
        }
    }
}

/// Largest image/video side accepted in a bucket, pixels.
pub const MAX_SIDE: u32 = 8192;
/// Most video frames accepted in a bucket.
pub(crate) const MAX_FRAMES: u32 = 1024;
/// Longest audio item accepted in a bucket, seconds.
pub(crate) const MAX_AUDIO_SECONDS: u32 = 3600;
/// Most audio channels accepted in a bucket.
pub(crate) const MAX_CHANNELS: u32 = 8;
/// Largest raw payload of one item, bytes (`Item::raw_bytes`).
pub const MAX_ITEM_BYTES: u64 = 256 * 1024 * 1024;
/// Largest raw payload the limits let one request's items reach, bytes.
pub(crate) const MAX_REQUEST_BYTES: u64 = 512 * 1024 * 1024;
/// Most items per request.
pub(crate) const MAX_ITEMS: u64 = 1024;

/// The parsed `random_mm_*` keys.
#[derive(Debug, Clone, PartialEq)]
pub struct MmConfig {
    /// Buckets with a positive weight, normalised, in the order written.
    pub buckets: Vec<(Item, f64)>,
    /// Limits of the modalities that have buckets.
    pub limits: Vec<(&'static str, u64)>,
    /// Items per request, the centre of the drawn range (`random_mm_base_items_per_request`,
    /// default 1).
    pub base_items: u64,
    /// Spread of the per-request item count around `base_items`, 0..=1
    /// (`random_mm_num_mm_items_range_ratio`, default 0).
    pub items_ratio: f64,
}

fn int_of(v: &Value, key: &str) -> Result<u64, RandomError> {
    v.as_u64()
        .or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                .map(|f| f as u64)
        })
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| RandomError::NotInteger {
            key: key.to_string(),
            value: v.clone(),
        })
}

fn float_of(v: &Value, key: &str) -> Result<f64, RandomError> {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .filter(|f: &f64| f.is_finite())
        .ok_or_else(|| RandomError::NotNumber {
            key: key.to_string(),
            value: v.clone(),
        })
}

/// `(a, b, c)` → three integers.
fn triple(key: &str) -> Option<(u64, u64, u64)> {
    let inner = key.trim().strip_prefix('(')?.strip_suffix(')')?;
    let parts: Vec<u64> = inner
        .split(',')
        .map(|p| p.trim().parse().ok())
        .collect::<Option<_>>()?;
    match parts[..] {
        [a, b, c] => Some((a, b, c)),
        _ => None,
    }
}

/// The bucket config: a JSON object with Python-tuple keys (`{"(0, 60, 3)": 1.0}`) or a
/// string holding a Python dict literal (`"{(256, 256, 1): 0.5}"`).
fn bucket_pairs(v: &Value) -> Result<Vec<(String, f64)>, RandomError> {
    const KEY: &str = "random_mm_bucket_config";
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, w)| Ok((k.clone(), float_of(w, KEY)?)))
            .collect(),
        Value::String(s) => parse_literal(s),
        other => Err(RandomError::BucketsNotObject(other.clone())),
    }
}

/// A Python dict literal with tuple keys: `{(256, 256, 1): 0.5, (0, 60, 3): 0.5}`.
fn parse_literal(s: &str) -> Result<Vec<(String, f64)>, RandomError> {
    let bad = || RandomError::NotDictLiteral(s.to_string());
    let mut rest = s
        .trim()
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .ok_or_else(bad)?
        .trim();
    let mut out = Vec::new();
    while !rest.is_empty() {
        let close = rest.find(')').ok_or_else(bad)?;
        let key = rest[..=close]
            .trim()
            .trim_start_matches(['"', '\''])
            .to_string();
        let after = rest[close + 1..]
            .trim_start_matches(['"', '\''])
            .trim_start();
        let after = after.strip_prefix(':').ok_or_else(bad)?;
        let (w, tail) = after.split_once(',').unwrap_or((after, ""));
        let w: f64 = w.trim().parse().map_err(|_| bad())?;
        out.push((key, w));
        rest = tail.trim();
    }
    Ok(out)
}

/// The item of a bucket key (omni's rule: first element 0 → audio `(0, seconds,
/// channels)`; else 1 frame → image, more → video).
fn bucket_item(key: &str) -> Result<Item, RandomError> {
    let (a, b, c) = triple(key).ok_or_else(|| RandomError::NotTriple(key.to_string()))?;
    let small = |x: u64, max: u32, what: &'static str| {
        u32::try_from(x)
            .ok()
            .filter(|&x| x >= 1 && x <= max)
            .ok_or_else(|| RandomError::BucketRange {
                key: key.to_string(),
                what,
                x,
                max,
            })
    };
    if a == 0 {
        return Ok(Item::Audio {
            seconds: small(b, MAX_AUDIO_SECONDS, "audio seconds")?,
            channels: small(c, MAX_CHANNELS, "channels")?,
        });
    }
    let (height, width) = (small(a, MAX_SIDE, "height")?, small(b, MAX_SIDE, "width")?);
    Ok(match c {
        0 => return Err(RandomError::ZeroFrames(key.to_string())),
        1 => Item::Image { height, width },
        _ if !height.is_multiple_of(2) || !width.is_multiple_of(2) => {
            return Err(RandomError::OddVideo(key.to_string()));
        }
        _ => Item::Video {
            height,
            width,
            frames: small(c, MAX_FRAMES, "frames")?,
        },
    })
}

impl MmConfig {
    /// Parses an entry's keys (normalised to underscores); the error names the key.
    pub fn parse(raw: &Map<String, Value>) -> Result<MmConfig, RandomError> {
        let get = |k: &str| raw.get(k);
        let default_buckets = serde_json::json!({
            "(256, 256, 1)": 0.5, "(720, 1280, 1)": 0.5, "(720, 1280, 16)": 0.0
        });
        let pairs = bucket_pairs(get("random_mm_bucket_config").unwrap_or(&default_buckets))?;
        let mut buckets = Vec::new();
        for (k, w) in pairs {
            if w.is_nan() || w < 0.0 {
                return Err(RandomError::NegativeWeight { key: k, w });
            }
            let item = bucket_item(&k)?;
            if item.raw_bytes() > MAX_ITEM_BYTES {
                return Err(RandomError::ItemTooBig {
                    key: k,
                    bytes: item.raw_bytes(),
                    max: MAX_ITEM_BYTES,
                });
            }
            if w > 0.0 {
                buckets.push((item, w));
            }
        }
        let total: f64 = buckets.iter().map(|b| b.1).sum();
        if buckets.is_empty() || total.is_nan() || total <= 0.0 || !total.is_finite() {
            return Err(RandomError::NoWeight);
        }
        for b in &mut buckets {
            b.1 /= total;
        }
        let default_limits = serde_json::json!({"image": 255, "video": 1});
        let limits_v = get("random_mm_limit_mm_per_prompt").unwrap_or(&default_limits);
        let limits_v = match limits_v {
            Value::String(s) => {
                serde_json::from_str(s).map_err(|source| RandomError::NotJsonObject {
                    key: "random_mm_limit_mm_per_prompt",
                    source,
                })?
            }
            v => v.clone(),
        };
        let Value::Object(lm) = limits_v else {
            return Err(RandomError::LimitsNotObject);
        };
        let mut limits: Vec<(&'static str, u64)> = Vec::new();
        for m in ["image", "video", "audio"] {
            if !buckets.iter().any(|b| b.0.modality() == m) {
                continue;
            }
            let v = lm.get(m).ok_or(RandomError::NoLimit(m))?;
            let n = int_of(v, "random_mm_limit_mm_per_prompt")?;
            limits.push((m, n.min(MAX_ITEMS)));
        }
        let base_items = match get("random_mm_base_items_per_request") {
            Some(v) => int_of(v, "random_mm_base_items_per_request")?,
            None => 1,
        };
        if base_items > MAX_ITEMS {
            return Err(RandomError::TooManyItems {
                n: base_items,
                max: MAX_ITEMS,
            });
        }
        let items_ratio = match get("random_mm_num_mm_items_range_ratio") {
            Some(v) => float_of(v, "random_mm_num_mm_items_range_ratio")?,
            None => 0.0,
        };
        if !(0.0..=1.0).contains(&items_ratio) {
            return Err(RandomError::ItemsRatio(items_ratio));
        }
        let cfg = MmConfig {
            buckets,
            limits,
            base_items,
            items_ratio,
        };
        let (lo, hi) = cfg.items_range();
        if lo > hi {
            return Err(RandomError::ItemsVsLimits { lo, hi });
        }
        let worst = cfg
            .limits
            .iter()
            .map(|&(m, n)| {
                let big = cfg.buckets.iter().filter(|b| b.0.modality() == m);
                n * big.map(|b| b.0.raw_bytes()).max().unwrap_or(0)
            })
            .sum::<u64>();
        if worst.min(
            hi * cfg
                .buckets
                .iter()
                .map(|b| b.0.raw_bytes())
                .max()
                .unwrap_or(0),
        ) > MAX_REQUEST_BYTES
        {
            return Err(RandomError::MediaTooBig(MAX_REQUEST_BYTES));
        }
        Ok(cfg)
    }

    /// `[max(0, floor(n(1−r))), min(Σ limits, ceil(n(1+r)))]`.
    pub fn items_range(&self) -> (u64, u64) {
        let n = self.base_items as f64;
        let lo = (n * (1.0 - self.items_ratio)).floor().max(0.0) as u64;
        let cap: u64 = self.limits.iter().map(|l| l.1).sum();
        let hi = ((n * (1.0 + self.items_ratio)).ceil() as u64).min(cap);
        (lo, hi)
    }

    /// The items of `n` requests: a count per request, then weighted draws, a modality's
    /// buckets dropping out once it reaches its limit.
    pub fn draw(&self, n: usize, seed: u64) -> Vec<Vec<Item>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6d6d_6974_656d_7321);
        let (lo, hi) = self.items_range();
        (0..n)
            .map(|_| {
                let k = if hi > lo {
                    rng.random_range(lo..=hi)
                } else {
                    lo
                };
                let mut used: Vec<(&str, u64)> = self.limits.iter().map(|l| (l.0, 0)).collect();
                let mut items = Vec::new();
                for _ in 0..k {
                    let open = |m: &str| {
                        let cap = self.limits.iter().find(|l| l.0 == m).map_or(0, |l| l.1);
                        used.iter().find(|u| u.0 == m).map_or(0, |u| u.1) < cap
                    };
                    let live: Vec<&(Item, f64)> = self
                        .buckets
                        .iter()
                        .filter(|b| open(b.0.modality()))
                        .collect();
                    let total: f64 = live.iter().map(|b| b.1).sum();
                    if live.is_empty() || total <= 0.0 {
                        break;
                    }
                    let mut x = rng.random::<f64>() * total;
                    let mut pick = live[live.len() - 1].0;
                    for b in &live {
                        if x < b.1 {
                            pick = b.0;
                            break;
                        }
                        x -= b.1;
                    }
                    if let Some(u) = used.iter_mut().find(|u| u.0 == pick.modality()) {
                        u.1 += 1;
                    }
                    items.push(pick);
                }
                items
            })
            .collect()
    }
}
