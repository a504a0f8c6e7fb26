//! SIGINT / SIGTERM / SIGHUP during a run. The handler (a `ctrlc` thread) first claims the
//! run's close ([`crate::finish::CloseGate`]). If the main thread claimed it first (its
//! last trial had ended), that close stands: the handler waits for it and lets the main
//! thread exit with its own status. Otherwise the handler:
//!
//! 1. freezes the run's progress, noting which trial was running (what the main thread
//!    does after this, e.g. failing requests against the torn-down server, is not recorded)
//!    and makes the pool refuse to start servers;
//! 2. tears down every live server group (`dfx_server::teardown_all`);
//! 3. marks the running trial failed and `interrupted`: its partial `records.jsonl` and
//!    `bench.log` stay (each replaced by a copy, so that the bench still running on the
//!    main thread appends to unlinked files, not to the closed folder), a template
//!    `result.json` and a `verdict.json` say why;
//! 4. closes the run ([`Closing::close`]: summary.json with an `interrupted` section,
//!    run.json, reports), tears down once more (a start under way at step 1 has registered
//!    its group by now), writes `manifest.json` ([`Closing::seal`]) and exits with
//!    status 130.
//!
//! From the signal on, the main thread's runner writes nothing more into the run folder
//! (it checks [`requested`] before a trial, before its bench and before recording it).
//!
//! The main thread, finding the close claimed by the handler when libtest returns, waits
//! for that exit ([`await_handler`]) instead of returning its own status.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dfx_core::artefact::VerdictFile;
use dfx_core::fsutil::write_json_atomic;
use dfx_core::result::template_fallback;
use dfx_core::verdict::{FailureClass, Verdict};
use serde_json::json;

use crate::finish::{CloseGate, Closer, Closing};
use crate::progress::{Current, Progress, SharedProgress, lock};
use crate::result_keys::add_runner_keys;
use crate::settings::SetupError;
use crate::summary::{Interruption, Outcome, SummaryEntry};

/// Exit status of an interrupted run (128 + SIGINT, like a shell).
pub(crate) const EXIT_INTERRUPTED: i32 = crate::exit::SuiteExit::Interrupted.code() as i32;

/// Longest wait of one side of the close for the other: two teardowns of a stubborn
/// sglang-omni group (30 s grace + 5 s each) and the writing of the summary and reports.
const OTHER_SIDE_WAIT: Duration = Duration::from_secs(120);

/// How long the handler lets a main thread that has closed the run return its own status.
const MAIN_EXIT_WAIT: Duration = Duration::from_secs(5);

/// Installs the handler for this run. Fails only when another `ctrlc` handler exists in
/// the process.
pub(crate) fn install(closing: Arc<Closing>, progress: SharedProgress) -> Result<(), SetupError> {
    ctrlc::set_handler(move || on_signal(&closing, &progress)).map_err(SetupError::Signal)
}

/// What the main thread does when the handler claimed the close: waits (bounded) for the
/// handler, which exits the process with status 130; if it never does, returns 130 itself.
pub(crate) fn await_handler(gate: &CloseGate) -> ExitCode {
    if !gate.wait_done(OTHER_SIDE_WAIT) {
        eprintln!("dfx-perf: the interrupt handler did not finish in {OTHER_SIDE_WAIT:?}");
    }
    // The handler exits right after finishing; returning 130 here ends the same way.
    ExitCode::from(EXIT_INTERRUPTED as u8)
}

