//! The suite: one libtest-mimic trial per sweep step of every selected perf-config entry
//! (see README.md). Everything lives in `dfx-harness`; this target only says where the
//! project, the simulator and the guard are.

use std::process::ExitCode;

fn main() -> ExitCode {
    dfx_harness::main(dfx_harness::Project {
        root: env!("CARGO_MANIFEST_DIR").into(),
        sim_bin: env!("CARGO_BIN_EXE_dfx-perf-sim").into(),
        guard_bin: env!("CARGO_BIN_EXE_dfx-perf-guard").into(),
    })
}
