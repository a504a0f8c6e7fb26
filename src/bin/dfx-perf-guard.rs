//! The guard the suite starts next to every server (and external bench) process group: it
//! stops the group when the suite ends without doing so, even after `kill -9`
//! (`dfx_server::guardian`). Not meant to be run by hand.

fn main() -> std::process::ExitCode {
    dfx_server::guardian::main_from_args(std::env::args().skip(1))
}
