//! What a trial left on disk, for the report to link and quote: the files of its folder
//! (`trials/<dir>/`) and of its server's folder, the failure class the verdict recorded,
//! the percentiles of its `result.json` and, for a failed trial, the tail of its logs.
//! Everything is read tolerantly: a missing or unreadable file is simply not shown.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::run::{Outcome, Run, TrialSummary};

/// Files of a trial folder the report links, in this order, when present.
const TRIAL_FILES: &[&str] = &[
    "result.json",
    "verdict.json",
    "bench.log",
    "records.jsonl",
    "batches.jsonl",
    "gpu_samples.jsonl",
];
/// Sub-folders (repeats, capacity probes) whose bench logs are linked too, at most.
const MAX_SUB_LOGS: usize = 12;
/// Lines of a log quoted under a failed trial.
pub(crate) const TAIL_LINES: usize = 25;
/// Bytes of `result.json` read for the percentiles.
const MAX_RESULT_BYTES: u64 = 16 * 1024 * 1024;

/// A file the report links: its label and its path relative to the run folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileLink {
    /// `bench.log`, `repeat-1/bench.log`, `server.log`.
    pub label: String,
    /// Relative to the run folder (where `report.html` lives), `/`-separated.
    pub href: String,
}

/// The last lines of one log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogTail {
    /// The log's path relative to the run folder.
    pub file: String,
    /// Its last [`TAIL_LINES`] lines.
    pub text: String,
}

/// What the report shows of a trial beyond `summary.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Evidence {
    /// Existing files of the trial and its server, linkable.
    pub links: Vec<FileLink>,
    /// The trial's failure class (summary.json, as in its `verdict.json`; absent in older
    /// runs).
    pub failure_class: Option<String>,
    /// The class's one-line detail.
    pub failure_detail: Option<String>,
    /// Numeric keys of `result.json` (percentiles the summary does not keep).
    pub result: Map<String, Value>,
    /// Failed trials: the tail of the bench log, and of the server log when the server
    /// is the suspect (a server failure class, or no bench log).
    pub tails: Vec<LogTail>,
}

impl Evidence {
    /// A metric of the trial: the summary's, else `result.json`'s (never for a
    /// fallback result, whose zeros are not measurements).
    pub(crate) fn metric(&self, t: &TrialSummary, key: &str) -> Option<f64> {
        if t.is_fallback() || t.outcome == Outcome::Ignored {
            return None;
        }
        t.metric(key)
            .or_else(|| self.result.get(key).and_then(Value::as_f64))
    }
}

/// Gathers the evidence of every trial of `run`, in trial order.
pub(crate) fn gather(run: &Run) -> Vec<Evidence> {
    run.trials.iter().map(|t| of_trial(&run.dir, t)).collect()
}

fn of_trial(run_dir: &Path, t: &TrialSummary) -> Evidence {
    let mut ev = Evidence::default();
    let Some(dir) = trial_dir(run_dir, t) else {
        return ev;
    };
    for name in TRIAL_FILES {
        if run_dir.join(&dir).join(name).is_file() {
            ev.links.push(link(name, &dir.join(name)));
        }
    }
    ev.links.extend(sub_logs(run_dir, &dir));
    let server_log = t
        .server
        .as_deref()
        .and_then(relative)
        .map(|s| s.join("server.log"))
        .filter(|p| run_dir.join(p).is_file());
    if let Some(p) = &server_log {
        ev.links.push(link("server.log", p));
    }
    ev.failure_class = t.failure_class.map(|c| c.as_str().to_string());
    ev.failure_detail = t.failure_detail.clone().filter(|s| !s.is_empty());
    if let Some(Value::Object(r)) = read_json(&run_dir.join(&dir).join("result.json")) {
        ev.result = r.into_iter().filter(|(_, v)| v.is_number()).collect();
    }
    if t.outcome == Outcome::Failed {
        ev.tails = tails(
            run_dir,
            &dir,
            server_log.as_deref(),
            ev.failure_class.as_deref(),
        );
    }
    ev
}

fn tails(
    run_dir: &Path,
    dir: &Path,
    server_log: Option<&Path>,
    class: Option<&str>,
) -> Vec<LogTail> {
    let mut out = Vec::new();
    let bench = dir.join("bench.log");
    let has_bench = run_dir.join(&bench).is_file();
    if has_bench {
        out.extend(tail(run_dir, &bench));
    }
    let server_suspect = class.is_some_and(|c| c.starts_with("server")) || !has_bench;
    if let Some(s) = server_log.filter(|_| server_suspect) {
        out.extend(tail(run_dir, s));
    }
    out
}

fn tail(run_dir: &Path, rel: &Path) -> Option<LogTail> {
    let text = dfx_core::fsutil::log_tail(&run_dir.join(rel), TAIL_LINES);
    (!text.trim().is_empty()).then(|| LogTail {
        file: slash_path(rel),
        text,
    })
}

/// `repeat-1/bench.log`, `probe-01/bench.log`: the bench logs one level down.
fn sub_logs(run_dir: &Path, dir: &Path) -> Vec<FileLink> {
    let Ok(rd) = std::fs::read_dir(run_dir.join(dir)) else {
        return Vec::new();
    };
    let mut subs: Vec<String> = rd
        .filter_map(Result::ok)
        .filter(|e| e.path().join("bench.log").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    subs.sort();
    subs.into_iter()
        .take(MAX_SUB_LOGS)
        .map(|s| link(&format!("{s}/bench.log"), &dir.join(&s).join("bench.log")))
        .collect()
}

/// The trial's folder relative to the run folder: the parent of its `result` path (the
/// summary writes it relative; a rebuilt run has it absolute), else
/// `trials/<sanitised name>`.
fn trial_dir(run_dir: &Path, t: &TrialSummary) -> Option<PathBuf> {
    let from_result = t.result.as_deref().and_then(|r| {
        let p = Path::new(r);
        let rel = match p.strip_prefix(run_dir) {
            Ok(rel) => rel.to_path_buf(),
            Err(_) => relative(r)?,
        };
        rel.parent().map(Path::to_path_buf)
    });
    let dir = from_result.unwrap_or_else(|| {
        Path::new("trials").join(dfx_core::fsutil::sanitize_component(
            &t.name.replace("::", "__"),
        ))
    });
    run_dir.join(&dir).is_dir().then_some(dir)
}

/// `s` as a path inside the run folder: relative, without `..` (else `None`).
fn relative(s: &str) -> Option<PathBuf> {
    let p = Path::new(s);
    p.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        .then(|| p.to_path_buf())
}

fn link(label: &str, rel: &Path) -> FileLink {
    FileLink {
        label: label.to_string(),
        href: href(rel),
    }
}

fn slash_path(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// A relative URL for `rel`: each segment percent-encoded except unreserved characters.
fn href(rel: &Path) -> String {
    let mut out = String::new();
    for (i, seg) in slash_path(rel).split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        for b in seg.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

fn read_json(path: &Path) -> Option<Value> {
    let text = dfx_core::fsutil::read_text_bounded(path, MAX_RESULT_BYTES).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_are_relative_and_encoded() {
        assert_eq!(
            href(Path::new("trials/a b#1/bench.log")),
            "trials/a%20b%231/bench.log"
        );
        assert!(relative("../x").is_none());
        assert!(relative("/etc/passwd").is_none());
        assert_eq!(
            relative("servers/01-a"),
            Some(PathBuf::from("servers/01-a"))
        );
    }
}
