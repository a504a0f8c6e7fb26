//! `dfx-perf reference-page` (hidden): prints `docs/reference/dfx-perf-cli.md`, the
//! generated reference of every `dfx-perf` subcommand and flag, from this binary's clap
//! definition. `tests/suite_cli/reference_page.rs` compares it with the committed page.

use std::process::ExitCode;

use clap::CommandFactory;

use super::Run;
use super::out::outln;

#[derive(Debug, clap::Args)]
pub struct ReferencePageArgs {}

impl Run for ReferencePageArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        let intro = "Every subcommand and flag of `dfx-perf`, from its clap definition (the \
suite's own flags, which `dfx-perf run` takes, are in [suite flags](suite-flags.md)). What \
the commands do: [reports](../guide/reports.md), [history](../guide/history.md), \
[shards](../guide/shards.md), [nightly](../guide/nightly.md).";
        let page =
            dfx_harness::reference::cli_page("dfx-perf commands", intro, &super::Cli::command());
        outln!("{}", page.trim_end());
        Ok(ExitCode::SUCCESS)
    }
}
