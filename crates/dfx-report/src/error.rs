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
        source: WritebackError,
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

/// Where a document stops being JSON: what was expected at which byte and line, and the
/// decoder's own error when a number or string token is malformed.
#[derive(Debug, thiserror::Error)]
#[error(
    "expected {expected} at byte {at} (line {line}){}",
    source.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
)]
pub struct SyntaxError {
    /// What the parser accepts at this point (`a JSON value`, `` `,` or `}` ``, …).
    pub expected: &'static str,
    /// The byte offset.
    pub at: usize,
    /// The 1-based line of `at`.
    pub line: usize,
    /// serde_json's error for a string token that does not decode.
    #[source]
    pub source: Option<serde_json::Error>,
}

/// Why the edits for one config file could not be computed or applied.
#[derive(Debug, thiserror::Error)]
pub enum WritebackError {
    /// The file is not JSON the span parser accepts.
    #[error(transparent)]
    Syntax(#[from] SyntaxError),
    /// An entry of the plan has no counterpart in the file.
    #[error("{label} (case {case}) is not in the file: the file does not match the plan")]
    EntryNotInFile {
        /// `test `name` benchmark_params[i]`.
        label: String,
        /// The case index in the plan.
        case: usize,
    },
    /// Two computed edits overlap (a bug, never input).
    #[error("internal error: overlapping edits at byte {at}")]
    OverlappingEdits {
        /// Where the second edit starts.
        at: usize,
    },
    /// The edited text is not the original plus exactly the intended values.
    #[error("write-back self-check failed: {0}")]
    SelfCheck(#[source] SelfCheckError),
}

/// Why a metric of an entry gets no new value (reported as a note, the rest is written).
#[derive(Debug, thiserror::Error)]
pub enum MissingThreshold {
    /// A dict-shaped baseline has no value for this step key in the runs or the file.
    #[error("no threshold for step `{key}` (not in the runs)")]
    Key {
        /// The step key (`c4`, `r2.5`, …).
        key: String,
    },
    /// A list-shaped baseline has no value for this step in the runs or the file.
    #[error("no threshold for step {trial} (not in the runs)")]
    Step {
        /// The step's trial name, or `?` when the sweep has a gap there.
        trial: String,
    },
}

/// What the write-back self-check found.
#[derive(Debug, thiserror::Error)]
pub enum SelfCheckError {
    /// The original text does not parse with serde_json.
    #[error("{0}")]
    Original(#[source] serde_json::Error),
    /// The edited text does not parse with serde_json.
    #[error("result is not valid JSON: {0}")]
    Result(#[source] serde_json::Error),
    /// An intended entry is not in the parsed original.
    #[error("entry vanished")]
    EntryVanished,
    /// The entry's hardware bucket exists but is not an object.
    #[error("hardware bucket is not an object")]
    BucketNotObject,
    /// The two documents differ.
    #[error("the edited file differs from the intended change")]
    Differs,
}
