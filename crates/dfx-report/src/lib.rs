//! Reports (markdown, HTML with SVG charts, JUnit), run comparison, baseline
//! recalibration and the merge of shard runs, all working on the run folders the harness writes
//! (`<results-dir>/<run-id>/`: `run.json`, `summary.json`, `trials/*/result.json`).

pub(crate) mod chart;
pub mod compare;
mod error;
pub mod fmt;
pub mod merge;
pub(crate) mod metrics;
pub mod recalibrate;
pub mod report;
pub mod run;
pub mod trend;
pub mod writeback;

pub use error::ReportError;
pub use report::{ReportPaths, write_run_reports};
pub use run::{Run, load_run};
