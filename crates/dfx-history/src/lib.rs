//! The run history of dfx-perf: run folders (`run.json`, `summary.json`,
//! `trials/*/result.json`) stored in SQLite (embedded default) or PostgreSQL under one
//! versioned schema, and change-point detection across the stored runs.

pub mod check;
pub mod detect;
mod error;
pub mod findings;
pub mod ingest;
pub mod model;
pub mod noise;
pub mod order;
pub mod report;
pub mod rolling;
pub mod store;

pub use error::HistoryError;
pub use ingest::read_run;
pub use model::{RunRecord, TrialOutcome, TrialRecord};
pub use store::{AddOutcome, HistorySpec, HistoryStore, open};
