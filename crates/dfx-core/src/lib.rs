//! Core of dfx-perf: everything between a perf-config file and a verdict that does not
//! need a server or a network.
//!
//! Data flow: [`config`] reads the upstream perf-config JSON (raw serde structs) and
//! validates it into a [`plan::Plan`]; every [`plan::Trial`] knows its
//! [`server::ServerSpec`], its [`plan::BenchEntry`], its [`plan::SweepStep`] and its
//! resolved [`baseline::Thresholds`]. The harness drives trials through the two seams
//! defined here, [`server::ServerLauncher`] and [`bench::Bench`], and judges the outcome
//! with [`verdict`].

pub mod artefact;
pub mod baseline;
pub mod bench;
pub mod bounds;
pub mod checks;
pub mod config;
pub mod contract;
pub mod deploy;
pub mod describe;
pub mod diag;
pub(crate) mod diffusion_keys;
pub mod faults;
pub mod fsutil;
pub mod goodput;
pub mod hardware;
pub mod hash;
pub mod lenient;
pub(crate) mod load;
pub mod metrics;
pub mod models;
pub(crate) mod percentiles;
pub mod plan;
pub mod reference;
pub mod repeats;
pub mod result;
pub mod runner_keys;
pub mod server;
pub mod step;
pub mod stop;
pub mod suggest;
pub mod verdict;

/// `println!` that never panics: a line that cannot be written (stdout on a full disk, a
/// closed pipe) is dropped. For the servers and test doubles whose stdout is a log file.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!` that never panics: a line that cannot be written is dropped (see
/// [`outln!`]).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}
