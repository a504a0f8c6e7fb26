//! The guard process that stops a server group when the process that started it is gone
//! (see `dfx_server::guardian`). The suite starts it itself; it is not meant to be run by
//! hand.

fn main() -> std::process::ExitCode {
    dfx_server::guardian::main_from_args(std::env::args().skip(1))
}
