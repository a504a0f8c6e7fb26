//! libtest's flags, as the suite accepts them: every flag `libtest_mimic::Arguments`
//! (0.8) knows, with the same names and meaning, except libtest's boolean `--bench` (run
//! benchmarks instead of tests). dfx-perf uses `--bench` for its load-generator choice
//! (`--bench native|vllm|auto`), so these flags are declared here instead of flattening
//! `libtest_mimic::Arguments`, and [`LibtestFlags::to_arguments`] converts them.
//!
//! Nothing loses libtest's `--bench` in practice: the suite's trials are all tests, and
//! the root package has no bench targets (`autobenches = false`, test targets are not
//! benchmarked), so `cargo bench` never runs a suite target with `--bench`.

use clap::{Args, ValueEnum};
use libtest_mimic::{Arguments, ColorSetting, FormatSetting};

/// The only value libtest's `-Z` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnstableFlag {
    /// Accepted and ignored, like libtest-mimic does.
    UnstableOptions,
}

/// libtest's flags (minus the boolean `--bench`). Field doc comments are the `--help`
/// texts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
#[command(next_help_heading = "libtest options")]
pub struct LibtestFlags {
    /// Run ignored and non-ignored tests.
    #[arg(long)]
    pub include_ignored: bool,

    /// Run only ignored tests.
    #[arg(long)]
    pub ignored: bool,

    /// Exclude tests marked #[should_panic] (accepted; no trial of the suite is one).
    #[arg(long)]
    pub exclude_should_panic: bool,

    /// Run tests and not benchmarks (every trial of the suite is a test).
    #[arg(long)]
    pub test: bool,

    /// List all tests and benchmarks (libtest's `<name>: test` lines).
    #[arg(long)]
    pub list: bool,

    /// No-op (output is never captured).
    #[arg(long)]
    pub nocapture: bool,

    /// No-op (output is never captured).
    #[arg(long)]
    pub show_output: bool,

    /// Unstable libtest options: only `-Z unstable-options`, accepted and ignored.
    #[arg(
        short = 'Z',
        value_enum,
        value_name = "FLAG",
        hide_possible_values = true
    )]
    pub unstable_flags: Option<UnstableFlag>,

    /// Exactly match filters rather than by substring.
    #[arg(long)]
    pub exact: bool,

    /// Display one character per test instead of one line (alias of --format=terse).
    #[arg(short = 'q', long, conflicts_with = "format")]
    pub quiet: bool,

    /// Number of threads for running tests (accepted; trials always run one at a time).
    #[arg(long, value_name = "N")]
    pub test_threads: Option<usize>,

    /// Write the test report to PATH instead of stdout.
    #[arg(long, value_name = "PATH")]
    pub logfile: Option<String>,

    /// Skip tests whose names contain FILTER (repeatable).
    #[arg(long, value_name = "FILTER")]
    pub skip: Vec<String>,

    /// Coloring of the test report: auto (a terminal), always, never.
    #[arg(long, value_enum, value_name = "auto|always|never")]
    pub color: Option<ColorSetting>,

    /// Format of the test report: pretty, terse (one character per test), json (events).
    #[arg(long, value_enum, value_name = "pretty|terse|json")]
    pub format: Option<FormatSetting>,

    /// Run only the trials whose names contain FILTER (with --exact: equal FILTER).
    #[arg(value_name = "FILTER")]
    pub filter: Option<String>,
}

impl LibtestFlags {
    /// The same flags as libtest-mimic's own argument struct (its `bench` stays false:
    /// run tests). `-Z unstable-options` and `--exclude-should-panic` have no equivalent
    /// there and change nothing for the suite.
    pub fn to_arguments(&self) -> Arguments {
        let LibtestFlags {
            include_ignored,
            ignored,
            exclude_should_panic: _,
            test,
            list,
            nocapture,
            show_output,
            unstable_flags: _,
            exact,
            quiet,
            test_threads,
            logfile,
            skip,
            color,
            format,
            filter,
        } = self.clone();
        Arguments {
            include_ignored,
            ignored,
            test,
            bench: false,
            list,
            nocapture,
            show_output,
            unstable_flags: None,
            exact,
            quiet,
            test_threads,
            logfile,
            skip,
            color,
            format,
            filter,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Only {
        #[command(flatten)]
        libtest: LibtestFlags,
    }

    fn ours(argv: &[&str]) -> Arguments {
        Only::try_parse_from(std::iter::once("t").chain(argv.iter().copied()))
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
            .libtest
            .to_arguments()
    }

    fn theirs(argv: &[&str]) -> Arguments {
        <Arguments as Parser>::try_parse_from(std::iter::once("t").chain(argv.iter().copied()))
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
    }

    /// Every flag libtest-mimic parses (except `--bench`) gives libtest-mimic the same
    /// `Arguments` through our struct as through its own parser.
    #[test]
    fn same_arguments_as_libtest_mimics_own_parser() {
        let cases: &[&[&str]] = &[
            &[],
            &["--include-ignored"],
            &["--ignored"],
            &["--test"],
            &["--list"],
            &["--nocapture", "--show-output"],
            &["--exact", "a::b::c1"],
            &["-q"],
            &["--quiet"],
            &["--test-threads", "3"],
            &["--logfile", "out.txt"],
            &["--skip", "c1", "--skip=c2"],
            &["--color", "never"],
            &["--color=always"],
            &["--format", "json"],
            &["--format=terse", "filter"],
            &["filter", "--skip", "x", "--exact", "--list"],
        ];
        for argv in cases {
            assert_eq!(
                format!("{:?}", ours(argv)),
                format!("{:?}", theirs(argv)),
                "{argv:?}"
            );
        }
    }

    #[test]
    fn unstable_and_should_panic_flags_are_accepted_no_ops() {
        let a = ours(&["-Z", "unstable-options", "--exclude-should-panic"]);
        assert_eq!(format!("{a:?}"), format!("{:?}", Arguments::default()));
        assert!(Only::try_parse_from(["t", "-Z", "nonsense"]).is_err());
    }

    #[test]
    fn quiet_conflicts_with_format_like_libtest_mimic() {
        assert!(Only::try_parse_from(["t", "-q", "--format", "json"]).is_err());
        assert!(<Arguments as Parser>::try_parse_from(["t", "-q", "--format", "json"]).is_err());
    }
}
