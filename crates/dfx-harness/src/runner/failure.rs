//! Why a trial failed, as values ([`TrialFailure`]): built by the runner, the repeats and
//! the capacity search, de-duplicated by equality, and rendered (`Display`) only where
//! written (`verdict.json`, `result.json`, the summary entry, the console).

use std::fmt;
use std::path::PathBuf;

use dfx_core::bench::BenchExit;
use dfx_core::verdict::Breach;

use crate::pool::ServerDied;

/// One failure of a trial.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TrialFailure {
    /// No bench ran: the reason is the whole verdict.
    NotRun(NotRun),
    /// The bench left no result and the verdict judged the template fallback: its line
    /// (which names the reason) with the bench log tail.
    Fallback { verdict: String, log_tail: String },
    /// The bench left no result and the verdict did not say so.
    FallbackUnjudged { reason: NoResult, log_tail: String },
    /// A repeat left no result (inside [`TrialFailure::Repeat`]).
    NoResult(NoResult),
    /// The bench left a result but ended abnormally.
    BenchEnded { exit: BenchExit, log_tail: String },
    /// The server (or its required judge) exited during the trial.
    ServerDied(ServerDied),
    /// The load generator could not offer the configured load.
    InvalidLoad(String),
    /// The `--quality-cmd` hook failed (its message).
    Quality(String),
    /// A repeat's folder could not be created.
    CreateDir { dir: PathBuf, error: String },
    /// A repeat's `result.json` could not be written.
    WriteRepeat { dir: String, error: String },
    /// A failure of repeat `k` of `of`.
    Repeat {
        k: u32,
        of: u32,
        failure: Box<TrialFailure>,
    },
    /// The capacity search found no capacity.
    Capacity(CapacityFailure),
    /// A breach of an asserted threshold.
    Breach(Breach),
    /// The verdict's completion failure (fewer requests completed than sent), as it words
    /// it.
    Incomplete(String),
    /// Another failure of the verdict (checks), as it words it.
    Verdict(String),
    /// The verdict failed without giving a reason.
    Unexplained,
}

/// Why no bench ran for a trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotRun {
    /// It cannot run, and `--assert-baseline` forbids ignoring it.
    Forbidden { reason: String },
    /// Its server did not start: the pool's message, with its class (`server_start`, or
    /// `interrupted`) and one-line cause.
    ServerStart {
        message: String,
        class: dfx_core::verdict::FailureClass,
        detail: String,
    },
    /// Its bench does not exist here.
    BenchMissing { label: &'static str },
}

/// Why a trial's document is the template fallback: no bench ran, or the bench left no
/// result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fallback {
    NotRun(NotRun),
    NoResult(NoResult),
}

/// Why the bench side left no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoResult {
    /// The bench left no result, ending like this.
    Left {
        label: String,
        exit: Option<BenchExit>,
    },
    /// No repeat of `of` left a result.
    NoRepeat { of: u32 },
    /// The capacity search ran no probe.
    NoProbe,
}

/// Why a capacity search found no capacity.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CapacityFailure {
    /// No probe met the criteria.
    NoRate { lowest: f64 },
    /// The probe budget ran out before the bracket narrowed.
    Budget { max_probes: usize, tolerance: f64 },
}

impl fmt::Display for TrialFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrialFailure::NotRun(n) => n.fmt(f),
            TrialFailure::Fallback { verdict, log_tail } => write!(f, "{verdict}{log_tail}"),
            TrialFailure::FallbackUnjudged { reason, log_tail } => {
                write!(f, "{reason}: wrote the template fallback{log_tail}")
            }
            TrialFailure::NoResult(r) => r.fmt(f),
            TrialFailure::BenchEnded { exit, log_tail } => {
                write!(f, "bench ended with {exit}{log_tail}")
            }
            TrialFailure::ServerDied(d) => d.fmt(f),
            TrialFailure::InvalidLoad(why) => write!(f, "load generation invalid: {why}"),
            TrialFailure::Quality(why)
            | TrialFailure::Verdict(why)
            | TrialFailure::Incomplete(why) => f.write_str(why),
            TrialFailure::CreateDir { dir, error } => {
                write!(f, "cannot create {}: {error}", dir.display())
            }
            TrialFailure::WriteRepeat { dir, error } => {
                write!(f, "cannot write {dir}/result.json: {error}")
            }
            TrialFailure::Repeat { k, of, failure } => write!(f, "repeat {k}/{of}: {failure}"),
            TrialFailure::Capacity(c) => c.fmt(f),
            TrialFailure::Breach(b) => f.write_str(&b.line()),
            TrialFailure::Unexplained => {
                f.write_str("the verdict failed the trial without a reason")
            }
        }
    }
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fallback::NotRun(n) => n.fmt(f),
            Fallback::NoResult(r) => r.fmt(f),
        }
    }
}

