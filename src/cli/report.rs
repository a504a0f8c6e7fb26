//! `dfx-perf report RUN_DIR...`: (re)writes `report.md`, `report.html` and `junit.xml`
//! into each run folder (the harness does this at the end of every run; this command
//! is for runs that were interrupted or for reports of older runs). Each folder is
//! verified against its manifest first, which is then updated for the three files.

use std::path::PathBuf;
use std::process::ExitCode;

use super::Run;
use super::out::outln;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Run folders (`<results-dir>/<run-id>/`).
    #[arg(required = true, value_name = "RUN_DIR")]
    pub runs: Vec<PathBuf>,
    #[command(flatten)]
    pub verify: super::verify::VerifyArgs,
}

impl Run for ReportArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        self.verify.check(&self.runs)?;
        for dir in &self.runs {
            let p = dfx_report::write_run_reports(dir)?;
            outln!("{}", p.markdown.display());
            outln!("{}", p.html.display());
            outln!("{}", p.junit.display());
        }
        Ok(ExitCode::SUCCESS)
    }
}
