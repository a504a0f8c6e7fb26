//! Writing thresholds back into an upstream-format perf-config as hardware-nested inline
//! baselines (`"baseline": {"<HW>": {metric: [per-step list]}}`), so a team can send new
//! numbers upstream. Only the JSON spans that change are edited; every other byte of the
//! file stays as it was (formatting, key order, other hardware buckets, other metrics).

mod edit;
pub mod jsonspan;
mod plan_map;

pub use crate::error::{MissingThreshold, SelfCheckError, WritebackError};
pub use plan_map::entries_from_plan;

use std::collections::BTreeMap;
use std::path::Path;

use crate::ReportError;

/// Which sweep a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    /// The entry's `max_concurrency` list (closed loop).
    Concurrency,
    /// The entry's `request_rate` list (open loop).
    RequestRate,
}

/// One sweep step of an entry, as the plan names it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRef {
    /// The trial name (key into the thresholds).
    pub trial: String,
    /// Whether the step comes from the concurrency or the request-rate sweep.
    pub sweep: Sweep,
    /// Index within its own sweep (selects the list element).
    pub index: usize,
    /// Dict-baseline key: `str(max_concurrency)` or `str(request_rate)`.
    pub key: String,
}

/// Where an entry is in the config file and which steps it has.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryRef {
    /// The case's `test_name`.
    pub test_name: String,
    /// Index of the case object in the file's top-level array.
    pub case_index: usize,
    /// Index in `benchmark_params` as written (disabled entries counted).
    pub raw_entry_index: usize,
    /// The entry's runnable steps in plan order.
    pub steps: Vec<StepRef>,
}

/// The edited text and what was done.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteBack {
    /// The whole config file after the edits (equal to the input when nothing changed).
    pub text: String,
    /// `test_name benchmark_params[i]: baseline.H100.median_audio_ttfp_ms = [..]`.
    pub written: Vec<String>,
    /// Entries or metrics not written, and why.
    pub notes: Vec<String>,
}

/// Edits `text` (the config file's content) so that each entry's hardware bucket holds
/// the given thresholds. `thresholds` is trial → metric → value; entries without any
/// threshold are left alone.
pub fn write_back_text(
    file: &Path,
    text: &str,
    hardware: &str,
    entries: &[EntryRef],
    thresholds: &BTreeMap<String, BTreeMap<String, f64>>,
) -> Result<WriteBack, ReportError> {
    let writeback = |source: WritebackError| ReportError::Writeback {
        path: file.to_path_buf(),
        source,
    };
    let root = jsonspan::parse(text).map_err(|e| writeback(e.into()))?;
    let mut out = edit::Outcome::default();
    for entry in entries {
        edit::entry_edits(text, &root, hardware, entry, thresholds, &mut out).map_err(writeback)?;
    }
    let new_text = edit::apply(text, &out.edits).map_err(writeback)?;
    edit::verify(text, &new_text, hardware, &out.intended)
        .map_err(|e| writeback(WritebackError::SelfCheck(e)))?;
    Ok(WriteBack {
        text: new_text,
        written: out.written,
        notes: out.notes,
    })
}

/// Writes `thresholds` back into the perf-config `file` for `hardware`: loads the file
/// with dfx-core's loader (so trial names map to entries and list positions exactly as
/// the suite names them), then edits it and, when `write` is set, writes it atomically
/// (otherwise the returned text shows what would be written).
pub fn write_config(
    file: &Path,
    deploy_dir: &Path,
    baselines_dir: &Path,
    hardware: &str,
    thresholds: &BTreeMap<String, BTreeMap<String, f64>>,
    write: bool,
) -> Result<WriteBack, ReportError> {
    let opts = dfx_core::config::LoadOptions {
        files: vec![file.to_path_buf()],
        hardware: hardware.to_string(),
        deploy_dir: deploy_dir.to_path_buf(),
        baselines_dir: baselines_dir.to_path_buf(),
        mark: None,
    };
    let plan = dfx_core::config::load_plan(&opts).map_err(|e| {
        ReportError::Invalid(format!(
            "--write-config {}: the file does not load: {e}",
            file.display()
        ))
    })?;
    let entries = entries_from_plan(&plan, file);
    let mut wb = if write {
        write_back_file(file, hardware, &entries, thresholds)?
    } else {
        let text = crate::error::read_text(file, dfx_core::bounds::MAX_CONFIG_BYTES)?;
        write_back_text(file, &text, hardware, &entries, thresholds)?
    };
    let known: Vec<&str> = entries
        .iter()
        .flat_map(|e| e.steps.iter().map(|s| s.trial.as_str()))
        .collect();
    if !thresholds.keys().any(|t| known.contains(&t.as_str())) {
        wb.notes.push(format!(
            "no recalibrated trial belongs to {}: nothing written (are the runs from this config?)",
            file.display()
        ));
    }
    Ok(wb)
}

/// Reads `file`, edits it and writes it back atomically. Returns what was done.
pub fn write_back_file(
    file: &Path,
    hardware: &str,
    entries: &[EntryRef],
    thresholds: &BTreeMap<String, BTreeMap<String, f64>>,
) -> Result<WriteBack, ReportError> {
    let text = crate::error::read_text(file, dfx_core::bounds::MAX_CONFIG_BYTES)?;
    let wb = write_back_text(file, &text, hardware, entries, thresholds)?;
    if wb.text != text {
        dfx_core::fsutil::write_atomic(file, wb.text.as_bytes())
            .map_err(|e| ReportError::io(file, e))?;
    }
    Ok(wb)
}