impl fmt::Display for NotRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotRun::Forbidden { reason } => {
                write!(
                    f,
                    "cannot run, and --assert-baseline forbids ignoring it: {reason}"
                )
            }
            NotRun::ServerStart { message, .. } => {
                write!(f, "server failed to start: {message}")
            }
            NotRun::BenchMissing { label } => write!(f, "bench `{label}` is not available"),
        }
    }
}

impl fmt::Display for NoResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoResult::Left { label, exit: None } => {
                write!(f, "bench `{label}` left no result (no exit status)")
            }
            NoResult::Left {
                label,
                exit: Some(e),
            } => write!(f, "bench `{label}` left no result ({e})"),
            NoResult::NoRepeat { of } => write!(f, "no repeat of {of} left a result"),
            NoResult::NoProbe => f.write_str("capacity search ran no probe"),
        }
    }
}

impl fmt::Display for CapacityFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapacityFailure::NoRate { lowest } => write!(
                f,
                "capacity search: no probed rate met the criteria (lowest tried {lowest} req/s)"
            ),
            CapacityFailure::Budget {
                max_probes,
                tolerance,
            } => write!(
                f,
                "capacity search: max_probes ({max_probes}) spent before the bracket narrowed to \
                 {tolerance}"
            ),
        }
    }
}

/// The failures as the files and the console show them.
pub(crate) fn render(failures: &[TrialFailure]) -> Vec<String> {
    failures.iter().map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dfx_core::bench::ProcessEnd;

    #[test]
    fn renders_todays_texts() {
        let left = NoResult::Left {
            label: "vllm".into(),
            exit: Some(BenchExit::Process {
                program: "vllm bench",
                end: ProcessEnd::Code(2),
            }),
        };
        assert_eq!(
            left.to_string(),
            "bench `vllm` left no result (vllm bench exited with status 2)"
        );
        let repeat = TrialFailure::Repeat {
            k: 2,
            of: 3,
            failure: Box::new(TrialFailure::NoResult(left.clone())),
        };
        assert_eq!(
            repeat.to_string(),
            "repeat 2/3: bench `vllm` left no result (vllm bench exited with status 2)"
        );
        let unjudged = TrialFailure::FallbackUnjudged {
            reason: NoResult::NoRepeat { of: 3 },
            log_tail: String::new(),
        };
        assert_eq!(
            unjudged.to_string(),
            "no repeat of 3 left a result: wrote the template fallback"
        );
        let died = TrialFailure::ServerDied(ServerDied {
            status: dfx_core::server::ExitStatus::Code(137),
            log: "s/server.log".into(),
            log_tail: "boom".into(),
        });
        assert_eq!(
            died.to_string(),
            "server exited with exit status 137 during the benchmark\n\
             --- server log tail (s/server.log) ---\nboom"
        );
        assert_eq!(
            TrialFailure::Capacity(CapacityFailure::NoRate { lowest: 0.5 }).to_string(),
            "capacity search: no probed rate met the criteria (lowest tried 0.5 req/s)"
        );
    }

    #[test]
    fn equal_failures_are_equal_values() {
        let a = TrialFailure::InvalidLoad("lag 2 s".into());
        assert_eq!(a, TrialFailure::InvalidLoad("lag 2 s".into()));
        assert_ne!(
            a,
            TrialFailure::Verdict("load generation invalid: lag 2 s".into())
        );
    }
}
