//! The keys the runner adds to every result document (upstream's, then dfx-perf's): written
//! by the runner after each trial and by the signal handler for the trial it cuts.

use dfx_core::artefact::ResultSections;
use dfx_core::result::ResultDoc;
use serde_json::{Value, json};

/// The runner's keys, like upstream (`baseline` always, `random_input_len` /
/// `random_output_len` when the entry has them, `Hardware`: empty when unknown,
/// `test_name`, `name`: the entry's `name` or `null`), then dfx-perf's (`result_source`
/// when the bench did not set it, `bench`, `trial`).
pub(crate) fn add_runner_keys(
    doc: &mut ResultDoc,
    trial: &dfx_core::plan::Trial,
    hardware: &str,
    bench: Option<&str>,
) {
    ResultSections::insert_thresholds(doc, &trial.thresholds);
    for key in ["random_input_len", "random_output_len"] {
        match trial.entry.raw.get(key) {
            Some(v) if !v.is_null() => {
                doc.insert(key.into(), v.clone());
            }
            _ => {
                doc.remove(key);
            }
        }
    }
    let hw = dfx_core::hardware::result_value(hardware);
    doc.insert("Hardware".into(), json!(hw));
    doc.insert("test_name".into(), json!(trial.test_name));
    doc.insert("name".into(), json!(trial.entry.name));
    if !doc.contains_key("result_source") {
        doc.insert("result_source".into(), json!(bench.unwrap_or("none")));
    }
    doc.insert("bench".into(), bench.map_or(Value::Null, |b| json!(b)));
    doc.insert("trial".into(), json!(trial.name));
}
