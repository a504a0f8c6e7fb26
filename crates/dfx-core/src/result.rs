//! Result documents: upstream-compatible `result.json` content as an ordered JSON object,
//! and the template fallback written when a bench leaves nothing.

use serde_json::{Map, Value};

/// A result document: the keys `vllm bench serve --omni` writes, in its order, plus the
/// keys the runner and dfx-perf add.
pub type ResultDoc = Map<String, Value>;

/// The upstream `result_omni_template.json`, byte for byte.
pub(crate) const TEMPLATE_JSON: &str = include_str!("../assets/result_omni_template.json");

/// The fallback result: every template key with zeros and `completed: 0`, marked with
/// `result_source: "template"` and the reason.
pub fn template_fallback(reason: &str) -> ResultDoc {
    let mut doc: ResultDoc =
        serde_json::from_str(TEMPLATE_JSON).expect("embedded result template is valid JSON");
    doc.insert("completed".into(), Value::from(0));
    doc.insert("result_source".into(), Value::from("template"));
    doc.insert("fallback_reason".into(), Value::from(reason));
    doc
}

/// Reads a numeric metric from a result (`"inf"` and non-numbers give `None`).
pub fn metric(doc: &ResultDoc, key: &str) -> Option<f64> {
    doc.get(key).and_then(Value::as_f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_keeps_template_keys_and_marks_itself() {
        let doc = template_fallback("bench exited with status 1");
        assert_eq!(doc.get("completed"), Some(&Value::from(0)));
        assert_eq!(doc.get("result_source"), Some(&Value::from("template")));
        let template: ResultDoc = serde_json::from_str(TEMPLATE_JSON).unwrap();
        for key in template.keys() {
            assert!(doc.contains_key(key), "{key} missing");
        }
    }
}
