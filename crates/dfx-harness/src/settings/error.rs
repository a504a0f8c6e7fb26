//! Settings the suite refuses before anything starts (and the one setup step that may
//! fail without stopping the run: installing the signal handler).

use std::path::PathBuf;

use super::FlagError;

/// A setting that cannot be used, or a setup step that failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SetupError {
    /// A hidden millisecond knob (`DFX_SERVER_GRACE_MS`, …) that is not a whole number.
    #[error("invalid value `{value}` for {name}: milliseconds expected")]
    Knob {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// The parser's error.
        #[source]
        source: std::num::ParseIntError,
    },
    /// `--server-url` cannot be attached to.
    #[error(transparent)]
    Attach(#[from] dfx_core::server::ServerError),
    /// A `DFX_FAKE_*` knob of the fake bench.
    #[error(transparent)]
    FakeKnob(super::project::FakeKnobError),
    /// `--server fake` / `--bench fake` in a binary without the test fakes.
    #[error(
        "{flag} fake is a test seam of the suite's test binary (`cargo test --test perf`); \
         this dfx-perf has no fakes (accepted here: --server auto/sim, --bench \
         auto/native/vllm)"
    )]
    NoTestSeams {
        /// `--server` or `--bench`.
        flag: &'static str,
    },
    /// The guard binary is missing.
    #[error(
        "the guard ({exe}) is not an executable file: {} (looked beside the running \
         dfx-perf, then on PATH; `pip install dfx-perf`, the release archive and `cargo \
         build --release` put it beside dfx-perf)",
        path.display()
    )]
    NoGuard {
        /// The guard's file name.
        exe: &'static str,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// `--hardware` / `DFX_HARDWARE` names an unknown label.
    #[error("{0}")]
    HardwareGiven(FlagError),
    /// The detected hardware label is unknown.
    #[error(
        "detected hardware label: {why}; pass --hardware (DFX_HARDWARE) with a known                  label, or name this one in baselines/{label}.json"
    )]
    HardwareDetected {
        /// The detected label.
        label: String,
        /// What is accepted.
        #[source]
        why: dfx_core::hardware::UnknownLabel,
    },
    /// Another `ctrlc` handler exists in the process.
    #[error("cannot install the signal handler: {0}")]
    Signal(#[source] ctrlc::Error),
}
