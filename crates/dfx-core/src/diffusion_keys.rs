//! Which entries are diffusion dialect (upstream's `diffusion_benchmark_serving.py` keys):
//! read by the config loader to pick the dialect and by the plan to spot diffusion soaks.

use serde_json::{Map, Value};

/// Keys whose presence marks an entry as diffusion dialect.
pub(crate) const DIFFUSION_KEYS: &[&str] = &[
    "num-prompts",
    "max-concurrency",
    "request-rate",
    "num-inference-steps",
    "width",
    "height",
    "random-request-config",
];

/// Whether an entry (as written) is diffusion dialect: it has one of [`DIFFUSION_KEYS`], or
/// its case carries the `diffusion` tag.
pub(crate) fn is_diffusion_entry(entry: &Map<String, Value>, case_tags: &[String]) -> bool {
    DIFFUSION_KEYS.iter().any(|k| entry.contains_key(*k))
        || case_tags.iter().any(|t| t == "diffusion")
}
