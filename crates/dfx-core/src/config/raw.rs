//! Raw serde structs mirroring the upstream perf-config JSON, for both dialects.
//!
//! Every field is an `Option<Value>`: deserialising a JSON object into these structs
//! cannot fail, so validation (in the sibling modules) can check each key's type itself
//! and report *every* problem with the key's name, instead of stopping at serde's first
//! error. A `null` value reads as absent, as in upstream's `dict.get`.

use serde::Deserialize;
use serde_json::{Map, Value};

/// One element of a config file's top-level array.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct RawCase {
    pub test_name: Option<Value>,
    pub server_params: Option<Value>,
    pub benchmark_params: Option<Value>,
    pub mark: Option<Value>,
    pub server_type: Option<Value>,
    pub description: Option<Value>,
    /// Every other key: upstream's runner keys, read from here; unknown ones are refused
    /// (`known_keys`).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `server_params`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct RawServerParams {
    pub model: Option<Value>,
    pub stage_config_name: Option<Value>,
    pub update: Option<Value>,
    pub delete: Option<Value>,
    pub stage_overrides: Option<Value>,
    pub serve_args: Option<Value>,
    pub extra_cli_args: Option<Value>,
    pub use_omni: Option<Value>,
    pub trust_remote_code: Option<Value>,
    pub env: Option<Value>,
    /// dfx-perf extension: per-case readiness timeout in seconds.
    pub ready_timeout_s: Option<Value>,
}

/// A benchmark entry of the omni/TTS dialect (snake_case keys). Other known keys
/// (`known_keys`) are passed through to the external bench; they stay in the raw map the
/// entry keeps.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct RawOmniEntry {
    pub dataset_name: Option<Value>,
    pub backend: Option<Value>,
    pub endpoint: Option<Value>,
    pub dataset_path: Option<Value>,
    pub num_prompts: Option<Value>,
    pub max_concurrency: Option<Value>,
    pub request_rate: Option<Value>,
    pub seed_tts_locale: Option<Value>,
    #[serde(rename = "percentile-metrics")]
    pub percentile_metrics_dashed: Option<Value>,
    pub percentile_metrics: Option<Value>,
    #[serde(rename = "metric-percentiles")]
    pub metric_percentiles_dashed: Option<Value>,
    pub metric_percentiles: Option<Value>,
    pub goodput: Option<Value>,
    pub extra_body: Option<Value>,
    pub seed_tts_wer_eval: Option<Value>,
    pub baseline: Option<Value>,
    pub task: Option<Value>,
    pub eval_phase: Option<Value>,
    #[allow(
        dead_code,
        reason = "declared so the key is known; its value is read from the raw map"
    )]
    pub enabled: Option<Value>,
    pub name: Option<Value>,
    pub num_warmups: Option<Value>,
    /// dfx-perf extension: how many times each sweep step runs on the same server.
    pub repeats: Option<Value>,
    /// dfx-perf extension: a capacity search instead of a sweep.
    pub capacity: Option<Value>,
    pub burstiness: Option<Value>,
    pub seed: Option<Value>,
    /// dfx-perf extension: `"fresh"` or `"pooled"` connections for the native bench.
    pub connection: Option<Value>,
    /// dfx-perf extensions (native bench, rate steps): load shape, cap and gate.
    pub ramp_start_rate: Option<Value>,
    pub burst: Option<Value>,
    pub soak_duration_s: Option<Value>,
    pub cohorts: Option<Value>,
    pub saturation: Option<Value>,
    pub open_loop_max_concurrency: Option<Value>,
}

/// A benchmark entry of the diffusion dialect (kebab-case keys, image/video generation).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct RawDiffusionEntry {
    pub name: Option<Value>,
    pub dataset: Option<Value>,
    pub task: Option<Value>,
    #[allow(
        dead_code,
        reason = "declared so the key is known; its value is read from the raw map"
    )]
    pub width: Option<Value>,
    #[allow(
        dead_code,
        reason = "declared so the key is known; its value is read from the raw map"
    )]
    pub height: Option<Value>,
    #[allow(
        dead_code,
        reason = "declared so the key is known; its value is read from the raw map"
    )]
    #[serde(rename = "num-inference-steps")]
    pub num_inference_steps: Option<Value>,
    #[serde(rename = "num-prompts")]
    pub num_prompts: Option<Value>,
    #[serde(rename = "max-concurrency")]
    pub max_concurrency: Option<Value>,
    #[serde(rename = "request-rate")]
    pub request_rate: Option<Value>,
    pub baseline: Option<Value>,
    #[allow(
        dead_code,
        reason = "declared so the key is known; its value is read from the raw map"
    )]
    pub enabled: Option<Value>,
    pub seed: Option<Value>,
}

pub(crate) use crate::diffusion_keys::is_diffusion_entry;

/// Deserialises one of the raw structs from an object. Infallible in practice (every field
/// is an optional `Value`); a failure is reported rather than unwrapped.
pub(crate) fn from_object<T: serde::de::DeserializeOwned>(
    obj: &Map<String, Value>,
) -> Result<T, serde_json::Error> {
    serde_json::from_value(Value::Object(obj.clone()))
}
