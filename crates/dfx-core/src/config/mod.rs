//! Perf-config loading: raw serde structs mirroring the upstream JSON (both dialects),
//! validated into a [`Plan`] with every problem reported at once.
//!
//! Pipeline: `read` (file → JSON array) → `case` (case object → validated draft, with
//! `server`, `entry`, `sweep`, `marks` and the baseline shapes) → `assemble`
//! (tests, trial names, baseline store, `--mark`). Nothing downstream re-validates.
//!
//! Decisions beyond upstream (`docs/config.md` ("Decisions beyond upstream")):
//! - diffusion-dialect entries (kebab-case keys such as `num-prompts`, or a case tagged
//!   `diffusion`) are loaded leniently, with their endpoint resolved and their baselines
//!   parsed; they run only through the diffusion driver (the harness lists them as ignored
//!   with [`DIFFUSION_UNSUPPORTED`] when it is not configured);
//! - an omni entry without a sweep is a config error;
//! - `server_params.ready_timeout_s` (seconds, positive) sets `ServerSpec::ready_timeout`;
//! - unknown case and `server_params` keys are warnings; unknown entry keys are bench flags.

mod assemble;
mod capacity;
mod case;
pub(crate) mod entry;
mod entry_parts;
mod judge;
pub mod known_keys;
mod load_keys;
pub(crate) mod marks;
pub(crate) mod naming;
pub(crate) mod raw;
mod read;
mod runners;
mod server;
mod stability;
pub(crate) mod sweep;
pub(crate) mod value;

pub use crate::diag::{ConfigError, ConfigErrors};
pub use entry::{
    DIFFUSION_BASELINE_NOTE, DIFFUSION_UNSUPPORTED, NoDefaultEndpoint, diffusion_endpoint,
};
pub use marks::{MarkExpr, MarkExprError};
pub use runners::{CONTRACT_EXTERNAL, MAX_CONTRACT_TIMEOUT_S, NATIVE_DUPLEX_EXTERNAL};
pub use sweep::{SweepError, expand as expand_sweep};

use std::path::{Path, PathBuf};

use crate::baseline::load_store;
use crate::plan::Plan;

/// What loading needs besides the files.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Config files in the order given (default: every `perf-configs/*.json`, sorted).
    pub files: Vec<PathBuf>,
    /// Hardware label used to pick hardware-nested baselines and `baselines/<hw>.json`.
    pub hardware: String,
    /// Folder holding deploy YAML files (`deploy/`).
    pub deploy_dir: PathBuf,
    /// Folder holding `<hardware>.json` baseline stores (`baselines/`).
    pub baselines_dir: PathBuf,
    /// `--mark` expression; trials whose case marks do not match are left out.
    pub mark: Option<String>,
}

impl LoadOptions {
    /// The defaults for a repository: every `perf-configs/*.json` (sorted), `deploy/`,
    /// `baselines/`, no `--mark`.
    pub fn for_repo(repo_root: &Path, hardware: &str) -> LoadOptions {
        LoadOptions {
            files: default_config_files(repo_root),
            hardware: hardware.to_string(),
            deploy_dir: repo_root.join("deploy"),
            baselines_dir: repo_root.join("baselines"),
            mark: None,
        }
    }
}

/// Loads and validates every file into one plan. Reports every problem found, not just
/// the first; nothing has been started when this returns an error.
pub fn load_plan(opts: &LoadOptions) -> Result<Plan, ConfigErrors> {
    let mut errs = Vec::new();
    let mut warnings = Vec::new();
    let mut cases = Vec::new();
    for file in &opts.files {
        match read::read_cases(file) {
            Ok(values) => {
                for (i, v) in values.iter().enumerate() {
                    cases.push(case::build_case(
                        file,
                        i,
                        v,
                        &opts.deploy_dir,
                        &mut errs,
                        &mut warnings,
                    ));
                }
            }
            Err(e) => errs.push(*e),
        }
    }
    let mut trials = assemble::build_trials(&cases, &opts.hardware);
    errs.extend(assemble::duplicate_names(&trials));
    match load_store(&opts.baselines_dir, &opts.hardware) {
        Ok(Some(store)) => {
            assemble::apply_store(&store, &mut trials, &opts.hardware, &mut warnings)
        }
        Ok(None) => {}
        Err(e) => errs.extend(e),
    }
    if let Some(expr) = &opts.mark {
        assemble::select_by_mark(expr, &cases, &mut trials, &mut errs);
    }
    assemble::note_warnings(&trials, &mut warnings);
    if errs.is_empty() {
        let hardware_labels = named_labels(&cases, &opts.baselines_dir);
        Ok(Plan {
            trials,
            warnings,
            hardware_labels,
        })
    } else {
        Err(ConfigErrors(errs))
    }
}

/// The hardware labels the cases' nested baselines and `hardware_marks` name, and the
/// stems of the `*.json` stores in `baselines_dir`: sorted, each once.
fn named_labels(cases: &[case::CaseDraft], baselines_dir: &Path) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for case in cases {
        labels.extend(case.marks.hardware.iter().cloned());
        for e in &case.entries {
            if let Some(crate::baseline::BaselineSpec::Nested(buckets)) = &e.baseline {
                labels.extend(buckets.iter().map(|(hw, _)| hw.clone()));
            }
        }
    }
    let stores = std::fs::read_dir(baselines_dir)
        .into_iter()
        .flatten()
        .flatten();
    labels.extend(stores.filter_map(|e| {
        let path = e.path();
        let stem = path.file_stem()?.to_str()?;
        (path.extension().is_some_and(|x| x == "json")).then(|| stem.to_string())
    }));
    labels.sort();
    labels.dedup();
    labels
}

/// `<repo_root>/perf-configs/*.json`, sorted by file name (empty when the folder is
/// missing).
pub fn default_config_files(repo_root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo_root.join("perf-configs"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}
