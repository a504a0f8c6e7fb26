//! The run report written at the end of every run: `report.md`, `report.html` (inline
//! CSS and SVG charts, nothing fetched) and `junit.xml`.

mod charts;
mod evidence;
pub(crate) mod html;
mod junit;
mod markdown;

pub use charts::run_charts;
pub use html::render_html;
pub use html::{page_end, page_start};
pub use junit::render_junit;
pub use markdown::render_markdown;

use std::path::{Path, PathBuf};

use dfx_core::artefact::{FlagRecord, FlagSource, MergedShard};
use dfx_core::baseline::Direction;
use dfx_core::fsutil::write_atomic;

use crate::metrics::gap;
use crate::run::{Outcome, Run, TrialSummary, load_run};
use crate::{ReportError, fmt};

/// The files [`write_run_reports`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportPaths {
    /// `<run_dir>/report.md`.
    pub markdown: PathBuf,
    /// `<run_dir>/report.html`.
    pub html: PathBuf,
    /// `<run_dir>/junit.xml`.
    pub junit: PathBuf,
}

/// Reads the run folder and writes `report.md`, `report.html` and `junit.xml` into it
/// (atomically). Works on finished runs and on runs that died before `summary.json`
/// (trials are then rebuilt from `trials/*/result.json`). A folder's `manifest.json`, if
/// it has one, is updated for the three files.
pub fn write_run_reports(run_dir: &Path) -> Result<ReportPaths, ReportError> {
    let run = load_run(run_dir)?;
    let paths = ReportPaths {
        markdown: run_dir.join("report.md"),
        html: run_dir.join("report.html"),
        junit: run_dir.join("junit.xml"),
    };
    for (path, text) in [
        (&paths.markdown, render_markdown(&run)),
        (&paths.html, render_html(&run)),
        (&paths.junit, render_junit(&run)),
    ] {
        write_atomic(path, text.as_bytes()).map_err(|e| ReportError::io(path, e))?;
    }
    dfx_core::artefact::manifest::update(run_dir, &["report.md", "report.html", "junit.xml"])?;
    Ok(paths)
}

/// One threshold of a trial next to its measured value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThresholdView {
    /// The result key the threshold is on.
    pub metric: String,
    /// The measured value, `None` when not measured or the result is a fallback.
    pub value: Option<f64>,
    /// The threshold, in the metric's unit.
    pub threshold: f64,
    /// Whether it is a ceiling (lower is better) or a floor (higher is better).
    pub direction: Direction,
    /// Relative gap toward worse (positive = breach), when the value was measured.
    pub gap: Option<f64>,
    /// The run's verdict listed this metric as breached, or the value is worse than
    /// the threshold.
    pub breached: bool,
    /// Where the threshold came from: `inline`, `store` or `result.json`.
    pub source: String,
}

impl ThresholdView {
    /// `audio_throughput 120.97 < 134.11 (-9.8 %)`, the terminal's breach line
    /// ([`dfx_core::verdict::gap::threshold_line`]); `median_e2el_ms not measured
    /// (threshold <= 350)` when there is no value.
    pub(crate) fn text(&self) -> String {
        match self.value {
            Some(v) => dfx_core::verdict::gap::threshold_line(&self.metric, v, self.threshold),
            None => format!(
                "{} not measured (threshold {} {})",
                self.metric,
                self.direction.symbol(),
                fmt::num(self.threshold)
            ),
        }
    }
}

/// The thresholds of a trial with values and gaps; a metric is breached when the run's
/// verdict listed it or when the value is worse than the threshold.
pub(crate) fn threshold_views(t: &TrialSummary) -> Vec<ThresholdView> {
    t.thresholds
        .iter()
        .map(|th| {
            // a fallback result's zeros are not measurements
            let value = t.metric(&th.metric).filter(|_| !t.is_fallback());
            let g = value.map(|v| gap(v, th.value, th.direction));
            ThresholdView {
                metric: th.metric.clone(),
                value,
                threshold: th.value,
                direction: th.direction,
                gap: g,
                breached: t.breach(&th.metric).is_some() || g.is_some_and(|g| g > 0.0),
                source: th.source.label().to_string(),
            }
        })
        .collect()
}

/// `(passed, failed, ignored)`.
pub fn counts(run: &Run) -> (usize, usize, usize) {
    let n = |o| run.trials.iter().filter(|t| t.outcome == o).count();
    (n(Outcome::Passed), n(Outcome::Failed), n(Outcome::Ignored))
}

