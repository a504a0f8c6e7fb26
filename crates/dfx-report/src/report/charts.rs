//! Which charts a run report shows: per test, per sweep kind (concurrency, request
//! rate), per metric family, one line per benchmark entry with its thresholds.

use crate::chart::{LineChart, LinePoint, LineSeries};
use crate::metrics::{FAMILIES, Pick};
use crate::run::{Outcome, Run, StepKind, TrialSummary};

/// The charts of one test.
#[derive(Debug, Clone)]
pub struct TestCharts {
    /// The config's test.
    pub test_name: String,
    /// Its charts, concurrency first.
    pub charts: Vec<LineChart>,
    /// Request-rate steps not charted because every entry ran a single rate (a chart
    /// would show one point per line): trial names, shown as table rows instead.
    pub single_rate_steps: Vec<String>,
}

/// Builds every chart of the run, tests in first-appearance order. Ignored trials and
/// fallback results are left out (they measured nothing); failed or breached steps are
/// drawn in red.
pub fn run_charts(run: &Run) -> Vec<TestCharts> {
    let mut tests: Vec<String> = Vec::new();
    for t in &run.trials {
        if !tests.contains(&t.test_name) {
            tests.push(t.test_name.clone());
        }
    }
    tests
        .into_iter()
        .map(|test| {
            let trials: Vec<&TrialSummary> = run
                .trials
                .iter()
                .filter(|t| t.test_name == test)
                .filter(|t| t.outcome != Outcome::Ignored && !t.is_fallback())
                .collect();
            let mut charts = Vec::new();
            let mut single_rate_steps = Vec::new();
            for kind in [StepKind::Concurrency, StepKind::RequestRate] {
                let of_kind: Vec<&TrialSummary> = trials
                    .iter()
                    .copied()
                    .filter(|t| t.kind == Some(kind) && t.x().is_some())
                    .collect();
                if kind == StepKind::RequestRate && one_step_per_entry(&of_kind) {
                    single_rate_steps.extend(of_kind.iter().map(|t| t.name.clone()));
                } else {
                    charts.extend(kind_charts(&test, kind, &of_kind));
                }
            }
            TestCharts {
                test_name: test,
                charts,
                single_rate_steps,
            }
        })
        .collect()
}

/// Whether no benchmark entry has two steps: every line would be a single point.
fn one_step_per_entry(trials: &[&TrialSummary]) -> bool {
    trials.iter().all(|t| {
        trials
            .iter()
            .filter(|o| o.suffix == t.suffix && o.x() != t.x())
            .count()
            == 0
    })
}

fn kind_charts(test: &str, kind: StepKind, trials: &[&TrialSummary]) -> Vec<LineChart> {
    let (kind_id, x_label) = match kind {
        StepKind::Concurrency => ("concurrency", "max concurrency"),
        StepKind::RequestRate => ("request_rate", "request rate (req/s)"),
    };
    let mut entries: Vec<&str> = Vec::new();
    for t in trials {
        if !entries.contains(&t.suffix.as_str()) {
            entries.push(&t.suffix);
        }
    }
    FAMILIES
        .iter()
        .filter_map(|family| {
            let key = family.pick(trials.iter().copied())?;
            let series: Vec<LineSeries> = entries
                .iter()
                .map(|entry| entry_series(entry, key, trials))
                .filter(|s| !s.points.is_empty() || !s.thresholds.is_empty())
                .collect();
            (!series.is_empty()).then(|| LineChart {
                id: format!("{test}::{}::{kind_id}", family.id),
                title: format!("{test}: {key}"),
                x_label: x_label.into(),
                y_label: family.axis_label().into(),
                series,
            })
        })
        .collect()
}

fn entry_series(entry: &str, key: &str, trials: &[&TrialSummary]) -> LineSeries {
    let mut steps: Vec<&TrialSummary> = trials
        .iter()
        .copied()
        .filter(|t| t.suffix == entry)
        .collect();
    steps.sort_by(|a, b| {
        a.x()
            .partial_cmp(&b.x())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let points = steps
        .iter()
        .filter_map(|t| {
            let y = t.metric(key).filter(|y| y.is_finite())?;
            let breached = super::threshold_views(t)
                .iter()
                .any(|v| v.metric == key && v.breached);
            Some(LinePoint {
                x: t.x()?,
                y,
                bad: breached || t.outcome == Outcome::Failed,
            })
        })
        .collect();
    let thresholds = steps
        .iter()
        .filter_map(|t| Some((t.x()?, t.threshold(key)?.value)))
        .collect();
    LineSeries {
        label: entry.to_string(),
        points,
        thresholds,
    }
}
