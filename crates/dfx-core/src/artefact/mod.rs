//! What a run writes, as types: `run.json` ([`RunInfo`]), `summary.json` ([`Summary`]),
//! `trials/<trial>/verdict.json` ([`VerdictFile`]), dfx-perf's own sections of
//! `trials/<trial>/result.json` ([`ResultSections`]) and `manifest.json` ([`manifest`]). The harness writes these types and
//! the report, compare, recalibrate and the history read them back, so the files have
//! one definition; [`schema`] turns it into the JSON Schemas checked into
//! `docs/schema/`.
//!
//! Readers are lenient where older run folders differ (missing keys take defaults,
//! `"inf"` rates, numbers written as strings): a run folder recorded by an earlier
//! dfx-perf still loads.

pub mod manifest;
pub(crate) mod result;
pub(crate) mod run;
pub mod schema;
pub mod summary;
pub(crate) mod verdict;

pub use manifest::{MANIFEST_FILE, Manifest, ManifestEntry, ManifestError};
pub use result::ResultSections;
pub use run::{
    ConfigFileRef, FlagRecord, FlagSource, MergedShard, PartitionMethod, RunInfo, ShardRecord,
};
pub use summary::{
    Interruption, KEY_METRICS, Outcome, RepeatsSummary, StepKind, Summary, SummaryEntry,
};
pub use verdict::VerdictFile;
