//! Run folders checked against their `manifest.json` before `merge`, `report`, `compare`
//! and `history add` read them (`dfx_core::artefact::manifest`): refused when a file was
//! edited, truncated, removed or added, or when there is no manifest; with `--no-verify`
//! a loud warning instead.

use std::path::PathBuf;

use dfx_core::artefact::manifest;

/// The `--no-verify` flag, shared by the commands that read run folders.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct VerifyArgs {
    /// Read run folders whose files do not match their manifest.json (or that have none),
    /// with a warning on stderr, instead of refusing them.
    #[arg(long)]
    pub no_verify: bool,
}

impl VerifyArgs {
    /// Verifies every folder of `dirs`; the first that fails is an error (naming the
    /// folder and each differing file), or a warning per folder with `--no-verify`.
    pub fn check(self, dirs: &[PathBuf]) -> anyhow::Result<()> {
        for dir in dirs {
            let Err(e) = manifest::verify(dir) else {
                continue;
            };
            if self.no_verify {
                eprintln!("dfx-perf: WARNING: --no-verify: using unverified files: {e}");
            } else {
                anyhow::bail!("{e}; refused (--no-verify uses the folder anyway, with a warning)");
            }
        }
        Ok(())
    }
}
