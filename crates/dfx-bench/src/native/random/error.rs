//! Why an entry's `random` / `random-mm` keys are refused. Every message starts with the key.

use serde_json::Value;

use super::{MAX_LEN, MAX_STEP_TOKENS};

const BUCKETS: &str = "random_mm_bucket_config";
const LIMITS: &str = "random_mm_limit_mm_per_prompt";

/// A `random` / `random-mm` key that cannot be used, named in the message.
#[derive(Debug, thiserror::Error)]
pub enum RandomError {
    /// Not a non-negative integer (or a string holding one).
    #[error("{key}: expected a non-negative integer, got {value}")]
    NotInteger {
        /// The key.
        key: String,
        /// Its value.
        value: Value,
    },
    /// Not a finite number (or a string holding one).
    #[error("{key}: expected a number, got {value}")]
    NotNumber {
        /// The key.
        key: String,
        /// Its value.
        value: Value,
    },
    /// A token length above the cap.
    #[error("{key}: {n} is more than {MAX_LEN} tokens")]
    TooLong {
        /// The key.
        key: String,
        /// The length asked for.
        n: u64,
    },
    /// A range ratio outside `[0, 1)`.
    #[error("{key}: {r} outside [0, 1)")]
    RatioRange {
        /// The key.
        key: String,
        /// The ratio.
        r: f64,
    },
    /// A string that should hold a JSON object does not.
    #[error("{key}: not a JSON object: {source}")]
    NotJsonObject {
        /// The key.
        key: &'static str,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
    /// `random_range_ratio` as a dict for `random-mm`.
    #[error(
        "random_range_ratio: the dict form is not accepted for random-mm (upstream passes the raw string to the multimodal dataset); give one number"
    )]
    DictForMm,
    /// A `dataset_path` on a generated dataset.
    #[error("dataset_path: dataset {0} generates its prompts and takes no dataset_path")]
    DatasetPath(String),
    /// Prompts longer than the cap.
    #[error("random_input_len: prompts up to {0} tokens (prefix included), more than {MAX_LEN}")]
    PromptsTooLong(u64),
    /// More prompt tokens in the step than the cap.
    #[error(
        "num_prompts: {num_prompts} prompts of up to {longest} tokens exceed {MAX_STEP_TOKENS} tokens per step"
    )]
    StepTooBig {
        /// The step's prompts.
        num_prompts: u64,
        /// The longest prompt.
        longest: u64,
    },
    /// The bucket config is neither an object nor a string.
    #[error("{BUCKETS}: expected an object, got {0}")]
    BucketsNotObject(Value),
    /// The bucket config string is not a dict literal.
    #[error("{BUCKETS}: not a dict literal with (h, w, n) keys: {0:?}")]
    NotDictLiteral(String),
    /// A bucket key that is not `(a, b, c)`.
    #[error("{BUCKETS}: bucket {0:?} is not a tuple of three non-negative integers")]
    NotTriple(String),
    /// A bucket dimension outside its bounds.
    #[error("{BUCKETS}: bucket {key}: {what} {x} outside 1..={max}")]
    BucketRange {
        /// The bucket key.
        key: String,
        /// `height`, `width`, `frames`, `audio seconds` or `channels`.
        what: &'static str,
        /// The value.
        x: u64,
        /// The largest accepted.
        max: u32,
    },
    /// A video bucket with 0 frames.
    #[error("{BUCKETS}: bucket {0}: 0 frames")]
    ZeroFrames(String),
    /// A video bucket with an odd side.
    #[error("{BUCKETS}: bucket {0}: video height and width must be even (4:2:0 frames)")]
    OddVideo(String),
    /// A negative (or NaN) bucket weight.
    #[error("{BUCKETS}: bucket {key} has a negative weight {w}")]
    NegativeWeight {
        /// The bucket key.
        key: String,
        /// The weight.
        w: f64,
    },
    /// A bucket whose items are too large.
    #[error(
        "{BUCKETS}: bucket {key} makes {} MB items (at most {} MB)",
        bytes >> 20,
        max >> 20
    )]
    ItemTooBig {
        /// The bucket key.
        key: String,
        /// One item's raw size.
        bytes: u64,
        /// The largest accepted.
        max: u64,
    },
    /// Every weight is zero.
    #[error("{BUCKETS}: no bucket with a positive weight")]
    NoWeight,
    /// The limits are not an object.
    #[error("{LIMITS}: expected an object")]
    LimitsNotObject,
    /// A modality with buckets but no limit.
    #[error("{LIMITS}: the bucket config has {0} buckets but no {0:?} limit")]
    NoLimit(&'static str),
    /// More base items than the cap.
    #[error("random_mm_base_items_per_request: {n} is more than {max}")]
    TooManyItems {
        /// The base items asked for.
        n: u64,
        /// The most accepted.
        max: u64,
    },
    /// An items range ratio outside `[0, 1]`.
    #[error("random_mm_num_mm_items_range_ratio: {0} outside [0, 1]")]
    ItemsRatio(f64),
    /// The base items exceed what the limits allow.
    #[error(
        "random_mm_base_items_per_request: at least {lo} items per request, but the limits allow {hi}"
    )]
    ItemsVsLimits {
        /// The fewest items a request gets.
        lo: u64,
        /// The most the limits allow.
        hi: u64,
    },
    /// A request could carry too much media.
    #[error(
        "{LIMITS}: a request could carry more than {} MB of media",
        .0 >> 20
    )]
    MediaTooBig(u64),
}
