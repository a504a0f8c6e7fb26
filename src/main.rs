//! `dfx-perf`: the suite without cargo (`dfx-perf run`, the entry point of the `perf` test
//! binary) and the commands around it (deploy lookup, reports, compare, recalibrate, …).
//! Each subcommand lives in its own module under `src/cli/`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
