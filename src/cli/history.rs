//! `dfx-perf history add|list|show|check|noise|report`: the run history (SQLite file or
//! PostgreSQL, `--history` / `DFX_HISTORY`), regression detection across runs and the
//! noise per cell.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use dfx_history::check::{self, CheckReport};
use dfx_history::detect::DetectOptions;
use dfx_history::findings::{self, CheckJson};
use dfx_history::noise::{self, CellNoise, NoiseOptions};
use dfx_history::{AddOutcome, HistorySpec, HistoryStore, RunRecord};

use super::Run;
use super::out::outln;

/// Exit status of `history check --fail-on-regression` when a regression is found.
const REGRESSION_STATUS: u8 = 3;

#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// The history: a SQLite file (created when missing) or postgres://user@host/db.
    #[arg(
        long,
        global = true,
        env = "DFX_HISTORY",
        default_value = "target/dfx-perf/history.sqlite",
        value_name = "DB"
    )]
    pub history: String,
    #[command(subcommand)]
    pub command: HistoryCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum HistoryCommand {
    /// Add run folders to the history (adding a run twice stores it once).
    Add {
        /// Run folders (`<results-dir>/<run-id>/`).
        #[arg(required = true, value_name = "RUN")]
        runs: Vec<PathBuf>,
        #[command(flatten)]
        verify: super::verify::VerifyArgs,
    },
    /// List the stored runs, oldest first.
    List,
    /// One trial over the stored runs: outcome and metric values per run.
    Show {
        /// Trial name (`test::suffix::step`).
        trial: String,
        /// Metric to show (repeatable; default: TTFP, E2EL, RTF medians, audio throughput).
        #[arg(long, value_name = "M")]
        metric: Vec<String>,
        /// Only runs of this hardware identity.
        #[arg(long, value_name = "LABEL")]
        hardware: Option<String>,
    },
    /// Find change points per trial × metric; a CI gate with --fail-on-regression.
    Check(CheckArgs),
    /// Noise per trial × metric (CV, MAD), what each threshold catches and how often it
    /// fires on noise alone; worst first.
    Noise(NoiseArgs),
    /// Write the trend report: history.html (a chart per trial × metric) and history.md.
    Report(ReportArgs),
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Only the last N runs of each hardware identity.
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u64).range(2..=10000))]
    pub last: u64,
    /// Only this hardware identity.
    #[arg(long, value_name = "LABEL")]
    pub hardware: Option<String>,
    /// Folder for history.html and history.md (created when missing).
    #[arg(
        long,
        value_name = "DIR",
        default_value = "target/dfx-perf/history-report"
    )]
    pub out: PathBuf,
    /// Metrics to chart besides the defaults and the thresholded ones (comma separated).
    #[arg(long, value_delimiter = ',', value_name = "METRIC")]
    pub metrics: Vec<String>,
}

/// How `check` and `noise` print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Lines for people.
    Text,
    /// One JSON document on stdout.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct NoiseArgs {
    /// Only the last N runs of each hardware identity.
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u64).range(2..))]
    pub last: u64,
    /// Only this hardware identity.
    #[arg(long, value_name = "LABEL")]
    pub hardware: Option<String>,
    /// The regression a threshold must catch (flag "will miss" when its noise hides it).
    #[arg(long, default_value = "10%", value_parser = super::percent)]
    pub regression: f64,
    /// Metrics to list besides the defaults and the thresholded ones (comma separated).
    #[arg(long, value_delimiter = ',', value_name = "METRIC")]
    pub metrics: Vec<String>,
    /// `text` or `json`.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Only the last N runs of each hardware identity.
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u64).range(2..))]
    pub last: u64,
    /// Exit with status 3 when a regression is found.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Only this hardware identity (e.g. `H100`, `SIMx5 (sim speed 5)`).
    #[arg(long, value_name = "LABEL")]
    pub hardware: Option<String>,
    /// Smallest relative change that counts.
    #[arg(long, default_value = "5%", value_parser = super::percent)]
    pub min_change: f64,
    /// The consecutive rule: how many worse runs in a row flag a regression.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub consecutive: u64,
    /// The consecutive rule: how much worse each of them must be.
    #[arg(long, default_value = "10%", value_parser = super::percent)]
    pub consecutive_change: f64,
    /// Metrics to check besides the defaults and the thresholded ones (comma separated).
    #[arg(long, value_delimiter = ',', value_name = "METRIC")]
    pub metrics: Vec<String>,
    /// `text` (one line per run and trial) or `json`.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// What adding a run did, in words.
pub(super) fn added(outcome: AddOutcome) -> &'static str {
    match outcome {
        AddOutcome::Added => "added",
        AddOutcome::Unchanged => "already stored",
        AddOutcome::Replaced => "replaced",
    }
}

