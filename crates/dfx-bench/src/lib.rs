//! Benches for dfx-perf: the native tokio + reqwest streaming load generator
//! ([`native`]) and the external `vllm bench serve --omni` driver ([`external`]). Both
//! implement [`dfx_core::bench::Bench`]. `audio` holds the PCM accounting and
//! audible-onset figures the native bench computes per request, `metrics` every metric
//! definition (one module each).

pub(crate) mod audio;
pub mod external;
pub(crate) mod metrics;
pub mod native;
