//! Typed errors of this crate. Every variant names the file or run it is about.

use std::path::PathBuf;

/// What can go wrong while reading run folders or writing reports, comparisons and
/// baselines.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON file is not valid JSON or does not have the expected shape.
    #[error("{}: {problem}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// The parser's message, or what is missing or of the wrong type.
        problem: String,
    },
    /// A config file's baseline write-back was refused.
    #[error("{}: {source}", path.display())]
    Writeback {
        /// The config file.
        path: PathBuf,
        /// Why.
        #[source]
        source: crate::writeback::WritebackError,
    },
    /// A folder is not a run folder (no `summary.json` and no `trials/`).
    #[error(
        "{}: not a dfx-perf run folder (expected summary.json or trials/*/result.json inside)",
        path.display()
    )]
    NotARun {
        /// The folder given as a run.
        path: PathBuf,
    },
    /// A chart could not be drawn.
    #[error("chart `{chart}`: {problem}")]
    Chart {
        /// The chart's stable identifier (its `data-chart` attribute).
        chart: String,
        /// What the plotting backend reported, or why there is nothing to draw.
        problem: String,
    },
    /// The runs cannot be compared or recalibrated as asked; the message says why and
    /// which flag, if any, overrides it.
    #[error("{0}")]
    Refused(String),
    /// A command-line value is invalid (metric name, percentage, …).
    #[error("{0}")]
    Invalid(String),
    /// A run folder's `manifest.json` could not be read, verified or updated.
    #[error(transparent)]
    Manifest(#[from] dfx_core::artefact::ManifestError),
}

/// The text of a file dfx-perf reads back (a run folder's JSON, a baseline store, a
/// config being written back): [`dfx_core::fsutil::read_text_bounded`] with `max` bytes.
/// A missing file keeps its `NotFound` kind.
pub(crate) fn read_text(path: &std::path::Path, max: u64) -> Result<String, ReportError> {
    dfx_core::fsutil::read_text_bounded(path, max).map_err(|e| ReportError::io(path, e.into_io()))
}

impl ReportError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ReportError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn format(path: impl Into<PathBuf>, problem: impl Into<String>) -> Self {
        ReportError::Format {
            path: path.into(),
            problem: problem.into(),
        }
    }
}
