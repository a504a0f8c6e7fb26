//! Why a baseline write-back refused to edit a config file.

use super::jsonspan::SyntaxError;

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
