//! A GPU-less twin of `vllm-omni serve` for TTS (SIM.md): the same command line, the same
//! API, and a performance model of a two-stage TTS server under load.

/// Entry point of the simulator executable: `dfx-perf-sim serve <model> --host H --port P …`.
pub fn main_from_args(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    let _ = args;
    eprintln!("dfx-perf-sim: not implemented yet");
    std::process::ExitCode::from(2)
}
