//! `dfx-perf recalibrate RUN...`: new thresholds from clean runs of one hardware (median
//! across runs plus a margin by direction) into `baselines/<hardware>.json`, and
//! optionally back into a perf-config as hardware-nested inline baselines.

use std::path::PathBuf;
use std::process::ExitCode;

use dfx_report::recalibrate::{self, RecalibrateOptions};

use super::Run;
use super::out::{out, outln};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Policy: an old threshold is kept unless the new one is tighter by \
    more than --tolerance; a looser one is written only with --allow-loosen. Failed or \
    fallback trials and runs of mixed hardware are refused."
)]
pub struct RecalibrateArgs {
    /// Run folders of one hardware (e.g. the repeats made by scripts/recalibrate.sh).
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// Folder of the baseline stores (`<hardware>.json`).
    #[arg(long, env = "DFX_BASELINES_DIR", default_value = "baselines")]
    pub baselines_dir: PathBuf,
    /// Margin on the median: ceilings get +X %, floors −X %.
    #[arg(long, default_value = "25%", value_parser = super::percent)]
    pub margin: f64,
    /// Margin for one metric (repeatable), e.g. `median_audio_ttfp_ms=40%`.
    #[arg(long, value_name = "METRIC=PCT", value_parser = parse_metric_margin)]
    pub margin_metric: Vec<(String, f64)>,
    /// Metrics to calibrate besides those that already have thresholds (comma separated).
    #[arg(long, value_delimiter = ',', value_name = "METRIC")]
    pub metrics: Vec<String>,
    /// Smallest relative change that replaces an old threshold.
    #[arg(long, default_value = "5%", value_parser = super::percent)]
    pub tolerance: f64,
    /// Also write thresholds that are looser than the old ones.
    #[arg(long)]
    pub allow_loosen: bool,
    /// Leave trials that failed or fell back in some run unchanged instead of refusing.
    #[arg(long)]
    pub skip_failed: bool,
    /// Also write the thresholds into this upstream-format perf-config as
    /// hardware-nested inline baselines (only those spans of the file change).
    #[arg(long, value_name = "CONFIG.json")]
    pub write_config: Option<PathBuf>,
    /// Deploy folder (needed to load the config given to --write-config).
    #[arg(long, env = "DFX_DEPLOY_DIR", default_value = "deploy")]
    pub deploy_dir: PathBuf,
    /// Print the table (and the config edits) without writing anything.
    #[arg(long)]
    pub dry_run: bool,
}

fn parse_metric_margin(s: &str) -> Result<(String, f64), String> {
    let (m, p) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected METRIC=PCT, e.g. median_audio_ttfp_ms=40%"))?;
    Ok((m.trim().to_string(), super::percent(p)?))
}

impl Run for RecalibrateArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        let opts = RecalibrateOptions {
            baselines_dir: self.baselines_dir.clone(),
            margin: self.margin,
            metric_margins: self.margin_metric.into_iter().collect(),
            metrics: self.metrics,
            tolerance: self.tolerance,
            allow_loosen: self.allow_loosen,
            skip_failed: self.skip_failed,
        };
        let r = recalibrate::plan_from_dirs(&self.runs, &opts)?;
        out!("{}", recalibrate::render_table(&r));
        if self.dry_run {
            outln!("dry run: {} not written", r.store.display());
        } else {
            let applied = recalibrate::apply(&r)?;
            if applied.written > 0 {
                outln!(
                    "wrote {} threshold(s) to {}",
                    applied.written,
                    applied.store.display()
                );
            }
            if applied.restored > 0 {
                outln!(
                    "restored {} kept threshold(s) that the runs read from the store but {} no longer had",
                    applied.restored,
                    applied.store.display()
                );
            }
            if applied.written + applied.restored == 0 {
                outln!("nothing to write: {} unchanged", applied.store.display());
            }
        }
        if let Some(cfg) = &self.write_config {
            let wb = dfx_report::writeback::write_config(
                cfg,
                &self.deploy_dir,
                &self.baselines_dir,
                &r.hardware,
                &r.final_thresholds(),
                !self.dry_run,
            )?;
            for w in &wb.written {
                outln!("{}: {w}", cfg.display());
            }
            for n in &wb.notes {
                outln!("note: {n}");
            }
            let verb = if self.dry_run {
                "would update"
            } else {
                "updated"
            };
            outln!(
                "{verb} {} ({} metric list(s))",
                cfg.display(),
                wb.written.len()
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}
