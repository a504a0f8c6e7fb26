//! `dfx-perf recalibrate RUN...`: new thresholds from clean runs of one hardware (median
//! across runs plus a margin by direction) into `baselines/<hardware>.json`, and
//! optionally back into a perf-config as hardware-nested inline baselines.
//! `--from-history` takes the runs from the history instead (`dfx_history::rolling`).

use std::path::PathBuf;
use std::process::ExitCode;

use std::collections::BTreeMap;

use dfx_history::rolling::{self, Rolling, RollingOptions};
use dfx_history::{HistorySpec, RunRecord};
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
    #[arg(
        required_unless_present = "from_history",
        conflicts_with = "from_history",
        value_name = "RUN"
    )]
    pub runs: Vec<PathBuf>,
    /// Propose thresholds from the last good runs in the history instead of run folders.
    #[arg(long)]
    pub from_history: bool,
    /// The history for --from-history: a SQLite file or postgres://user@host/db.
    #[arg(
        long,
        env = "DFX_HISTORY",
        default_value = "target/dfx-perf/history.sqlite",
        value_name = "DB"
    )]
    pub history: String,
    /// --from-history: the hardware label or identity (needed when the history holds several).
    #[arg(long, value_name = "LABEL")]
    pub hardware: Option<String>,
    /// --from-history: how many of each trial's latest good runs are used.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub window: u64,
    /// --from-history: fewest good runs a threshold is set from ("needs data" below it).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub min_runs: u64,
    /// --from-history: `median` of the good runs, or their `worst` value, plus the margin.
    #[arg(long, default_value = "median", value_parser = dfx_history::rolling::Policy::parse)]
    pub policy: dfx_history::rolling::Policy,
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
            metric_margins: self.margin_metric.iter().cloned().collect(),
            metrics: self.metrics.clone(),
            tolerance: self.tolerance,
            allow_loosen: self.allow_loosen,
            skip_failed: self.skip_failed,
        };
        let r = if self.from_history {
            let rolling = self.rolling(opts)?;
            print_uses(&rolling);
            rolling.recalibration
        } else {
            recalibrate::plan_from_dirs(&self.runs, &opts)?
        };
        out!("{}", recalibrate::render_table(&r));
        let why = recalibrate::nothing_to_write(&r, &self.metrics);
        if let Some(why) = &why {
            outln!("{why}");
        }
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
            if applied.written + applied.restored == 0 && why.is_none() {
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

impl RecalibrateArgs {
    /// The rolling proposal of `--from-history` for the one hardware identity selected.
    fn rolling(&self, base: RecalibrateOptions) -> anyhow::Result<Rolling> {
        let spec = HistorySpec::parse(&self.history)
            .map_err(|e| anyhow::anyhow!("--history (DFX_HISTORY): {e}"))?;
        let mut store = dfx_history::open(&spec)?;
        let mut by_identity: BTreeMap<String, Vec<RunRecord>> = BTreeMap::new();
        for r in store.load(None)? {
            let wanted = self
                .hardware
                .as_deref()
                .is_none_or(|h| h == r.hardware_identity || h == r.fingerprint.hardware);
            if wanted {
                by_identity
                    .entry(r.hardware_identity.clone())
                    .or_default()
                    .push(r);
            }
        }
        let ids: Vec<&String> = by_identity.keys().collect();
        let runs = match ids.as_slice() {
            [_] => by_identity.into_values().next().unwrap_or_default(),
            [] => anyhow::bail!(
                "--from-history: {} holds no run{}",
                store.describe(),
                self.hardware
                    .as_deref()
                    .map_or(String::new(), |h| format!(" of hardware `{h}`"))
            ),
            _ => anyhow::bail!(
                "--from-history: {} holds runs of several hardware identities ({}); pick one with --hardware",
                store.describe(),
                ids.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let label = runs
            .last()
            .map(|r| r.fingerprint.hardware.clone())
            .unwrap_or_default();
        let opts = RollingOptions {
            base,
            window: self.window as usize,
            min_runs: self.min_runs as usize,
            policy: self.policy,
            ..RollingOptions::default()
        };
        outln!(
            "from history {}: {} run(s) of {}, window {}, at least {}, policy {}",
            store.describe(),
            runs.len(),
            label,
            opts.window,
            opts.min_runs,
            opts.policy.as_str()
        );
        Ok(rolling::propose(&label, &runs, &opts)?)
    }
}

/// Every run considered per trial: used, or rejected with why.
fn print_uses(r: &Rolling) {
    for u in &r.uses {
        let what = match (&u.metric, &u.rejected) {
            (_, None) => "used".to_string(),
            (None, Some(why)) => format!("rejected: {why}"),
            (Some(m), Some(why)) => format!("rejected for {m}: {why}"),
        };
        outln!("  {}  {}  {what}", u.trial, u.run_id);
    }
    if !r.needs_data.is_empty() {
        outln!(
            "{} trial(s) had no threshold for this hardware in the latest run (needs data): {}",
            r.needs_data.len(),
            r.needs_data.join(", ")
        );
    }
}
