//! The suite: one libtest-mimic trial per sweep step of every selected perf-config entry
//! (see README.md). Everything lives in `dfx-harness`; this target only says where the
//! project, the simulator and the guard are, and plugs in the test fakes.

use std::process::ExitCode;

fn main() -> ExitCode {
    dfx_harness::main(dfx_harness::Project {
        root: env!("CARGO_MANIFEST_DIR").into(),
        sim_bin: env!("CARGO_BIN_EXE_dfx-perf-sim").into(),
        guard_bin: env!("CARGO_BIN_EXE_dfx-perf-guard").into(),
        // The hidden `--server fake` / `--bench fake` of the suite's own tests.
        test_seams: Some(dfx_harness::TestSeams {
            launcher: dfx_testkit::fake::launcher_from_env,
            bench: dfx_testkit::fake::bench_from_env,
        }),
    })
}
