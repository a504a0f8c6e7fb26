//! The suite harness: the shared CLI (libtest flags + suite flags), trial construction for
//! libtest-mimic, the server pool and the runner that writes the results folder.
//!
//! Entry points:
//! - [`main`]: what `tests/perf.rs` calls; parses argv and runs the suite ([`main_from`]:
//!   the same for `dfx-perf run`, with [`Project::installed`]);
//! - [`cli::parse_env`] / [`cli::SuiteArgs`]: the one CLI struct every root test target
//!   parses argv with, so `cargo test -- --assert-baseline <filter>` works for all of them.
//!
//! Module map: [`cli`] raw flags → `settings` validated `settings::SuiteConfig`;
//! `select` decides per trial (bench, or why it cannot run); [`partition`] keeps one
//! shard's server groups (`--partition`) and deals a plan into shards; [`estimate`] bounds
//! a shard's wall-clock time for CI timeouts; `pool` keeps one live
//! server; `runner` runs one trial; `results` and `summary` write the run folder,
//! `progress` is what the run did so far, `eta` says `[3/29]` and the time left,
//! `finish` closes a run, `interrupt` closes
//! it on SIGINT / SIGTERM;
//! `listing` renders `--list-verbose`; `wiring`
//! is the one place where the real launchers, benches and report writer plug in.

pub mod cli;
pub mod estimate;
pub(crate) mod eta;
pub mod exit;
pub(crate) mod fingerprint;
pub(crate) mod finish;
pub(crate) mod gpu;
pub(crate) mod history;
pub(crate) mod interrupt;
pub(crate) mod listing;
pub mod partition;
pub(crate) mod pool;
pub(crate) mod progress;
pub(crate) mod quality;
pub mod reference;
pub(crate) mod reserve;
pub(crate) mod result_keys;
pub(crate) mod results;
pub(crate) mod runner;
pub(crate) mod select;
pub(crate) mod server_info;
pub(crate) mod settings;
pub(crate) mod suite;
pub(crate) mod summary;
pub(crate) mod wiring;

use std::process::ExitCode;

pub use settings::{FakeKnobError, Project, TestSeams};

/// Runs the suite: parses `std::env::args_os()` with [`cli::SuiteArgs`], loads the plan
/// and runs the selected trials. `tests/perf.rs` is just
/// `fn main() -> ExitCode { dfx_harness::main(Project { … }) }`.
pub fn main(project: Project) -> ExitCode {
    main_from(std::env::args_os(), project)
}

/// [`main`] with an explicit argument list (first element: the program name for usage
/// lines). `dfx-perf run ARGS` is `main_from(["dfx-perf run", ARGS…],
/// Project::installed()?)`: the same suite as the test binary, rooted at the current
/// folder or `--root`.
pub fn main_from<I, T>(argv: I, project: Project) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    suite::run(cli::parse_from(argv), project)
}
