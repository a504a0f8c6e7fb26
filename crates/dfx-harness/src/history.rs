//! The run's `--history`, read once before the first trial: the stored runs of the run's
//! hardware identity, whose healthy values give each trial's cell noise (a breach inside
//! it is `breach_within_noise`). A store that cannot be read is a warning: the run goes on
//! and judges breaches against their repeats' noise only.

use dfx_history::{HistorySpec, RunRecord};

/// The runs of `identity` in the history at `spec`, oldest first; `Err` is the warning
/// to print (and record in run.json) when the store could not be read.
pub(crate) fn read_runs(spec: &HistorySpec, identity: &str) -> Result<Vec<RunRecord>, String> {
    let mut store = dfx_history::open(spec).map_err(|e| unread(&e))?;
    let runs = store.load(Some(identity)).map_err(|e| unread(&e))?;
    eprintln!(
        "dfx-perf: history: {} run(s) of {identity} in {}: breaches are judged against their cell's noise in them too",
        runs.len(),
        store.describe()
    );
    Ok(runs)
}

fn unread(e: &dfx_history::HistoryError) -> String {
    let first = e.to_string();
    let first = first.lines().next().unwrap_or_default().to_string();
    format!("history not read ({first}); breaches are judged against their repeats' noise only")
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
    fn an_empty_store_reads_as_no_runs() {
        let dir = tempfile::tempdir().unwrap();
        let spec = HistorySpec::Sqlite(dir.path().join("h.sqlite"));
        assert_eq!(read_runs(&spec, "SIM").unwrap(), Vec::new());
    }
}
