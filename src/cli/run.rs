//! `dfx-perf run [ARGS]`: the suite without cargo. The same entry point as the `perf`
//! test binary (`dfx_harness::main_from`), so ARGS, output and exit statuses are those of
//! `cargo test --release --test perf -- ARGS`; the project folder is `--root` (or
//! `DFX_ROOT`), else the current folder, and the simulator and guard are the executables
//! beside this one (else on PATH).

use std::ffi::OsString;
use std::process::ExitCode;

use anyhow::Context;

use super::Run;

/// Arguments of `dfx-perf run`: everything after `run` goes to the suite unchanged.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct RunArgs {
    /// The suite's flags and filter, as after `cargo test --release --test perf --`
    /// (`dfx-perf run --help` lists them; a leading `--` is optional).
    #[arg(
        value_name = "ARGS",
        num_args = 0..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    args: Vec<OsString>,
}

impl Run for RunArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        let project = dfx_harness::Project::installed()
            .context("cannot locate the current folder or the running executable")?;
        let argv = std::iter::once(OsString::from("dfx-perf run")).chain(self.args);
        Ok(dfx_harness::main_from(argv, project))
    }
}
