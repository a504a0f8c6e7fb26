//! Which charts a run report shows: per test, per sweep kind (concurrency, request
//! rate), per metric family, one line per benchmark entry with its thresholds.

use crate::chart::{LineChart, LinePoint, LineSeries};
use crate::metrics::{FAMILIES, Pick};
use crate::run::{Outcome, Run, StepKind, TrialSummary};

/// The charts of one test.
#[derive(Debug, Clone)]
pub struct TestCharts {
    pub test_name: String,
    pub charts: Vec<LineChart>,
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
            for kind in [StepKind::Concurrency, StepKind::RequestRate] {
                let of_kind: Vec<&TrialSummary> = trials
                    .iter()
                    .copied()
                    .filter(|t| t.kind == Some(kind) && t.x().is_some())
                    .collect();
                charts.extend(kind_charts(&test, kind, &of_kind));
            }
            TestCharts {
                test_name: test,
                charts,
            }
        })
        .collect()
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
