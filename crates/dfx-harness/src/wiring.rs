//! The one place where the harness meets the concrete implementations of the other
//! crates: the server launchers (dfx-server), the benches (dfx-bench), signal handling and
//! the report writer (dfx-report). Everything else in the harness only knows the
//! dfx-core seams ([`ServerLauncher`], [`dfx_core::bench::Bench`]).
//!
//! Implementations that have not landed yet are represented by an "unavailable" launcher
//! or bench slot whose reason says so: the trials are then listed as ignored with that
//! reason (failed under `--assert-baseline`), never silently passed.

use std::path::Path;

use dfx_core::server::ServerLauncher;

use crate::cli::BenchTool;
use crate::fake::bench::{FakeBench, FakeKnobs};
use crate::fake::server::FakeLauncher;
use crate::select::{BenchSet, BenchSlot};
use crate::settings::{Project, ServerChoice, SuiteConfig};
use crate::unavailable::UnavailableLauncher;

/// The launcher for `--server` / `--server-url`.
///
/// WIRING: replace the placeholders with
/// - `Auto`: `dfx_server::ProcessLauncher::new(LauncherConfig { server_bin, sglang_bin,
///   simulator: false, extra_env, grace, poll_interval, port })`;
/// - `Sim`: the same with `server_bin = project.sim_bin`, `simulator: true`, and
///   `extra_env` carrying `DFX_SIM_SPEED` / `DFX_SIM_FAULTS` from `speed` / `faults`;
/// - `Attach`: `dfx_server::AttachLauncher::new(url)`.
pub fn launcher(
    cfg: &SuiteConfig,
    project: &Project,
) -> Result<Box<dyn ServerLauncher + Send>, String> {
    let _ = project;
    Ok(match &cfg.server {
        ServerChoice::Fake => Box::new(FakeLauncher::from_env()),
        ServerChoice::Auto { .. } => Box::new(UnavailableLauncher {
            name: "vllm-omni".into(),
            reason: "the process launcher (dfx-server) is not wired into the harness yet".into(),
        }),
        ServerChoice::Sim { .. } => Box::new(UnavailableLauncher {
            name: "sim".into(),
            reason: "the simulator launcher (dfx-server + dfx-perf-sim) is not wired into the harness yet"
                .into(),
        }),
        ServerChoice::Attach { url } => Box::new(UnavailableLauncher {
            name: "attach".into(),
            reason: format!("attach mode ({url}) is not wired into the harness yet"),
        }),
    })
}

/// The bench slots `--bench-tool` allows, in order of preference. An error is a problem
/// with the settings (reported like a flag error, before anything starts).
///
/// WIRING: replace the placeholders with
/// - native: `dfx_bench::native::NativeBench::new(NativeSettings { dataset_roots,
///   tokenizer, seed, … })`;
/// - vllm: `dfx_bench::external::VllmBench::new(ExternalSettings { vllm_bin, tokenizer,
///   dataset_roots, seed, … })` (unavailable when the executable is missing: say so in
///   `supports`).
pub fn benches(cfg: &SuiteConfig) -> Result<BenchSet, String> {
    let native = || BenchSlot {
        label: "native",
        bench: Err("the native bench (dfx-bench) is not wired into the harness yet".into()),
    };
    let vllm = || BenchSlot {
        label: "vllm",
        bench: Err("the external vllm bench (dfx-bench) is not wired into the harness yet".into()),
    };
    let slots = match cfg.bench.tool {
        BenchTool::Fake => vec![BenchSlot {
            label: "fake",
            bench: Ok(Box::new(FakeBench {
                knobs: FakeKnobs::from_env()?,
            })),
        }],
        BenchTool::Native => vec![native()],
        BenchTool::Vllm => vec![vllm()],
        BenchTool::Auto => vec![native(), vllm()],
    };
    Ok(BenchSet { slots })
}

/// Makes SIGINT / SIGTERM tear down every live server group before the harness exits.
///
/// WIRING: call `dfx_server::install_signal_handlers()`.
pub fn install_signal_handlers() {}

/// Writes the run's reports (report.md / report.html / junit.xml) from the run folder,
/// after summary.json.
///
/// WIRING (report helper): `dfx_report::write_run_reports(run_dir)`.
pub fn write_reports(run_dir: &Path) -> Result<(), String> {
    let _ = run_dir;
    Ok(())
}
