//! Comparing runs: side A (one or more repeats) against side B, per common trial and
//! metric, with a verdict that accounts for run-to-run noise (`stats`).

mod check;
mod render;
mod setup;
pub(crate) mod stats;

pub use render::{ComparePaths, render_html, render_markdown, render_text, write_comparison};
pub use setup::SetupDifference;
pub use stats::{SideStats, Verdict};

use std::path::{Path, PathBuf};

use dfx_core::baseline::Direction;
use serde::Serialize;

use crate::metrics::{FAMILIES, Pick};
use crate::run::{Run, TrialSummary, load_run};
use crate::{ReportError, fmt};

/// How to compare.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    /// Smallest relative change of the medians that counts (0.05 = 5 %).
    pub tolerance: f64,
    /// Compare runs of different hardware identities (`--allow-different-hardware`);
    /// a note records it.
    pub allow_different_hardware: bool,
    /// Compare runs of different config files, bench tools or trial sets, on their
    /// common trials (`--allow-different-configs`); notes record what differs.
    pub allow_different_configs: bool,
    /// Metrics to compare besides the defaults (TTFP, E2EL, RTF medians, audio
    /// throughput, and every metric with a threshold).
    pub metrics: Vec<String>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            tolerance: 0.05,
            allow_different_hardware: false,
            allow_different_configs: false,
            metrics: Vec::new(),
        }
    }
}

/// One trial and metric, A against B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The trial's name.
    pub trial: String,
    /// The result key (`median_e2el_ms`, …).
    pub metric: String,
    /// Which way is better: dfx-core's metric table, else the threshold a run recorded;
    /// `None` when neither knows.
    pub direction: Option<Direction>,
    /// Side A's clean values, `None` when no run of A measured the metric cleanly.
    pub a: Option<SideStats>,
    /// Side B's clean values, `None` when no run of B measured the metric cleanly.
    pub b: Option<SideStats>,
    /// `B / A` of the medians.
    pub ratio: Option<f64>,
    /// Relative change toward worse (`+0.12` = 12 % worse), or `B/A - 1` when the
    /// direction is unknown.
    pub change: Option<f64>,
    /// Range of the change the repeats allow (`(lowest, highest)`, same sign convention
    /// as `change`); `None` with a single run on both sides.
    pub change_range: Option<(f64, f64)>,
    /// What the numbers support.
    pub verdict: Verdict,
}

/// A run on one side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRef {
    /// The run's id (`summary.json`'s `run_id`, else the folder name).
    pub run_id: String,
    /// The run folder as given.
    pub dir: PathBuf,
}

/// The result of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Side A's runs, in the order given.
    pub a: Vec<RunRef>,
    /// Side B's runs, in the order given.
    pub b: Vec<RunRef>,
    /// The hardware identity of A's first run (label, plus the simulator speed if any).
    pub hardware: String,
    /// [`CompareOptions::tolerance`] as used (a fraction: 0.05 = 5 %).
    pub tolerance: f64,
    /// Every aspect of the setup (simulator speed and faults, bench, connection mode,
    /// server flags, commands and versions, hardware, …) whose values differ between
    /// the sides; shown above the verdict.
    pub setup: Vec<SetupDifference>,
    /// One per common trial and compared metric, in the order of A's first run.
    pub rows: Vec<Row>,
    /// What was overridden, left out or could not be used, and why.
    pub notes: Vec<String>,
}

impl Comparison {
    /// Rows with a confirmed regression.
    pub fn regressions(&self) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Regression)
    }

    /// Whether every row is a single-pair or otherwise unconfirmed comparison.
    pub(crate) fn all_unconfirmed(&self) -> bool {
        self.rows.iter().all(|r| {
            matches!(
                r.verdict,
                Verdict::Unconfirmed { .. } | Verdict::NotMeasured { .. }
            )
        })
    }
}

/// Loads the run folders of both sides and compares them.
pub fn compare_dirs(
    a: &[PathBuf],
    b: &[PathBuf],
    opts: &CompareOptions,
) -> Result<Comparison, ReportError> {
    let load = |dirs: &[PathBuf]| {
        dirs.iter()
            .map(|d| load_run(d))
            .collect::<Result<Vec<_>, _>>()
    };
    compare_runs(&load(a)?, &load(b)?, opts)
}

/// Compares side A against side B. Refuses different hardware or configs unless the
/// options allow it.
pub(crate) fn compare_runs(
    a: &[Run],
    b: &[Run],
    opts: &CompareOptions,
) -> Result<Comparison, ReportError> {
    if a.is_empty() || b.is_empty() {
        return Err(ReportError::Invalid(
            "compare needs at least one run on each side (A and B)".into(),
        ));
    }
    let mut notes = check::same_hardware(a, b, opts.allow_different_hardware)?;
    let same = |x: &Run, y: &Run| match (x.dir.canonicalize(), y.dir.canonicalize()) {
        (Ok(p), Ok(q)) => p == q,
        _ => x.dir == y.dir,
    };
    for r in a.iter().filter(|r| b.iter().any(|x| same(r, x))) {
        notes.push(format!(
            "run {} ({}) is on both sides",
            r.run_id,
            r.dir.display()
        ));
    }
    notes.extend(check::same_configs(a, b, opts.allow_different_configs)?);
    let trials = common_trials(a, b);
    if trials.is_empty() {
        return Err(ReportError::Refused(
            "the runs have no trial in common: nothing to compare".into(),
        ));
    }
    let mut rows = Vec::new();
    for trial in &trials {
        let metrics = metrics_for(trial, a, b, &opts.metrics);
        for metric in metrics {
            rows.push(row(trial, &metric, a, b, opts.tolerance, &mut notes));
        }
    }
    for m in &opts.metrics {
        if !rows.iter().any(|r| &r.metric == m) {
            return Err(ReportError::Invalid(format!(
                "--metrics {m}: no compared trial measured `{m}` (check the name against result.json keys)"
            )));
        }
    }
    let mut seen = std::collections::HashSet::new();
    notes.retain(|n| seen.insert(n.clone()));
    Ok(Comparison {
        a: refs(a),
        b: refs(b),
        hardware: a[0].hardware_identity(),
        tolerance: opts.tolerance,
        setup: setup::differences(a, b),
        rows,
        notes,
    })
}

