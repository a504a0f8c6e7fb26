//! Tests of the suite binary's command line, run as libtest-mimic trials (this target is
//! `harness = false` and parses argv with the suite's own CLI, like every root test
//! target, so `cargo test -- --assert-baseline <filter>` is accepted here too).
//!
//! Each check runs the REAL suite: either the literal `cargo test -- …` command from the
//! repository root (nested cargo; cargo releases its build lock while tests run), or the
//! `perf` test binary directly. They use the hidden fakes (`DFX_SERVER=fake`,
//! `DFX_BENCH=fake`) and the small configs in `tests/fixtures/suite_cli/`, so nothing
//! external is needed. A nested run sets `DFX_SUITE_CLI_NESTED=1`, which makes this target
//! run no checks (no recursion).

#[path = "suite_cli/capacity.rs"]
mod capacity;
#[path = "suite_cli/checks.rs"]
mod checks;
#[path = "suite_cli/command_line.rs"]
mod command_line;
#[path = "suite_cli/contract.rs"]
mod contract;
#[path = "suite_cli/dfx_perf_cli.rs"]
mod dfx_perf_cli;
#[path = "suite_cli/failure_classes.rs"]
mod failure_classes;
#[path = "suite_cli/goodput.rs"]
mod goodput;
#[path = "suite_cli/gpu_samples.rs"]
mod gpu_samples;
#[path = "suite_cli/history_e2e.rs"]
mod history_e2e;
#[path = "suite_cli/history_early.rs"]
mod history_early;
#[path = "suite_cli/history_noise.rs"]
mod history_noise;
#[path = "suite_cli/history_writers.rs"]
mod history_writers;
#[path = "suite_cli/hostile.rs"]
mod hostile;
#[path = "suite_cli/installed_run.rs"]
mod installed_run;
#[path = "suite_cli/integrity.rs"]
mod integrity;
#[path = "suite_cli/interrupt.rs"]
mod interrupt;
#[path = "suite_cli/judge.rs"]
mod judge;
#[path = "suite_cli/leftovers.rs"]
mod leftovers;
#[path = "suite_cli/load_shapes.rs"]
mod load_shapes;
#[path = "suite_cli/manifest.rs"]
mod manifest;
#[path = "suite_cli/native_duplex.rs"]
mod native_duplex;
#[path = "suite_cli/pipeline.rs"]
mod pipeline;
#[path = "suite_cli/quality.rs"]
mod quality;
#[path = "suite_cli/reference_page.rs"]
mod reference_page;
#[path = "suite_cli/release_archive.rs"]
mod release_archive;
#[path = "suite_cli/repeats.rs"]
mod repeats;
#[path = "suite_cli/schedule.rs"]
mod schedule;
#[path = "suite_cli/shard_merge.rs"]
mod shard_merge;
#[path = "suite_cli/sim_baseline.rs"]
mod sim_baseline;
#[path = "suite_cli/sim_e2e.rs"]
mod sim_e2e;
#[path = "suite_cli/stability.rs"]
mod stability;
#[path = "suite_cli/stalls.rs"]
mod stalls;
#[path = "suite_cli/strict.rs"]
mod strict;
#[path = "suite_cli/support.rs"]
mod support;

use std::process::ExitCode;

use libtest_mimic::Trial;
use support::NESTED;

use schedule::Check;

fn main() -> ExitCode {
    let parsed = dfx_harness::cli::parse_env();
    let mut args = parsed.args.libtest.to_arguments();
    // Most checks wait on processes rather than compute: several at once (schedule.rs).
    args.test_threads = Some(schedule::threads(args.test_threads));
    if std::env::var_os(NESTED).is_some() {
        return libtest_mimic::run(&args, Vec::new()).exit_code();
    }
    // `cargo test --release -- --server sim` (or any other dfx-perf flag) means the user is
    // running the suite: these self-tests of the project stand aside instead of spending
    // minutes on nested builds. `cargo test --test suite_cli` runs them.
    let suite_flags: Vec<&str> = parsed
        .provenance
        .iter()
        .filter(|r| r.source != dfx_harness::cli::Source::Default)
        .map(|r| r.flag.as_str())
        .collect();
    let checks = checks::all();
    let root_only = checks::root_only();
    if !integrity::can_mount() {
        eprintln!("suite_cli: the full-disk check needs root (it mounts a small tmpfs): ignored");
    }
    let runnable: Vec<(&str, (Check, bool))> = checks
        .into_iter()
        .map(|(name, f)| (name, (f, true)))
        .chain(
            root_only
                .into_iter()
                .map(|(name, f)| (name, (f, integrity::can_mount()))),
        )
        .collect();
    let runnable = match schedule::order(runnable) {
        Ok(ordered) => ordered,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let trials = runnable
        .into_iter()
        .map(|(name, (f, runnable))| {
            let trial =
                Trial::test(name, move || schedule::run(name, f)).with_ignored_flag(!runnable);
            if suite_flags.is_empty() {
                trial
            } else {
                trial.with_ignored_flag(true)
            }
        })
        .collect();
    if !suite_flags.is_empty() {
        eprintln!(
            "suite_cli: self-tests of dfx-perf ignored because suite flags were given ({}); \
             run them with `cargo test --test suite_cli`",
            suite_flags.join(", ")
        );
    }
    libtest_mimic::run(&args, trials).exit_code()
}
