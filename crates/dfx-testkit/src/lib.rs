//! dfx-perf's test doubles, in a crate that only tests link (a dev-dependency of the
//! product crates, never a dependency).
//!
//! - [`bin`]: the path of a test executable, built by cargo on first use;
//! - [`fake`]: the in-process fake launcher and fake bench behind the suite's hidden
//!   `--server fake` / `--bench fake`;
//! - [`trials`]: specs, trials, thresholds and stub benches for the harness's unit tests;
//! - executables: `dfx-fake-server` (a stand-in for `vllm-omni serve` / `sgl-omni serve`
//!   that misbehaves on request), `dfx-launch-helper` (starts one fake server through
//!   `dfx_server::ProcessLauncher` in a process of its own), `dfx-fake-vllm` (a stand-in
//!   for `vllm bench serve --omni`); each documents its knobs in its own file.

mod exe;
pub mod fake;
pub mod trials;

pub use exe::bin;
