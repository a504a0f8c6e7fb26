//! Facts for a run's fingerprint that only the machine and the servers know: the GPUs
//! (`nvidia-smi`, at the start) and the versions the servers report on `GET /version`
//! (after each start, collected until the run closes). Both end up in `run.json`, where
//! the history reads them.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

/// How long a server gets to answer `GET /version`.
const VERSION_TIMEOUT: Duration = Duration::from_secs(2);
/// The largest `/version` answer read.
const VERSION_MAX_BYTES: usize = 64 * 1024;

static VERSIONS: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

/// GPU facts for `run.json` (`{"name", "driver", "memory_mib", "count"}`), when
/// `nvidia-smi` answers.
pub(crate) fn gpu() -> Option<Value> {
    dfx_core::hardware::query_gpu_facts().and_then(|g| serde_json::to_value(g).ok())
}

/// Asks a server that just became ready for its versions and remembers them. Silent on
/// any failure: a server without `/version` simply tells nothing.
pub(crate) fn note_server(host: &str, port: u16) {
    let Some(doc) = dfx_server::probe::http_get_json(
        host,
        port,
        "/version",
        VERSION_TIMEOUT,
        VERSION_MAX_BYTES,
    ) else {
        return;
    };
    let found = versions_from(&doc);
    let mut all = VERSIONS.lock().unwrap_or_else(|p| p.into_inner());
    all.extend(found);
}

/// Every version the servers of this run told so far.
pub(crate) fn server_versions() -> BTreeMap<String, String> {
    VERSIONS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// vLLM's `/version` is `{"version": "0.30.0"}` (the vllm package); other keys ending in
/// `version` (`vllm_omni_version`) name their package; a `server` key names the package
/// of `version` (the simulator says `dfx-perf-sim`). Non-string values are skipped.
pub(crate) fn versions_from(doc: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(o) = doc.as_object() else {
        return out;
    };
    let owner = o.get("server").and_then(Value::as_str).unwrap_or("vllm");
    for (k, v) in o {
        let Some(v) = v.as_str().filter(|v| !v.is_empty() && v.len() <= 200) else {
            continue;
        };
        let name = if k == "version" {
            owner.to_string()
        } else if let Some(pkg) = k.strip_suffix("_version") {
            pkg.to_string()
        } else {
            continue;
        };
        out.insert(name, v.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn versions_are_named_by_package() {
        let v = versions_from(&json!({"version": "0.30.0"}));
        assert_eq!(v, BTreeMap::from([("vllm".into(), "0.30.0".into())]));
        let v = versions_from(&json!({"version": "0.1.0", "server": "dfx-perf-sim"}));
        assert_eq!(v, BTreeMap::from([("dfx-perf-sim".into(), "0.1.0".into())]));
        let v = versions_from(&json!({"version": "0.30.0", "vllm_omni_version": "0.30.1", "n": 3}));
        assert_eq!(v.get("vllm_omni").map(String::as_str), Some("0.30.1"));
        assert_eq!(v.len(), 2);
        assert!(versions_from(&json!([1, 2])).is_empty());
    }
}
