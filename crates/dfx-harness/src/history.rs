//! The run's `--history`: read once before the first trial (the stored runs of the run's
//! hardware identity, whose healthy values give each trial's cell noise; a breach inside
//! it is `breach_within_noise`), and the finished run added at the close. A store that
//! cannot be read or written, or does not answer, is a warning: the run goes on (judging
//! breaches against their repeats' noise only), and its close is never held by it.

use std::sync::mpsc;
use std::time::Duration;

use dfx_history::{HistorySpec, RunRecord};

/// Longest wait for the store before the run goes on without it: a database that accepts
/// the connection and never answers must not hold the run.
const READ_WAIT: Duration = Duration::from_secs(30);

/// Why the history was not read before the first trial; its Display is the warning (the
/// run goes on and judges breaches against their repeats' noise only).
#[derive(Debug, thiserror::Error)]
#[error("history not read ({why}); breaches are judged against their repeats' noise only")]
pub(crate) struct NotRead {
    why: Why,
}

#[derive(Debug, thiserror::Error)]
enum Why {
    /// The store could not be opened or loaded (the first line of its error).
    #[error("{0}")]
    Store(String),
    #[error("no answer in {0:.0} s")]
    NoAnswer(f64),
    #[error("cannot start its reader: {0}")]
    Thread(#[source] std::io::Error),
}

impl From<Why> for NotRead {
    fn from(why: Why) -> Self {
        NotRead { why }
    }
}

/// Longest wait for the store to take the finished run: its write lock waits up to 60 s
/// for another writer, so this is that and a margin.
const ADD_WAIT: Duration = Duration::from_secs(120);

/// Runs `work` on its own thread and waits at most `wait` for it; `None` when it did not
/// answer in time (the thread is left to end with the process).
fn within<T: Send + 'static>(
    name: &str,
    wait: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<Option<T>, std::io::Error> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _ = tx.send(work());
        })?;
    Ok(rx.recv_timeout(wait).ok())
}

/// Adds the finished run in `dir` to the history at `spec`, waiting at most [`ADD_WAIT`];
/// a failure or no answer is a warning naming the command that adds it later.
pub(crate) fn add_run(spec: &HistorySpec, dir: &std::path::Path) {
    add_within(spec, dir, ADD_WAIT);
}

fn add_within(spec: &HistorySpec, dir: &std::path::Path, wait: Duration) {
    let (spec, path) = (spec.clone(), dir.to_path_buf());
    let added = within("dfx-history-add", wait, move || {
        dfx_history::read_run(&path).and_then(|run| Ok((dfx_history::open(&spec)?.add(&run)?, run)))
    });
    let why = match added {
        Ok(Some(Ok((outcome, run)))) => {
            let what = match outcome {
                dfx_history::AddOutcome::Added => "added",
                dfx_history::AddOutcome::Unchanged => "already stored",
                dfx_history::AddOutcome::Replaced => "replaced",
            };
            eprintln!("dfx-perf: history: {} {what}", run.run_id);
            return;
        }
        Ok(Some(Err(e))) => e.to_string(),
        Ok(None) => format!("no answer in {:.0} s", wait.as_secs_f64()),
        Err(e) => format!("cannot start its writer: {e}"),
    };
    eprintln!(
        "dfx-perf: warning: run not added to the history ({why}); add it later with `dfx-perf history add {}`",
        dir.display()
    );
}

/// The runs of `identity` in the history at `spec`, oldest first; `Err` is the warning
/// to print (and record in run.json) when the store could not be read.
pub(crate) fn read_runs(spec: &HistorySpec, identity: &str) -> Result<Vec<RunRecord>, NotRead> {
    read_within(spec, identity, READ_WAIT)
}

/// [`read_runs`] with at most `wait` for the store (its own thread; one that does not
/// answer in time is left to end with the process).
fn read_within(
    spec: &HistorySpec,
    identity: &str,
    wait: Duration,
) -> Result<Vec<RunRecord>, NotRead> {
    let (spec, id) = (spec.clone(), identity.to_string());
    let (runs, describe) = match within("dfx-history-read", wait, move || read(&spec, &id)) {
        Ok(Some(read)) => read?,
        Ok(None) => return Err(Why::NoAnswer(wait.as_secs_f64()).into()),
        Err(e) => return Err(Why::Thread(e).into()),
    };
    eprintln!(
        "dfx-perf: history: {} run(s) of {identity} in {describe}: breaches are judged against their cell's noise in them too",
        runs.len(),
    );
    Ok(runs)
}

/// Opens the store and loads `identity`'s runs; with the store's description.
fn read(spec: &HistorySpec, identity: &str) -> Result<(Vec<RunRecord>, String), NotRead> {
    let first_line = |e: dfx_history::HistoryError| {
        let text = e.to_string();
        NotRead::from(Why::Store(
            text.lines().next().unwrap_or_default().to_string(),
        ))
    };
    let mut store = dfx_history::open(spec).map_err(first_line)?;
    let runs = store.load(Some(identity)).map_err(first_line)?;
    Ok((runs, store.describe()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_that_cannot_be_opened_is_a_warning_that_names_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the SQLite file should be: it cannot be opened as a database.
        let spec = HistorySpec::Sqlite(dir.path().to_path_buf());
        let warning = read_runs(&spec, "SIM").unwrap_err().to_string();
        assert!(warning.starts_with("history not read ("), "{warning}");
        assert!(warning.ends_with("repeats' noise only"), "{warning}");
    }

    #[test]
    fn a_store_that_never_answers_is_a_warning_after_the_wait() {
        // A loopback listener that never accepts: the client connects (the kernel's
        // backlog) and then waits for a server greeting that never comes.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let spec = HistorySpec::Postgres(format!("postgres://dfx@127.0.0.1:{port}/h"));
        let warning = read_within(&spec, "SIM", Duration::from_millis(500))
            .unwrap_err()
            .to_string();
        assert!(
            warning.starts_with("history not read (no answer in "),
            "{warning}"
        );
        // Closing the listener ends the waiting reader.
        drop(listener);
    }

    #[test]
    fn a_store_that_never_answers_does_not_hold_the_close() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let spec = HistorySpec::Postgres(format!("postgres://dfx@127.0.0.1:{port}/h"));
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        add_within(&spec, dir.path(), Duration::from_millis(500));
        // Returned after the wait (generous bound: only "not held for minutes" matters).
        assert!(started.elapsed() < Duration::from_secs(60));
        drop(listener);
    }

    #[test]
    fn an_empty_store_reads_as_no_runs() {
        let dir = tempfile::tempdir().unwrap();
        let spec = HistorySpec::Sqlite(dir.path().join("h.sqlite"));
        assert_eq!(read_runs(&spec, "SIM").unwrap(), Vec::new());
    }
}
