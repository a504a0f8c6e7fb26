//! The run's `--history`, read once before the first trial: the stored runs of the run's
//! hardware identity, whose healthy values give each trial's cell noise (a breach inside
//! it is `breach_within_noise`). A store that cannot be read is a warning: the run goes on
//! and judges breaches against their repeats' noise only.

use std::sync::mpsc;
use std::time::Duration;

use dfx_history::{HistorySpec, RunRecord};

/// Longest wait for the store before the run goes on without it: a database that accepts
/// the connection and never answers must not hold the run.
const READ_WAIT: Duration = Duration::from_secs(30);

/// The runs of `identity` in the history at `spec`, oldest first; `Err` is the warning
/// to print (and record in run.json) when the store could not be read.
pub(crate) fn read_runs(spec: &HistorySpec, identity: &str) -> Result<Vec<RunRecord>, String> {
    read_within(spec, identity, READ_WAIT)
}

/// [`read_runs`] with at most `wait` for the store (its own thread; one that does not
/// answer in time is left to end with the process).
fn read_within(
    spec: &HistorySpec,
    identity: &str,
    wait: Duration,
) -> Result<Vec<RunRecord>, String> {
    let (tx, rx) = mpsc::channel();
    let (spec, id) = (spec.clone(), identity.to_string());
    std::thread::Builder::new()
        .name("dfx-history-read".into())
        .spawn(move || {
            let _ = tx.send(read(&spec, &id));
        })
        .map_err(|e| unread(&format!("cannot start its reader: {e}")))?;
    let (runs, describe) = match rx.recv_timeout(wait) {
        Ok(read) => read?,
        Err(_) => {
            let secs = wait.as_secs_f64();
            return Err(unread(&format!("no answer in {secs:.0} s")));
        }
    };
    eprintln!(
        "dfx-perf: history: {} run(s) of {identity} in {describe}: breaches are judged against their cell's noise in them too",
        runs.len(),
    );
    Ok(runs)
}

/// Opens the store and loads `identity`'s runs; with the store's description.
fn read(spec: &HistorySpec, identity: &str) -> Result<(Vec<RunRecord>, String), String> {
    let first_line = |e: dfx_history::HistoryError| {
        let text = e.to_string();
        unread(text.lines().next().unwrap_or_default())
    };
    let mut store = dfx_history::open(spec).map_err(first_line)?;
    let runs = store.load(Some(identity)).map_err(first_line)?;
    Ok((runs, store.describe()))
}

fn unread(why: &str) -> String {
    format!("history not read ({why}); breaches are judged against their repeats' noise only")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_that_cannot_be_opened_is_a_warning_that_names_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the SQLite file should be: it cannot be opened as a database.
        let spec = HistorySpec::Sqlite(dir.path().to_path_buf());
        let warning = read_runs(&spec, "SIM").unwrap_err();
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
        let warning = read_within(&spec, "SIM", Duration::from_millis(500)).unwrap_err();
        assert!(
            warning.starts_with("history not read (no answer in "),
            "{warning}"
        );
        // Closing the listener ends the waiting reader.
        drop(listener);
    }

    #[test]
    fn an_empty_store_reads_as_no_runs() {
        let dir = tempfile::tempdir().unwrap();
        let spec = HistorySpec::Sqlite(dir.path().join("h.sqlite"));
        assert_eq!(read_runs(&spec, "SIM").unwrap(), Vec::new());
    }
}
