//! Why [`super::Session::run_trial`] reports a trial as failed. `Display` is the message
//! libtest prints for the trial (the summary entry keeps its own failure lines).

use std::path::PathBuf;

/// A trial that did not pass.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TrialError {
    /// A signal arrived: its handler owns (closes and seals) the run folder.
    #[error("interrupted: the signal handler closed the run")]
    Interrupted,
    /// The trial folder cannot be created.
    #[error("cannot create {}: {source}", .dir.display())]
    CreateDir {
        /// The folder.
        dir: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The trial panicked (the panic's message).
    #[error("trial panicked: {0}")]
    Panicked(String),
    /// The result of a panicked trial cannot be written.
    #[error("cannot write the result of the panicked trial: {0}")]
    WritePanicked(#[source] std::io::Error),
    /// The trial ran and failed: its class line, failure lines, write errors and result
    /// path, one per line (the lines are the domain: they are the verdict's text).
    #[error("{}", .0.join("\n"))]
    Failed(Vec<String>),
}
