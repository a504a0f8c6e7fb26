//! The suite's `--help`: how to call it through cargo, examples first, the simulator's
//! fault specs (from the fault grammar's own list).

/// How a user calls the suite (the test binary's own name is cargo's hashed file name).
pub const USAGE: &str = "cargo test --release --test perf -- [OPTIONS] [FILTER]";

/// The examples `--help` starts with.
pub(super) const EXAMPLES: &str = "\
Examples:
  # every trial against the built-in simulator, no GPU needed
  cargo test --release --test perf -- --server sim
  # list the trials (names are <test_name>::<entry>::<step>)
  cargo test --release --test perf -- --list
  # one case's trials (the trailing :: leaves out test_qwen3_tts_base_contract),
  # failing on baseline breaches
  cargo test --release --test perf -- --assert-baseline test_qwen3_tts_base::
  # one trial against a faulty simulator
  cargo test --release --test perf -- --server sim --sim-faults error500=0.5 \\
      --exact test_qwen3_tts_base::voice_clone_latency_seed-tts::c1";

/// `--sim-faults`' help: the grammar and every spec the simulator knows.
pub(super) fn sim_faults_help() -> String {
    format!(
        "Simulator faults, comma separated `name[=value]` (`--server sim`), e.g. \
         `error500=0.5,slowdown=1.3`. Specs: {}",
        dfx_core::faults::FAULT_NAMES.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::super::SuiteArgs;

    /// The head a newcomer reads: the cargo command, the examples, dfx-perf's own flags
    /// before libtest's.
    #[test]
    fn help_head() {
        let help = SuiteArgs::command().render_long_help().to_string();
        let head: Vec<&str> = help.lines().take(30).collect();
        insta::assert_snapshot!("suite_help_head", head.join("\n"));
        let own = help.find("dfx-perf options:").expect("own heading");
        let libtest = help.find("libtest options:").expect("libtest heading");
        assert!(own < libtest, "{help}");
        for spec in dfx_core::faults::FAULT_NAMES {
            assert!(help.contains(spec), "--sim-faults lists {spec}");
        }
    }
}
