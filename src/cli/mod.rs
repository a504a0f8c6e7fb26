//! The `dfx-perf` command line. To add a subcommand: write `src/cli/<name>.rs` with a clap
//! `Args` struct implementing [`Run`], declare the module, and add one line to the
//! `subcommands!` list below.

mod compare;
mod deploy;
mod history;
mod merge;
mod out;
mod pipeline;
mod recalibrate;
mod reference;
mod report;
mod run;
mod verify;

use std::process::ExitCode;

use clap::Parser;

/// What every subcommand's arguments do when run.
pub trait Run {
    /// Runs the subcommand; the exit code is what the process exits with.
    fn run(self) -> anyhow::Result<ExitCode>;
}

/// Declares the `Command` enum and its dispatch from one list of `Variant(ArgsType)`.
macro_rules! subcommands {
    ($($(#[$meta:meta])* $variant:ident($args:ty),)*) => {
        /// The subcommands of `dfx-perf`.
        #[derive(Debug, clap::Subcommand)]
        pub enum Command {
            $($(#[$meta])* $variant($args),)*
        }

        impl Run for Command {
            fn run(self) -> anyhow::Result<ExitCode> {
                match self {
                    $(Command::$variant(args) => args.run(),)*
                }
            }
        }
    };
}

subcommands! {
    /// Run the suite as `cargo test --release --test perf -- ARGS` does (same flags,
    /// trials, output and exit statuses), from the project folder or with `--root DIR`.
    Run(run::RunArgs),
    /// List the deploy files, or print the absolute path of one (for
    /// `--deploy-config "$(dfx-perf deploy qwen3_tts_tuned)"`).
    Deploy(deploy::DeployArgs),
    /// Write report.md, report.html and junit.xml into run folders.
    Report(report::ReportArgs),
    /// Compare runs (A against B, with repeats per side) per trial and metric.
    Compare(compare::CompareArgs),
    /// Recalibrate `baselines/<hardware>.json` from runs of one hardware.
    Recalibrate(recalibrate::RecalibrateArgs),
    /// The run history: add runs, list them, show a trial, check for regressions.
    History(history::HistoryArgs),
    /// Merge the run folders of a run's shards (`--partition`) into one run folder.
    Merge(merge::MergeArgs),
    /// Generate a CI pipeline (Buildkite) that runs the plan in shards per hardware label
    /// and merges them.
    Pipeline(pipeline::PipelineArgs),
    /// Print the generated reference page of these commands (`docs/reference/dfx-perf-cli.md`).
    #[command(hide = true)]
    ReferencePage(reference::ReferencePageArgs),
}

/// Parses a percentage flag (`25%` or `25`) into a fraction.
pub(crate) fn percent(s: &str) -> Result<f64, String> {
    dfx_report::fmt::parse_pct(s).map_err(|e| e.to_string())
}

/// dfx-perf: performance regression suite for OpenAI-audio model servers.
#[derive(Debug, Parser)]
#[command(name = "dfx-perf", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Parses the command line and runs the subcommand; errors exit with status 1. Output to
/// a closed pipe is discarded quietly ([`out`]).
pub fn main() -> ExitCode {
    let cli = Cli::try_parse().unwrap_or_else(|e| dfx_harness::cli::exit_clap(&e));
    let code = match cli.command.run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "{}",
                dfx_core::diag::clip_lines(&format!("dfx-perf: {e:#}"))
            );
            ExitCode::FAILURE
        }
    };
    match out::failure() {
        Some(e) => {
            eprintln!("dfx-perf: cannot write to stdout: {e}");
            ExitCode::FAILURE
        }
        None => code,
    }
}
