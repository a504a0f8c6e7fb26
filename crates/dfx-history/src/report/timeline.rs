//! The history report's time axis: each run's date, the server version or commit it ran,
//! its failed trials by class; the x labels and tooltips of the charts and the runs table.

use std::fmt::Write;

use dfx_report::fmt::html;

use crate::check::{CheckReport, FailedRun};
use crate::model::RunRecord;

/// `2026-12-06 01:00` (UTC) from the sort key, else the run id.
pub(super) fn when(run: &RunRecord) -> String {
    let k = &run.sort_key;
    let dated = k.len() >= 16 && k.as_bytes()[4] == b'-' && k.as_bytes()[10] == b'T';
    if dated {
        format!("{} {}", &k[..10], &k[11..16])
    } else {
        run.run_id.clone()
    }
}

/// The x labels of `runs`: `12-06` (month-day) when no two runs share a date, else
/// `12-06 07:30`; a run without a date is its position.
pub(super) fn labels(runs: &[RunRecord]) -> Vec<String> {
    let whens: Vec<String> = runs.iter().map(when).collect();
    let dated = |w: &str| w.len() >= 16 && w.as_bytes()[4] == b'-';
    let days: std::collections::BTreeSet<&str> = whens
        .iter()
        .filter(|w| dated(w))
        .map(|w| &w[..10])
        .collect();
    let unique = days.len() == whens.iter().filter(|w| dated(w)).count();
    whens
        .iter()
        .enumerate()
        .map(|(i, w)| match (dated(w), unique) {
            (true, true) => w[5..10].to_string(),
            (true, false) => w[5..16].to_string(),
            (false, _) => format!("{}", i + 1),
        })
        .collect()
}

/// What ran: the server's version (`vllm_omni 0.9.1`, else its first reported
/// version), the dfx-perf commit (10 characters).
pub(super) fn version(run: &RunRecord) -> String {
    let fp = &run.fingerprint;
    let server = fp
        .server_versions
        .get_key_value("vllm_omni")
        .or_else(|| fp.server_versions.iter().next())
        .map(|(k, v)| format!("{k} {v}"));
    let commit = fp
        .git_sha
        .as_deref()
        .map(|s| format!("commit {}", s.chars().take(10).collect::<String>()));
    let parts: Vec<String> = server.into_iter().chain(commit).collect();
    if parts.is_empty() {
        "version unknown".into()
    } else {
        parts.join(", ")
    }
}

/// The tooltip of run `i` in a chart: date, id, versions, value and, when the trial
/// failed, its class.
pub(super) fn tip(run: &RunRecord, i: usize, value: &str, failed: Option<&str>) -> String {
    let mut t = format!(
        "run {} · {} UTC · {}\n{}\n{value}",
        i + 1,
        when(run),
        run.run_id,
        version(run)
    );
    if let Some(class) = failed {
        let _ = write!(t, "\nfailed: {class}");
    }
    t
}

/// The runs table: #, date, run id, version, failed trials by class.
pub(super) fn runs_table(page: &mut String, runs: &[RunRecord], r: &CheckReport) {
    page.push_str("<table class=\"runs\"><tr><th>#</th><th>start (UTC)</th><th>run</th><th>server / commit</th><th>failed trials</th></tr>\n");
    for (i, run) in runs.iter().enumerate() {
        let failed = r.failed_runs.iter().find(|f| f.run_id == run.run_id);
        let _ = writeln!(
            page,
            "<tr{}><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            if failed.is_some() {
                " class=\"failed-run\""
            } else {
                ""
            },
            i + 1,
            html(&when(run)),
            html(&run.run_id),
            html(&version(run)),
            failed.map_or_else(|| "—".to_string(), |f| html(&failed_text(f)))
        );
    }
    page.push_str("</table>\n");
}

/// `4 of 5 failed: 4 breach`, or `every trial failed (not a slowdown): 5 server_start`.
pub(super) fn failed_text(f: &FailedRun) -> String {
    if f.all_failed {
        format!("every trial failed (not a slowdown): {}", f.classes_text())
    } else {
        format!("{} of {} failed: {}", f.failed(), f.ran, f.classes_text())
    }
}
