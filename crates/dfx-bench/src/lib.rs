//! Benches for dfx-perf: the native tokio + reqwest streaming load generator
//! ([`native`]) and the external `vllm bench serve --omni` driver ([`external`]). Both
//! implement [`dfx_core::bench::Bench`]. `audio` holds the PCM accounting, continuity
//! and audible-onset figures the native bench computes per request.

pub(crate) mod audio;
pub mod external;
pub mod native;
