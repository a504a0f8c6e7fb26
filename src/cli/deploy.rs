//! `dfx-perf deploy [NAME]`: list deploy files with their header summary, or print the
//! absolute path of one.

use std::path::PathBuf;
use std::process::ExitCode;

use dfx_core::deploy::{self, DeployError};

use super::Run;
use super::out::outln;

/// Exit status for an unknown or invalid deploy name.
const EXIT_USAGE: u8 = 2;

#[derive(Debug, clap::Args)]
pub struct DeployArgs {
    /// Deploy name (with or without `.yaml`); without it, every name is listed.
    pub name: Option<String>,
    /// Folder holding the deploy files.
    #[arg(long, env = "DFX_DEPLOY_DIR", default_value = "deploy")]
    pub deploy_dir: PathBuf,
}

impl Run for DeployArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        let names = deploy::list(&self.deploy_dir);
        let Some(name) = self.name else {
            if names.is_empty() {
                eprintln!(
                    "dfx-perf: no deploy files (*.yaml) under {}",
                    self.deploy_dir.display()
                );
                return Ok(ExitCode::from(EXIT_USAGE));
            }
            let width = names.iter().map(String::len).max().unwrap_or(0);
            for n in &names {
                let path = deploy::resolve(&self.deploy_dir, n)?;
                outln!("{n:<width$}  {}", deploy::summary(&path));
            }
            return Ok(ExitCode::SUCCESS);
        };
        match deploy::resolve(&self.deploy_dir, &name) {
            Ok(path) => {
                outln!("{}", path.display());
                Ok(ExitCode::SUCCESS)
            }
            Err(e @ (DeployError::NotFound { .. } | DeployError::NotAName { .. })) => {
                eprintln!("dfx-perf: {e}");
                eprintln!("deploy names under {}:", self.deploy_dir.display());
                for n in &names {
                    eprintln!("  {n}");
                }
                Ok(ExitCode::from(EXIT_USAGE))
            }
            Err(e) => Err(e.into()),
        }
    }
}
