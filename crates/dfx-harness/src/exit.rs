//! The suite's exit statuses, in one table: the code that exits uses [`SuiteExit::code`],
//! and the generated reference (`docs/reference/exit-status.md`) prints
//! [`SuiteExit::meaning`].

/// Why the suite exits with a given status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuiteExit {
    /// Every selected trial passed or was ignored (or a listing was printed).
    Passed,
    /// At least one trial failed (libtest-mimic's conclusion, libtest's convention).
    TrialFailed,
    /// Nothing was started: bad flags, config errors, an empty selection under
    /// `--assert-baseline`, or a results folder that cannot be created.
    Usage,
    /// The trials ran, but a closing file could not be written.
    WriteFailed,
    /// Interrupted by SIGINT / SIGTERM / SIGHUP (128 + SIGINT, like a shell).
    Interrupted,
}

impl SuiteExit {
    /// Every status, in the order the reference lists them.
    pub const ALL: [SuiteExit; 5] = [
        SuiteExit::Passed,
        SuiteExit::TrialFailed,
        SuiteExit::Usage,
        SuiteExit::WriteFailed,
        SuiteExit::Interrupted,
    ];

    /// The process exit status.
    pub const fn code(self) -> u8 {
        match self {
            SuiteExit::Passed => 0,
            SuiteExit::TrialFailed => 101,
            SuiteExit::Usage => 2,
            SuiteExit::WriteFailed => 3,
            SuiteExit::Interrupted => 130,
        }
    }

    /// What the status means, for the reference page.
    pub fn meaning(self) -> &'static str {
        match self {
            SuiteExit::Passed => "every selected trial passed or was ignored (listing: printed)",
            SuiteExit::TrialFailed => "at least one trial failed (libtest's convention)",
            SuiteExit::Usage => {
                "bad flags, config errors, `--assert-baseline` with no trial selected, or the \
                 results folder cannot be created: nothing was started"
            }
            SuiteExit::WriteFailed => {
                "the trials ran, but `summary.json`, `run.json` or a report (HTML, JUnit, \
                 upstream files) could not be written, e.g. a full results disk; each failed \
                 write is named on stderr, and a failed write never leaves its temporary file \
                 behind"
            }
            SuiteExit::Interrupted => {
                "interrupted (Ctrl-C / SIGTERM / SIGHUP): every live server and bench group \
                 was torn down, `summary.json` holds the trials done so far and the \
                 interrupted one"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SuiteExit;

    #[test]
    fn codes_are_distinct_and_failure_is_libtests() {
        let codes: Vec<u8> = SuiteExit::ALL.iter().map(|s| s.code()).collect();
        for (i, c) in codes.iter().enumerate() {
            assert!(!codes[i + 1..].contains(c), "{c} twice");
        }
        // libtest-mimic's own status for a run with a failed trial.
        let failed = libtest_mimic::Conclusion {
            num_filtered_out: 0,
            num_passed: 0,
            num_failed: 1,
            num_ignored: 0,
            num_measured: 0,
        };
        assert_eq!(
            format!("{:?}", failed.exit_code()),
            format!(
                "{:?}",
                std::process::ExitCode::from(SuiteExit::TrialFailed.code())
            )
        );
    }
}
