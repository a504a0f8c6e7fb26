//! The simulated vllm-omni server, launched by the suite like `vllm-omni serve`.

fn main() -> std::process::ExitCode {
    dfx_sim::main_from_args(std::env::args_os().collect())
}
