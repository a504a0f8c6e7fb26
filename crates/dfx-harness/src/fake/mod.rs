//! Test seams, hidden from `--help`: `--server fake` ([`server::FakeLauncher`]) and
//! `--bench fake` ([`bench::FakeBench`]). Together they let the suite's own tests run
//! the real suite binary end to end (trials, verdicts, results folder) with nothing
//! external.

pub(crate) mod bench;
pub(crate) mod server;
