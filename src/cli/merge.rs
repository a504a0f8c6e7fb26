//! `dfx-perf merge RUN… --out DIR`: the run folders of a run's shards (`--partition`)
//! verified against their manifests, combined into one run folder with its summary,
//! reports, upstream export and manifest (`dfx_report::merge`), then optionally copied
//! into a flat upstream folder and added to the history.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::Run;
use super::out::outln;

/// Exit status when a merged trial failed, a shard was interrupted or is missing: the
/// suite's own status for failed trials.
const FAILED_STATUS: u8 = 101;

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Run folders of the shards (`<results-dir>/<run-id>/`); one run is fine too.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// The merged run folder to create (must not exist, or be empty); its name is the
    /// merged run id.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Also add the merged run to this history: a SQLite file or postgres://user@host/db.
    #[arg(long, env = "DFX_HISTORY", value_name = "DB")]
    pub history: Option<String>,
    /// Also copy every merged result, under upstream's file name, into this flat folder
    /// (as the suite's --upstream-results-dir does; existing files are kept).
    #[arg(long, env = "DFX_UPSTREAM_RESULTS_DIR", value_name = "DIR")]
    pub upstream_results_dir: Option<PathBuf>,
    #[command(flatten)]
    pub verify: super::verify::VerifyArgs,
}

impl Run for MergeArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        let history = self
            .history
            .as_deref()
            .map(dfx_history::HistorySpec::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--history (DFX_HISTORY): {e}"))?;
        self.verify.check(&self.runs)?;
        let merged = dfx_report::merge::merge(&self.runs, &self.out)?;
        outln!(
            "merged {} run(s) into {}: {} passed, {} failed, {} ignored",
            self.runs.len(),
            merged.dir.display(),
            merged.passed,
            merged.failed,
            merged.ignored
        );
        if !merged.missing_shards.is_empty() {
            eprintln!(
                "dfx-perf: warning: shard(s) {:?} of the partition were not merged; the run is incomplete",
                merged.missing_shards
            );
        }
        if let Some(dir) = &self.upstream_results_dir {
            export_upstream(&merged.dir, dir)?;
        }
        if let Some(spec) = &history {
            let run = dfx_history::read_run(&merged.dir)?;
            let outcome = dfx_history::open(spec)?.add(&run)?;
            outln!("history: {} {}", run.run_id, super::history::added(outcome));
        }
        let verdict = if merged.passed() { "ok" } else { "FAILED" };
        outln!("verdict: {verdict}");
        Ok(if merged.passed() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(FAILED_STATUS)
        })
    }
}

/// Copies the merged `upstream/` files into `dir`, keeping files already there.
fn export_upstream(run: &Path, dir: &Path) -> anyhow::Result<()> {
    let src = run.join("upstream");
    let Ok(listing) = std::fs::read_dir(&src) else {
        return Ok(());
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for entry in listing.flatten() {
        let target = dir.join(entry.file_name());
        if target.exists() {
            eprintln!(
                "dfx-perf: warning: {} exists already; not overwritten",
                target.display()
            );
            continue;
        }
        std::fs::copy(entry.path(), &target)
            .with_context(|| format!("copying into {}", target.display()))?;
    }
    Ok(())
}