fn on_signal(closing: &Closing, progress: &Mutex<Progress>) -> ! {
    let at = Instant::now();
    // First: no bench sends another request, and what the teardown cuts is `interrupted`.
    dfx_core::stop::request();
    crate::reserve::release();
    if closing.gate.claim(Closer::Signal).is_err() {
        // The main thread is closing the run (its trials are over): that close stands.
        eprintln!("\ndfx-perf: interrupted while the run was being closed; finishing that first");
        closing.gate.wait_done(OTHER_SIDE_WAIT);
        std::thread::sleep(MAIN_EXIT_WAIT);
        std::process::exit(EXIT_INTERRUPTED)
    }
    let running = {
        let mut p = lock(progress);
        p.frozen = true;
        p.current.clone()
    };
    let groups = dfx_server::live_groups();
    eprintln!(
        "\ndfx-perf: interrupted; {}, then writing summary.json",
        dfx_server::stopping_message()
    );
    if let Err(e) = dfx_server::teardown_all() {
        eprintln!("dfx-perf: {e}");
    }
    reap(&groups);
    {
        let mut p = lock(progress);
        if !p.closed {
            let interruption = mark_interrupted(&mut p, closing, running.as_ref(), at);
            // 130 says more than a write failure here; `close` printed each failure.
            let _ = closing.close(&mut p, Some(interruption));
        }
    }
    let late = dfx_server::live_groups();
    if let Err(e) = dfx_server::teardown_all() {
        eprintln!("dfx-perf: {e}");
    }
    reap(&late);
    let _ = closing.seal();
    closing.gate.finish();
    std::process::exit(EXIT_INTERRUPTED)
}

/// Reaps the (dead) leaders of torn-down groups, which the main thread would have reaped:
/// where PID 1 does not reap orphans (many containers), they would stay zombies.
fn reap(groups: &[i32]) {
    use nix::sys::wait::{WaitPidFlag, waitpid};
    for &g in groups {
        let _ = waitpid(nix::unistd::Pid::from_raw(g), Some(WaitPidFlag::WNOHANG));
    }
}

/// Records the interruption in `progress`: the running trial (if any) becomes a failed,
/// `interrupted` entry with a template `result.json` and a `verdict.json` in its folder;
/// the answer lists the selected trials that never started. `at` is when the signal came.
pub(crate) fn mark_interrupted(
    progress: &mut Progress,
    closing: &Closing,
    running: Option<&Current>,
    at: Instant,
) -> Interruption {
    // A start waiting for readiness has its folder but had not reported back yet.
    let server_dirs = std::fs::read_dir(closing.run.servers_dir())
        .map(|d| d.flatten().filter(|e| e.path().is_dir()).count())
        .unwrap_or(0);
    progress.server_starts = progress.server_starts.max(server_dirs);
    let mut interruption = Interruption {
        trial: None,
        trial_seconds: None,
        not_run: Vec::new(),
    };
    if let Some(cur) = running {
        let seconds = at.saturating_duration_since(cur.started).as_secs_f64();
        let entry = interrupted_entry(closing, cur, seconds);
        interruption.trial = Some(entry.name.clone());
        interruption.trial_seconds = Some(seconds);
        progress.entries[cur.idx] = Some(entry);
    }
    interruption.not_run = closing
        .selected
        .iter()
        .filter(|&&i| progress.entries[i].is_none())
        .map(|&i| closing.trials[i].trial.name.clone())
        .collect();
    interruption
}

fn interrupted_entry(closing: &Closing, cur: &Current, seconds: f64) -> SummaryEntry {
    let t = &closing.trials[cur.idx];
    let dir = closing.run.trial_dir(&t.dir_name);
    detach(&dir);
    let rel = format!("trials/{}", t.dir_name);
    let reason = format!(
        "interrupted (SIGINT/SIGTERM) after {seconds:.1} s{}",
        records_said(&dir, &rel)
    );
    let mut entry = SummaryEntry::new(&t.trial, Outcome::Failed);
    entry.interrupted = true;
    entry.failures = vec![reason.clone()];
    entry.failure_class = Some(FailureClass::Interrupted);
    entry.failure_detail = Some(reason.clone());
    entry.seconds = Some(seconds);
    entry.bench = cur.bench.map(String::from);
    entry.server = cur.server.as_ref().map(|s| s.rel_dir.clone());
    entry.server_started = cur.server.as_ref().map(|s| s.started);
    if dir.is_dir() {
        let mut doc = template_fallback(&reason);
        add_runner_keys(&mut doc, &t.trial, &closing.hardware, cur.bench);
        let mut verdict = Verdict::failed(vec![reason.clone()]);
        verdict.interrupted = true;
        verdict.classify(FailureClass::Interrupted, reason.clone());
        doc.insert("verdict".into(), json!(verdict));
        let file = VerdictFile::new(&t.trial.name, verdict, &t.trial.thresholds);
        let written = write_json_atomic(&dir.join("result.json"), &doc)
            .and_then(|()| write_json_atomic(&dir.join("verdict.json"), &file));
        match written {
            Ok(()) => {
                entry.result = Some(format!("{rel}/result.json"));
                entry.result_source = Some("template".into());
            }
            Err(e) => entry.failures.push(format!("cannot write {rel}: {e}")),
        }
    }
    entry
}

