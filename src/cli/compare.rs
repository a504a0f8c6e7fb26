//! `dfx-perf compare RUN_A RUN_B` or `dfx-perf compare --a RUN... --b RUN...`: per common
//! trial and metric, A, B, the ratio and a noise-aware verdict; writes `compare.md` and
//! `compare.html`.

use std::path::PathBuf;
use std::process::ExitCode;

use dfx_report::compare::{self, CompareOptions};

use super::Run;
use super::out::{out, outln};

/// Exit status of `--fail-on-regression` when a regression is confirmed.
const EXIT_REGRESSION: u8 = 3;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "A change is called only with 2+ runs per side (use --a/--b with \
    repeats; shell globs work: --a results/*-base-* --b results/*-new-*), when the \
    [min, max] ranges of both sides do not overlap and the medians differ by more than \
    --tolerance. One run per side gives the ratio, labelled \"single pair: unconfirmed\"."
)]
pub struct CompareArgs {
    /// Run A and run B (one run per side).
    #[arg(num_args = 2, value_names = ["RUN_A", "RUN_B"], conflicts_with_all = ["a", "b"], required_unless_present_all = ["a", "b"])]
    pub pair: Vec<PathBuf>,
    /// Side A: one or more run folders (repeats of the same configuration).
    #[arg(long = "a", num_args = 1.., value_name = "RUN", requires = "b")]
    pub a: Vec<PathBuf>,
    /// Side B: one or more run folders.
    #[arg(long = "b", num_args = 1.., value_name = "RUN", requires = "a")]
    pub b: Vec<PathBuf>,
    /// Smallest relative change of the medians that counts as a change.
    #[arg(long, default_value = "5%", value_parser = super::percent)]
    pub tolerance: f64,
    /// Extra metrics to compare (comma separated result keys), besides TTFP, E2EL, RTF,
    /// audio throughput and every thresholded metric.
    #[arg(long, value_delimiter = ',', value_name = "METRIC")]
    pub metrics: Vec<String>,
    /// Compare runs of different hardware labels (or simulator speeds).
    #[arg(long)]
    pub allow_different_hardware: bool,
    /// Compare runs of different config files or trial sets (common trials only).
    #[arg(long)]
    pub allow_different_configs: bool,
    /// Folder for compare.md and compare.html (default: `compare/<A>-vs-<B>` in the
    /// results folder of the first B run).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Exit with status 3 when a regression is confirmed.
    #[arg(long)]
    pub fail_on_regression: bool,
    #[command(flatten)]
    pub verify: super::verify::VerifyArgs,
}

impl Run for CompareArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        let (a, b) = if self.pair.is_empty() {
            (self.a, self.b)
        } else {
            (vec![self.pair[0].clone()], vec![self.pair[1].clone()])
        };
        self.verify.check(&a)?;
        self.verify.check(&b)?;
        let opts = CompareOptions {
            tolerance: self.tolerance,
            allow_different_hardware: self.allow_different_hardware,
            allow_different_configs: self.allow_different_configs,
            metrics: self.metrics,
        };
        let c = compare::compare_dirs(&a, &b, &opts)?;
        out!("{}", compare::render_text(&c));
        let out = self.out.unwrap_or_else(|| compare::default_out_dir(&c));
        let paths = compare::write_comparison(&c, &out)?;
        outln!(
            "wrote {} and {}",
            paths.markdown.display(),
            paths.html.display()
        );
        if self.fail_on_regression && c.regressions().next().is_some() {
            return Ok(ExitCode::from(EXIT_REGRESSION));
        }
        Ok(ExitCode::SUCCESS)
    }
}
