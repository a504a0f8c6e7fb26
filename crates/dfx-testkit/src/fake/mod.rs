//! The suite's hidden test seams `--server fake` ([`server::FakeLauncher`]) and `--bench
//! fake` ([`bench::FakeBench`]). Together they let the suite's own tests run the real
//! suite binary end to end (trials, verdicts, results folder) with nothing external; only
//! the suite's test binary (`tests/perf.rs`) plugs them in (`dfx_harness::TestSeams`).

pub mod bench;
pub mod server;

use dfx_core::bench::Bench;
use dfx_core::server::ServerLauncher;

/// `--server fake`: the fake launcher steered by the environment
/// ([`server::FakeLauncher::from_env`]).
pub fn launcher_from_env() -> Box<dyn ServerLauncher + Send> {
    Box::new(server::FakeLauncher::from_env())
}

/// `--bench fake`: the fake bench with its `DFX_FAKE_*` knobs from the environment; the
/// error names a knob it cannot use ([`bench::KnobError`]).
pub fn bench_from_env() -> Result<Box<dyn Bench + Send>, Box<dyn std::error::Error + Send + Sync>> {
    Ok(Box::new(bench::FakeBench {
        knobs: bench::FakeKnobs::from_env()?,
    }))
}