/// The run facts shown at the top of every report, as `(label, value)` rows.
pub(crate) fn header_rows(run: &Run) -> Vec<(&'static str, String)> {
    let i = &run.info;
    let mut rows = vec![("hardware", run.hardware_identity())];
    if let Some(v) = dfx_perf_identity(i) {
        rows.push(("dfx-perf", v));
    }
    if let Some(h) = &i.hostname {
        rows.push(("host", h.clone()));
    }
    if let Some(s) = &i.started {
        rows.push(("started", s.clone()));
    }
    if let Some(f) = &i.finished {
        let took = duration_text(i.started.as_deref(), f)
            .map(|d| format!(" (took {d})"))
            .unwrap_or_default();
        rows.push(("finished", format!("{f}{took}")));
    }
    let configs = i.config_identities();
    if !configs.is_empty() {
        rows.push(("configs", configs.join(", ")));
    }
    if !i.merged_from.is_empty() {
        rows.push(("flags (every shard)", flags_text(&i.flags)));
        for s in &i.merged_from {
            rows.push(("shard", shard_text(s)));
        }
    } else if !i.flags.is_empty() {
        rows.push(("flags", flags_text(&i.flags)));
    }
    if !i.shards_missing.is_empty() {
        let ks: Vec<String> = i.shards_missing.iter().map(u64::to_string).collect();
        rows.push(("shards missing", ks.join(", ")));
    }
    let (p, f, ig) = counts(run);
    let nd = run.trials.iter().filter(|t| t.needs_data()).count();
    let needs = if nd > 0 {
        format!("; {nd} without thresholds (needs data)")
    } else {
        String::new()
    };
    rows.push((
        "result",
        format!(
            "{f} failed, {p} passed, {ig} ignored ({} trials){needs}",
            run.trials.len()
        ),
    ));
    rows
}

/// `0.1.0 (git 3f2a9c1e0b)`: the dfx-perf version and commit a run was made with.
pub(crate) fn dfx_perf_identity(i: &dfx_core::artefact::RunInfo) -> Option<String> {
    let sha = i
        .git_sha
        .as_deref()
        .map(|s| format!(" (git {})", s.chars().take(10).collect::<String>()));
    let v = i.dfx_perf_version.as_ref()?;
    Some(format!("{v}{}", sha.unwrap_or_default()))
}

fn duration_text(started: Option<&str>, finished: &str) -> Option<String> {
    let a = chrono::DateTime::parse_from_rfc3339(started?).ok()?;
    let b = chrono::DateTime::parse_from_rfc3339(finished).ok()?;
    let s = (b - a).num_seconds();
    (s >= 0).then(|| {
        if s >= 3600 {
            format!("{}h {}m", s / 3600, (s % 3600) / 60)
        } else if s >= 60 {
            format!("{}m {}s", s / 60, s % 60)
        } else {
            format!("{s}s")
        }
    })
}

/// `count:1/2 20261206-010000-SIMx10 (host-a, 3 trials) /abs/folder: --results-dir …`: one
/// shard of a merged run, with its canonical folder and its own flags.
fn shard_text(s: &MergedShard) -> String {
    let spec = s
        .partition
        .as_ref()
        .and_then(|p| p.get("spec")?.as_str())
        .map(|p| format!("{p} "))
        .unwrap_or_default();
    let host = s
        .hostname
        .as_deref()
        .map(|h| format!("{h}, "))
        .unwrap_or_default();
    format!(
        "{spec}{} ({host}{} trials) {}: {}",
        s.run_id,
        s.trials,
        s.dir,
        flags_text(&s.flags)
    )
}

/// The flags as given, `flag value` each (flags left at their default are counted, not
/// listed).
fn flags_text(flags: &[FlagRecord]) -> String {
    let is_default = |r: &&FlagRecord| r.source == FlagSource::Default;
    let mut parts: Vec<String> = flags
        .iter()
        .filter(|r| !is_default(r))
        .map(|r| {
            let flag = &r.flag;
            match &r.value {
                serde_json::Value::Bool(true) => flag.to_string(),
                serde_json::Value::String(s) => format!("{flag} {s}"),
                serde_json::Value::Array(items) => {
                    let items: Vec<String> = items
                        .iter()
                        .map(|i| {
                            i.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| i.to_string())
                        })
                        .collect();
                    format!("{flag} {}", items.join(","))
                }
                v => format!("{flag} {v}"),
            }
        })
        .collect();
    let defaults = flags.iter().filter(is_default).count();
    if defaults > 0 {
        parts.push(format!("(+{defaults} at default)"));
    }
    parts.join(" ")
}

/// `128/128` completed of expected, or `-`.
pub(crate) fn completion_text(t: &TrialSummary) -> String {
    match (t.metric("completed"), t.num_prompts) {
        (Some(c), Some(n)) => format!("{}/{}", fmt::num(c), fmt::num(n as f64)),
        (Some(c), None) => fmt::num(c),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_git_sha_is_cut_by_characters() {
        let i = dfx_core::artefact::RunInfo {
            dfx_perf_version: Some("0.1.0".into()),
            git_sha: Some("€".repeat(12)),
            ..Default::default()
        };
        assert_eq!(
            dfx_perf_identity(&i).unwrap(),
            format!("0.1.0 (git {})", "€".repeat(10))
        );
    }
}
