//! Benches for dfx-perf: the native tokio + reqwest streaming load generator
//! ([`native`]) and the external `vllm bench serve --omni` driver ([`external`]). Both
//! implement [`dfx_core::bench::Bench`].

pub mod external;
pub mod native;