impl Run for HistoryArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        let spec = HistorySpec::parse(&self.history)
            .map_err(|e| anyhow::anyhow!("--history (DFX_HISTORY): {e}"))?;
        if let HistoryCommand::Add { runs, verify } = &self.command {
            verify.check(runs)?;
        }
        let mut store = dfx_history::open(&spec)?;
        match self.command {
            HistoryCommand::Add { runs, .. } => add(&mut *store, &runs),
            HistoryCommand::List => list(&mut *store),
            HistoryCommand::Show {
                trial,
                metric,
                hardware,
            } => show(&mut *store, &trial, &metric, hardware.as_deref()),
            HistoryCommand::Check(args) => run_check(&mut *store, &args),
            HistoryCommand::Noise(args) => run_noise(&mut *store, &args),
            HistoryCommand::Report(args) => run_report(&mut *store, &args),
        }
    }
}

fn add(store: &mut dyn HistoryStore, runs: &[PathBuf]) -> anyhow::Result<ExitCode> {
    for dir in runs {
        let run = dfx_history::read_run(dir)?;
        let what = added(store.add(&run)?);
        outln!(
            "{what}: {} ({} trials) in {}",
            run.run_id,
            run.trials.len(),
            store.describe()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn list(store: &mut dyn HistoryStore) -> anyhow::Result<ExitCode> {
    let runs = store.list()?;
    outln!("{}: {} run(s)", store.describe(), runs.len());
    for r in runs {
        outln!(
            "{}  {}  {} trials, {} failed{}  {}",
            r.run_id,
            r.hardware,
            r.trials,
            r.failed,
            if r.interrupted { ", INTERRUPTED" } else { "" },
            r.git_sha
                .as_deref()
                .map_or_else(|| "-".to_string(), |s| s.chars().take(10).collect()),
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn show(
    store: &mut dyn HistoryStore,
    trial: &str,
    metrics: &[String],
    hardware: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let runs = store.load(hardware)?;
    let with: Vec<&RunRecord> = runs.iter().filter(|r| r.trial(trial).is_some()).collect();
    if with.is_empty() {
        anyhow::bail!(
            "trial `{trial}`: not in any stored run of {}",
            store.describe()
        );
    }
    let metrics: Vec<String> = if metrics.is_empty() {
        dfx_core::metrics::HISTORY_TABLE_KEYS
            .iter()
            .map(|k| k.to_string())
            .collect()
    } else {
        metrics.to_vec()
    };
    outln!("run\thardware\toutcome\t{}", metrics.join("\t"));
    for r in with {
        let Some(t) = r.trial(trial) else { continue };
        let values: Vec<String> = metrics
            .iter()
            .map(|m| {
                t.metrics
                    .get(m)
                    .map_or("-".into(), |v| dfx_report::fmt::num(*v))
            })
            .collect();
        let mut outcome = t.outcome.as_str().to_string();
        if let Some(class) = &t.failure_class {
            outcome.push_str(&format!(" [{class}]"));
        }
        if let Some(why) = &t.unclean {
            outcome.push_str(&format!(" ({why})"));
        }
        outln!(
            "{}\t{}\t{outcome}\t{}",
            r.run_id,
            r.hardware_identity,
            values.join("\t")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_check(store: &mut dyn HistoryStore, args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let opts = DetectOptions {
        min_change: args.min_change,
        streak_runs: args.consecutive as usize,
        streak_change: args.consecutive_change,
        ..DetectOptions::default()
    };
    let by_hw = by_hardware(store, args.hardware.as_deref(), args.last)?;
    let reports: Vec<CheckReport> = by_hw
        .iter()
        .map(|(hw, runs)| check::check(hw, runs, &opts, &args.metrics))
        .collect();
    let counted: Vec<(usize, usize)> = reports.iter().map(findings::counts).collect();
    let regressions: usize = counted.iter().map(|c| c.0).sum();
    match args.format {
        Format::Json => {
            outln!("{}", CheckJson::document(&reports));
        }
        Format::Text => {
            if reports.is_empty() {
                outln!("{}: no runs stored; nothing to check", store.describe());
            }
            for r in &reports {
                print_report(r);
            }
            let suspected: usize = counted.iter().map(|c| c.1).sum();
            outln!("{regressions} regression(s), {suspected} suspected (one per run and trial)");
        }
    }
    if regressions > 0 && args.fail_on_regression {
        return Ok(ExitCode::from(REGRESSION_STATUS));
    }
    Ok(ExitCode::SUCCESS)
}

fn run_noise(store: &mut dyn HistoryStore, args: &NoiseArgs) -> anyhow::Result<ExitCode> {
    let opts = NoiseOptions {
        regression: args.regression,
        ..NoiseOptions::default()
    };
    let by_hw = by_hardware(store, args.hardware.as_deref(), args.last)?;
    let tables: Vec<(String, Vec<CellNoise>)> = by_hw
        .iter()
        .map(|(hw, runs)| (hw.clone(), noise::noise_table(runs, &opts, &args.metrics)))
        .collect();
    if args.format == Format::Json {
        outln!("{}", noise::json_document(&tables));
        return Ok(ExitCode::SUCCESS);
    }
    if tables.is_empty() {
        outln!("{}: no runs stored", store.describe());
    }
    let pct = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |v| format!("{:.1}%", v * 100.0));
    for (hw, cells) in &tables {
        let flagged = cells.iter().filter(|c| !c.flags.is_empty()).count();
        outln!(
            "{hw}: {} cell(s), {flagged} flagged (worst first)",
            cells.len()
        );
        outln!(
            "  trial\tmetric\truns\tcv\tmad\tnoise\tthreshold\tmin_detectable_change\tfalse_alarm_rate\tflags"
        );
        for c in cells {
            let flags: Vec<&str> = c.flags.iter().map(|f| f.as_str()).collect();
            let fix = c.fix.as_deref().map_or(String::new(), |f| format!(": {f}"));
            outln!(
                "  {}\t{}\t{}\t{:.1}%\t{}\t{:.1}% ({})\t{}\t{}\t{}\t{}{fix}",
                c.trial,
                c.metric,
                c.runs,
                c.cv * 100.0,
                dfx_report::fmt::num(c.mad),
                c.noise.rel_sd * 100.0,
                match c.noise.source {
                    noise::CellNoiseSource::History => "history",
                    noise::CellNoiseSource::Repeats => "repeats",
                },
                c.threshold
                    .map_or_else(|| "-".to_string(), dfx_report::fmt::num),
                pct(c.min_detectable_change),
                pct(c.false_alarm_rate),
                if flags.is_empty() {
                    "-".to_string()
                } else {
                    flags.join(", ")
                },
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The stored runs grouped by hardware identity (oldest first), the last `last` of each.
fn by_hardware(
    store: &mut dyn HistoryStore,
    hardware: Option<&str>,
    last: u64,
) -> anyhow::Result<BTreeMap<String, Vec<RunRecord>>> {
    let mut by_hw: BTreeMap<String, Vec<RunRecord>> = BTreeMap::new();
    for r in store.load(hardware)? {
        by_hw
            .entry(r.hardware_identity.clone())
            .or_default()
            .push(r);
    }
    for runs in by_hw.values_mut() {
        let skip = runs.len().saturating_sub(last as usize);
        runs.drain(..skip);
    }
    Ok(by_hw)
}

fn run_report(store: &mut dyn HistoryStore, args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let by_hw = by_hardware(store, args.hardware.as_deref(), args.last)?;
    let opts = DetectOptions::default();
    let checks: Vec<CheckReport> = by_hw
        .iter()
        .map(|(hw, runs)| check::check(hw, runs, &opts, &args.metrics))
        .collect();
    let sections: Vec<dfx_history::report::Section<'_>> = by_hw
        .values()
        .zip(&checks)
        .map(|(runs, check)| dfx_history::report::Section { runs, check })
        .collect();
    let doc = dfx_history::report::render(&sections, &args.metrics);
    std::fs::create_dir_all(&args.out)
        .map_err(|e| anyhow::anyhow!("--out {}: {e}", args.out.display()))?;
    for (name, text) in [("history.html", &doc.html), ("history.md", &doc.markdown)] {
        let path = args.out.join(name);
        dfx_core::fsutil::write_atomic(&path, text.as_bytes())
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        outln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(r: &CheckReport) {
    outln!(
        "{}: {} run(s), {} … {}",
        r.hardware,
        r.runs.len(),
        r.runs.first().map_or("-", String::as_str),
        r.runs.last().map_or("-", String::as_str)
    );
    for f in &r.failed_runs {
        let what = if f.all_failed {
            "every trial failed, not a slowdown".to_string()
        } else {
            format!("{} of {} trials failed", f.failed(), f.ran)
        };
        outln!(
            "  FAILED RUN   {}: {what}: {} ({})",
            f.run_id,
            f.classes_text(),
            f.reason
        );
    }
    for id in &r.interrupted_runs {
        outln!("  interrupted  {id}: its unfinished trials are left out");
    }
    let grouped = findings::by_trial(r);
    for f in &grouped {
        let metrics: Vec<String> = f
            .metrics
            .iter()
            .map(|m| {
                let methods: Vec<&str> = m.methods.iter().map(|x| x.as_str()).collect();
                let verdict = if m.verdict == f.verdict {
                    String::new()
                } else {
                    format!("{}, ", m.verdict)
                };
                let why = m
                    .explanation
                    .as_deref()
                    .map_or(String::new(), |w| format!(" — {w}"));
                format!(
                    "{} {} -> {} ({verdict}{:+.1} % worse, noise {}; {}){why}",
                    m.metric,
                    dfx_report::fmt::num(m.before),
                    dfx_report::fmt::num(m.after),
                    m.worse_by * 100.0,
                    dfx_report::fmt::num(m.noise),
                    methods.join("+"),
                )
            })
            .collect();
        outln!(
            "  {:<11}  {} at run {}/{} ({}): {}; noise from {}",
            f.verdict.to_uppercase(),
            f.trial,
            f.run_index + 1,
            r.runs.len(),
            f.run_id,
            metrics.join(", "),
            f.noise_sources()
        );
    }
    if r.findings.is_empty() {
        outln!("  no change points");
    }
}
