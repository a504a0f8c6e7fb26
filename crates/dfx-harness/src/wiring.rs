//! The one place where the harness meets the concrete implementations of the other
//! crates: the server launchers (dfx-server), the benches (dfx-bench), signal handling and
//! the report writer (dfx-report). Everything else in the harness only knows the
//! dfx-core seams ([`ServerLauncher`], [`dfx_core::bench::Bench`]).
//!
//! Implementations that have not landed yet are represented by an unavailable bench slot
//! whose reason says so: the trials are then listed as ignored with that
//! reason (failed under `--assert-baseline`), never silently passed.

use std::collections::BTreeMap;
use std::path::Path;

use dfx_bench::external::{ExternalSettings, VllmBench};
use dfx_core::server::ServerLauncher;
use dfx_server::{AttachLauncher, LauncherConfig, ProcessLauncher};

use crate::cli::BenchTool;
use crate::fake::bench::{FakeBench, FakeKnobs};
use crate::fake::server::FakeLauncher;
use crate::select::{BenchSet, BenchSlot};
use crate::settings::{Project, ServerChoice, SuiteConfig};

/// The launcher for `--server` / `--server-url`: the process launcher for the real
/// executables (`vllm-omni` from `--server-bin` / `DFX_SERVER_BIN` /
/// `VLLM_OMNI_EXECUTABLE` / PATH; `sgl-omni` from `SGLANG_OMNI_EXECUTABLE` / PATH), the
/// same launcher pointed at the simulator binary, the attach launcher, or the fake. An
/// error is a bad setting (reported before anything starts).
pub fn launcher(
    cfg: &SuiteConfig,
    project: &Project,
) -> Result<Box<dyn ServerLauncher + Send>, String> {
    let base = LauncherConfig {
        deploy_dir: cfg.deploy_dir.clone(),
        ..LauncherConfig::default()
    };
    Ok(match &cfg.server {
        ServerChoice::Fake => Box::new(FakeLauncher::from_env()),
        ServerChoice::Auto { server_bin } => Box::new(ProcessLauncher::new(LauncherConfig {
            server_bin: server_bin.clone(),
            ..base
        })),
        ServerChoice::Sim { speed, faults } => {
            let mut extra_env = BTreeMap::new();
            if let Some(k) = speed {
                extra_env.insert("DFX_SIM_SPEED".to_string(), k.to_string());
            }
            if let Some(f) = faults {
                extra_env.insert("DFX_SIM_FAULTS".to_string(), f.clone());
            }
            Box::new(ProcessLauncher::new(LauncherConfig {
                simulator: Some(project.sim_bin.clone()),
                extra_env,
                ..base
            }))
        }
        ServerChoice::Attach { url } => {
            Box::new(AttachLauncher::new(url).map_err(|e| e.to_string())?)
        }
    })
}

/// The bench slots `--bench-tool` allows, in order of preference. An error is a problem
/// with the settings (reported like a flag error, before anything starts).
///
/// WIRING: the native slot is a placeholder until `dfx_bench::native` lands; then:
/// `dfx_bench::native::NativeBench::new(NativeSettings { dataset_roots, tokenizer, seed,
/// … })` (its `supports` says which backends/datasets it implements).
pub fn benches(cfg: &SuiteConfig) -> Result<BenchSet, String> {
    let native = || BenchSlot {
        label: "native",
        bench: Err("the native bench (dfx-bench) is not wired into the harness yet".into()),
    };
    let vllm = || BenchSlot {
        label: "vllm",
        bench: Ok(Box::new(VllmBench::new(ExternalSettings {
            vllm_bin: cfg.bench.vllm_bin.clone(),
            tokenizer: cfg.bench.tokenizer.clone(),
            seed: cfg.bench.seed.unwrap_or(0),
            ..ExternalSettings::default()
        })) as Box<dyn dfx_core::bench::Bench + Send>),
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

/// Makes SIGINT / SIGTERM tear down every live server group before the harness exits
/// (status 130).
pub fn install_signal_handlers() {
    if let Err(e) = dfx_server::install_signal_handlers() {
        eprintln!("dfx-perf: warning: {e}");
    }
}

/// Writes the run's reports (report.md / report.html / junit.xml) from the run folder,
/// after summary.json.
pub fn write_reports(run_dir: &Path) -> Result<(), String> {
    dfx_report::write_run_reports(run_dir)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