/// Replaces every file under the interrupted trial's folder by a copy of itself. The main
/// thread's bench runs on until the process exits and may still append to the files it
/// holds open (`records.jsonl`, `bench.log`): those appends now go to the replaced,
/// unlinked files, so the folder stays as the summary and `manifest.json` describe it.
fn detach(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => detach(&path),
            Ok(t) if t.is_file() => {
                let name = entry.file_name().to_string_lossy().into_owned();
                let tmp = dir.join(format!(".{name}.detach.{}", std::process::id()));
                let copied = std::fs::copy(&path, &tmp).and_then(|_| std::fs::rename(&tmp, &path));
                if let Err(e) = copied {
                    let _ = std::fs::remove_file(&tmp);
                    eprintln!("dfx-perf: cannot detach {}: {e}", path.display());
                }
            }
            _ => {}
        }
    }
}

/// Where a trial keeps request records: its folder, a repeat's or a capacity probe's
/// (`repeat-<k>/`, `probe-<NN>/`, `probe-<NN>/repeat-<k>/`), as relative paths.
fn record_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut walk = vec![(dir.to_path_buf(), String::new(), 0)];
    while let Some((d, rel, depth)) = walk.pop() {
        if d.join("records.jsonl").is_file() {
            found.push(format!("{rel}records.jsonl"));
        }
        let Ok(children) = std::fs::read_dir(&d) else {
            continue;
        };
        if depth == 2 {
            continue;
        }
        for c in children.flatten() {
            let name = c.file_name().to_string_lossy().into_owned();
            let sub = name.starts_with("repeat-") || name.starts_with("probe-");
            if sub && c.path().is_dir() {
                walk.push((c.path(), format!("{rel}{name}/"), depth + 1));
            }
        }
    }
    found.sort();
    found
}

/// Records of a file and how many of them the interruption cut (`error_class`
/// `interrupted`), read a line at a time (a records file can be large).
fn count_records(path: &Path) -> (usize, usize) {
    const CUT: &[u8] = br#""error_class":"interrupted""#;
    let Ok(f) = std::fs::File::open(path) else {
        return (0, 0);
    };
    let (mut n, mut cut) = (0, 0);
    for line in BufReader::with_capacity(64 * 1024, f).split(b'\n') {
        let Ok(line) = line else { break };
        n += 1;
        if line.windows(CUT.len()).any(|w| w == CUT) {
            cut += 1;
        }
    }
    (n, cut)
}

/// The failure reason's tail: how many request records the trial left and where, and
/// how many of them the interruption cut (not failures of the server).
fn records_said(dir: &Path, rel: &str) -> String {
    let files = record_files(dir);
    let counts: Vec<(usize, usize)> = files.iter().map(|f| count_records(&dir.join(f))).collect();
    let total: usize = counts.iter().map(|c| c.0).sum();
    let cut: usize = counts.iter().map(|c| c.1).sum();
    let cut_said = if cut > 0 {
        format!(" ({cut} cut by the interruption, not counted as failures)")
    } else {
        String::new()
    };
    match files.as_slice() {
        [] => ", before any request record".into(),
        [one] => format!("; {total} per-request record(s) in {rel}/{one}{cut_said}"),
        _ => {
            let each: Vec<String> = files
                .iter()
                .zip(&counts)
                .map(|(f, n)| format!("{f}: {}", n.0))
                .collect();
            format!(
                "; {total} per-request record(s) in {} files under {rel}/ ({}){cut_said}",
                files.len(),
                each.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests;
