//! How a server process ended ([`ExitStatus`]) and why a launcher cannot run a spec at all
//! ([`Unavailable`]).

use std::path::PathBuf;

/// How a finished process ended: `exit status 3` or `signal 9 (SIGKILL)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ExitStatus {
    /// Exited by itself with this code.
    #[error("exit status {0}")]
    Code(i32),
    /// Killed by a signal: its number and name (`SIGKILL`).
    #[error("signal {number} ({name})")]
    Signal {
        /// The signal number (`9`).
        number: i32,
        /// The signal's name (`SIGKILL`).
        name: &'static str,
    },
}

/// Why a launcher cannot run a spec at all (the trials are ignored with this reason on a
/// plain run and failed under `--assert-baseline`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// The program is neither configured nor on `PATH`; `hint` says how to configure it.
    #[error("{program} not found: {hint}")]
    NotFound {
        /// The program looked for (`vllm-omni`).
        program: String,
        /// How to configure it (the flag and variable to set).
        hint: String,
    },
    /// A configured executable (`from`: the flag or variable) that cannot be run.
    #[error(
        "server executable {} (from {from}) does not exist or is not executable",
        .path.display()
    )]
    NotExecutable {
        /// The configured path.
        path: PathBuf,
        /// Where the path came from (`--server-bin`, a variable).
        from: String,
    },
    /// The spec cannot be turned into a command line (the reason).
    #[error("invalid server configuration: {0}")]
    InvalidSpec(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_todays_texts() {
        assert_eq!(ExitStatus::Code(3).to_string(), "exit status 3");
        let killed = ExitStatus::Signal {
            number: 9,
            name: "SIGKILL",
        };
        assert_eq!(killed.to_string(), "signal 9 (SIGKILL)");
        let u = Unavailable::NotExecutable {
            path: "/x/vllm-omni".into(),
            from: "--server-bin".into(),
        };
        assert_eq!(
            u.to_string(),
            "server executable /x/vllm-omni (from --server-bin) does not exist or is not executable"
        );
    }
}
