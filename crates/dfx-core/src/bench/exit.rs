//! How a bench run ended when that matters for the user ([`BenchExit`]), and why a trial's
//! inputs cannot be used ([`PreflightError`]).

use std::time::Duration;

use super::Unsupported;
use crate::server::ExitStatus;

/// How a bench run ended abnormally. `Display` gives the message the trial's failure
/// quotes (`bench ended with …`, `bench `x` left no result (…)`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BenchExit {
    /// The bench process's own exit status, as the system reports it (`exit status 1`).
    #[error("{0}")]
    Status(ExitStatus),
    /// An external program (`vllm bench`, `diffusion benchmark`) did not end with status 0.
    #[error("{program} {end}")]
    Process {
        /// The program's name in messages (`vllm bench`, `diffusion benchmark`).
        program: &'static str,
        /// Its exit code, signal or time-out.
        end: ProcessEnd,
    },
    /// An external program ended with status 0 but its result cannot be read.
    #[error("{program} exited with status 0 but {error}")]
    NoResult {
        /// The program's name in messages.
        program: &'static str,
        /// Why its result file cannot be used (missing, unreadable, not JSON).
        error: String,
    },
    /// An external program failed without a status to show.
    #[error("{program} failed")]
    Failed {
        /// The program's name in messages.
        program: &'static str,
    },
    /// The process could not be started (or its log could not be created).
    #[error("{0}")]
    NotStarted(String),
    /// The bench cannot run at all (its program is missing).
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// The configured auth token variable is unset.
    #[error("the auth token variable ${var} is not set (needed by the vllm bench)")]
    TokenMissing {
        /// The variable's name (the bench's `auth_token_env` setting).
        var: String,
    },
    /// The native bench stopped with an error (its message).
    #[error("native bench error: {0}")]
    Native(String),
    /// A native-duplex trial (warmup or repeat `index`) failed: why.
    #[error("native-duplex trial {index} failed: {reason}")]
    DuplexTrial {
        /// The trial's position among warmups and repeats (0-based).
        index: usize,
        /// Why it failed.
        reason: String,
    },
    /// The realtime sessions did not have the expected turn count (the check's message).
    #[error("{0}")]
    TurnCount(String),
    /// A stability entry's soak keys cannot be used.
    #[error("stability entry: {0}")]
    SoakEntry(String),
    /// A soak whose first batch could not even start.
    #[error("the soak ran no batch")]
    SoakRanNoBatch,
    /// A soak with results whose batch failed: the first failure.
    #[error("a soak batch failed: {0}")]
    SoakBatch(Box<BenchExit>),
}

/// How an external program ended without status 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProcessEnd {
    /// Exited on its own with this non-zero status code.
    #[error("exited with status {0}")]
    Code(i32),
    /// Killed by this signal (its number), before any time limit.
    #[error("was killed by signal {0}")]
    Signal(i32),
    /// Killed by the bench after its time limit.
    #[error("did not finish within {} s and was killed", .0.as_secs())]
    TimedOut(Duration),
}

/// Why a trial's inputs cannot be used, found before any server starts; the harness turns
/// it into a config error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreflightError {
    /// The entry is not one the bench runs.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// A stability entry's soak keys (the key's message).
    #[error("{0}")]
    Soak(String),
    /// The dataset, the metric selection or another input of the step (its message).
    #[error("{0}")]
    Inputs(String),
    /// A `goodput` SLO the bench does not measure (its message names the ones it does).
    #[error("{0}")]
    Goodput(String),
    /// An entry key (a `vllm bench serve` flag, as written) that changes what is measured
    /// and that this bench does not implement: ignoring it would report a result the
    /// entry did not ask for.
    #[error(
        "`{key}` is a `vllm bench serve` flag the {bench} bench does not implement: run this \
         entry with --bench vllm, or remove the key"
    )]
    UnimplementedKey {
        /// The entry key as written (`goodput`).
        key: String,
        /// The bench that refuses it (`native`).
        bench: &'static str,
    },
}

impl PreflightError {
    /// The entry key the error is about: the refused key, else `dataset_path` (the
    /// input the other checks read).
    pub fn key(&self) -> &str {
        match self {
            PreflightError::UnimplementedKey { key, .. } => key,
            PreflightError::Goodput(_) => "goodput",
            _ => "dataset_path",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_todays_texts() {
        let end = |end| BenchExit::Process {
            program: "vllm bench",
            end,
        };
        assert_eq!(
            end(ProcessEnd::Code(2)).to_string(),
            "vllm bench exited with status 2"
        );
        assert_eq!(
            end(ProcessEnd::Signal(9)).to_string(),
            "vllm bench was killed by signal 9"
        );
        assert_eq!(
            end(ProcessEnd::TimedOut(Duration::from_millis(3500))).to_string(),
            "vllm bench did not finish within 3 s and was killed"
        );
        assert_eq!(
            BenchExit::SoakBatch(Box::new(BenchExit::Status(ExitStatus::Code(1)))).to_string(),
            "a soak batch failed: exit status 1"
        );
        assert_eq!(
            BenchExit::TokenMissing { var: "TOK".into() }.to_string(),
            "the auth token variable $TOK is not set (needed by the vllm bench)"
        );
    }
}
