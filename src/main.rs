//! `dfx-perf`: the commands that are not tests (deploy lookup, reports, compare,
//! recalibrate). Each subcommand lives in its own module under `src/cli/`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