fn refs(runs: &[Run]) -> Vec<RunRef> {
    runs.iter()
        .map(|r| RunRef {
            run_id: r.run_id.clone(),
            dir: r.dir.clone(),
        })
        .collect()
}

/// Trials measured on both sides, in the order of side A's first run.
fn common_trials(a: &[Run], b: &[Run]) -> Vec<String> {
    let in_side =
        |runs: &[Run], name: &str| runs.iter().any(|r| check::trial_set(r).contains(name));
    let mut out: Vec<String> = Vec::new();
    for r in a {
        for t in &r.trials {
            if !out.contains(&t.name) && in_side(a, &t.name) && in_side(b, &t.name) {
                out.push(t.name.clone());
            }
        }
    }
    out
}

fn trials_of<'a>(
    runs: &'a [Run],
    name: &'a str,
) -> impl Iterator<Item = (&'a Run, &'a TrialSummary)> {
    runs.iter()
        .filter_map(move |r| r.trial(name).map(|t| (r, t)))
}

/// Default metrics (one per family, the thresholded ones, the extra ones) that either
/// side measured for this trial.
fn metrics_for(trial: &str, a: &[Run], b: &[Run], extra: &[String]) -> Vec<String> {
    let all: Vec<&TrialSummary> = trials_of(a, trial)
        .chain(trials_of(b, trial))
        .map(|(_, t)| t)
        .collect();
    let mut wanted: Vec<&str> = FAMILIES
        .iter()
        .map(|f| f.pick(all.iter().copied()).unwrap_or(f.keys[0]))
        .collect();
    wanted.extend(
        all.iter()
            .flat_map(|t| t.thresholds.iter().map(|th| th.metric.as_str())),
    );
    wanted.extend(extra.iter().map(String::as_str));
    let mut out: Vec<String> = Vec::new();
    for m in wanted {
        if !out.iter().any(|x| x == m) && all.iter().any(|t| t.metric(m).is_some()) {
            out.push(m.to_string());
        }
    }
    out
}

fn side_values(
    runs: &[Run],
    trial: &str,
    metric: &str,
    notes: &mut Vec<String>,
) -> Option<SideStats> {
    let mut values = Vec::new();
    for (run, t) in trials_of(runs, trial) {
        match crate::run::unclean_reason(t) {
            Some(why) => notes.push(format!("{trial} in run {} not used: {why}", run.run_id)),
            None => match t.repeat_values(metric) {
                // A step run as repeats: each repeat is a value of its own.
                r if r.len() > 1 => values.extend(r),
                _ => values.extend(t.metric(metric).filter(|v| v.is_finite())),
            },
        }
    }
    SideStats::of(values)
}

fn row(
    trial: &str,
    metric: &str,
    a: &[Run],
    b: &[Run],
    tolerance: f64,
    notes: &mut Vec<String>,
) -> Row {
    let direction = trials_of(a, trial)
        .chain(trials_of(b, trial))
        .find_map(|(_, t)| t.direction(metric));
    let sa = side_values(a, trial, metric, notes);
    let sb = side_values(b, trial, metric, notes);
    let (ratio, change, change_range, verdict) = match (&sa, &sb) {
        (Some(x), Some(y)) if x.median != 0.0 => (
            Some(stats::ratio(x, y)),
            Some(stats::change(x.median, y.median, direction)),
            stats::change_range(x, y, direction),
            stats::verdict(x, y, direction, tolerance),
        ),
        (Some(_), Some(_)) => (
            None,
            None,
            None,
            Verdict::NotMeasured {
                why: "A is 0".into(),
            },
        ),
        (None, _) => (
            None,
            None,
            None,
            Verdict::NotMeasured {
                why: "no clean value in A".into(),
            },
        ),
        (_, None) => (
            None,
            None,
            None,
            Verdict::NotMeasured {
                why: "no clean value in B".into(),
            },
        ),
    };
    Row {
        trial: trial.to_string(),
        metric: metric.to_string(),
        direction,
        a: sa,
        b: sb,
        ratio,
        change,
        change_range,
        verdict,
    }
}

/// `median [min–max] (n)` or `-`.
pub(crate) fn side_text(s: &Option<SideStats>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.n() == 1 => fmt::num(s.median),
        Some(s) => format!(
            "{} [{}–{}] n={}",
            fmt::num(s.median),
            fmt::num(s.min),
            fmt::num(s.max),
            s.n()
        ),
    }
}

/// The default output folder: `compare/<A>-vs-<B>` in the results folder of the first B
/// run (a subfolder, so globs over run ids such as `results/*-H100` do not match it).
pub fn default_out_dir(c: &Comparison) -> PathBuf {
    let parent = c.b[0].dir.parent().unwrap_or(Path::new("."));
    parent.join("compare").join(format!(
        "{}-vs-{}",
        dfx_core::fsutil::sanitize_component(&c.a[0].run_id),
        dfx_core::fsutil::sanitize_component(&c.b[0].run_id)
    ))
}
