//! `baselines/<hardware>.json`: dfx-perf's own thresholds, keyed by trial name and written
//! by recalibration. Format (see `baselines/README.md`):
//!
//! ```json
//! { "<trial name>": { "<metric>": <number>, ... }, ... }
//! ```
//!
//! Where the store has a value for a trial's metric it takes precedence over the inline
//! config value ([`ThresholdSource::Store`]); metrics only in the store are added.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Threshold, ThresholdSource, Thresholds};
use crate::diag::{ConfigError, json_type};
use crate::fsutil;
use crate::metrics::{bound_accepted, bound_problem, direction_of, unknown_metric_hint};

/// A loaded baseline store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Store {
    /// The file it came from (or will be written to).
    pub file: PathBuf,
    /// Trial name → metric → threshold.
    pub entries: BTreeMap<String, BTreeMap<String, f64>>,
}

/// `<dir>/<hardware>.json`, with the label made safe as a file name.
pub fn store_path(dir: &Path, hardware: &str) -> PathBuf {
    dir.join(format!("{}.json", fsutil::sanitize_component(hardware)))
}

/// Loads the store for `hardware`; `Ok(None)` when the file does not exist. Every problem
/// (invalid JSON, wrong shape, unknown metric, non-number) is an error naming the file.
pub fn load_store(dir: &Path, hardware: &str) -> Result<Option<Store>, Vec<ConfigError>> {
    let file = store_path(dir, hardware);
    let text = match fsutil::read_text_bounded(&file, crate::bounds::MAX_CONFIG_BYTES) {
        Ok(t) => t,
        Err(fsutil::ReadError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(None);
        }
        Err(e) => {
            return Err(vec![ConfigError::in_file(
                &file,
                format!("cannot read baseline store: {}", e.problem()),
            )]);
        }
    };
    parse_store(&file, &text).map(Some)
}

/// Parses store text (see the module docs for the format).
pub fn parse_store(file: &Path, text: &str) -> Result<Store, Vec<ConfigError>> {
    let accepted = r#"{"<trial name>": {"<metric>": <number>, ...}, ...}"#;
    let root: Value = serde_json::from_str(text).map_err(|e| {
        vec![ConfigError::in_file(
            file,
            format!(
                "invalid JSON at line {}, column {}: {e}",
                e.line(),
                e.column()
            ),
        )]
    })?;
    let Value::Object(root) = root else {
        return Err(vec![
            ConfigError::in_file(
                file,
                format!("top level must be an object, got {}", json_type(&root)),
            )
            .with_accepted(accepted),
        ]);
    };
    let mut errs = Vec::new();
    let mut entries = BTreeMap::new();
    for (trial, metrics) in root {
        let Value::Object(metrics) = metrics else {
            errs.push(
                ConfigError::in_file(file, format!("wrong type: got {}", json_type(&metrics)))
                    .with_key(trial)
                    .with_accepted(accepted),
            );
            continue;
        };
        let mut values = BTreeMap::new();
        for (metric, v) in metrics {
            let key = format!("{trial}.{metric}");
            if direction_of(&metric).is_none() {
                errs.push(
                    ConfigError::in_file(file, format!("unknown metric `{metric}`"))
                        .with_key(key)
                        .with_accepted(unknown_metric_hint(&metric)),
                );
            } else if let Some(x) = v.as_f64() {
                if let Some(why) = bound_problem(&metric, x) {
                    errs.push(
                        ConfigError::in_file(file, why)
                            .with_key(key)
                            .with_accepted(bound_accepted(&metric)),
                    );
                    continue;
                }
                values.insert(metric, x);
            } else {
                errs.push(
                    ConfigError::in_file(file, format!("wrong type: got {}", json_type(&v)))
                        .with_key(key)
                        .with_accepted("a number"),
                );
            }
        }
        entries.insert(trial, values);
    }
    if errs.is_empty() {
        Ok(Store {
            file: file.to_path_buf(),
            entries,
        })
    } else {
        Err(errs)
    }
}

impl Store {
    /// Applies this store's values for `trial` over `thresholds` (per metric); returns
    /// whether the store had an entry for the trial.
    pub fn apply(&self, trial: &str, thresholds: &mut Thresholds) -> bool {
        let Some(values) = self.entries.get(trial) else {
            return false;
        };
        let source = ThresholdSource::Store {
            file: self.file.clone(),
        };
        for (metric, &value) in values {
            thresholds.skipped.retain(|m| m != metric);
            match thresholds.items.iter_mut().find(|t| t.metric == *metric) {
                Some(t) => {
                    t.value = value;
                    t.source = source.clone();
                }
                None => thresholds.items.push(Threshold {
                    metric: metric.clone(),
                    value,
                    direction: direction_of(metric).expect("store metrics were validated"),
                    source: source.clone(),
                }),
            }
        }
        if !values.is_empty() {
            thresholds.note = None;
        }
        true
    }

    /// The store as JSON (trial names and metrics sorted, for clean diffs).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(&self.entries).expect("string keys and numbers serialise")
    }

    /// Writes the store to [`Store::file`] atomically.
    pub fn write(&self) -> std::io::Result<()> {
        fsutil::write_json_atomic(&self.file, &self.to_value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::Direction;

    #[test]
    fn missing_file_is_no_store() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load_store(dir.path(), "H100").unwrap(), None);
        assert_eq!(store_path(dir.path(), "../x"), dir.path().join("_._x.json"));
    }

    #[test]
    fn round_trip_and_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store {
            file: store_path(dir.path(), "H100"),
            entries: BTreeMap::from([(
                "t::s::c1".to_string(),
                BTreeMap::from([
                    ("median_audio_rtf".to_string(), 0.2),
                    ("audio_throughput".to_string(), 10.0),
                ]),
            )]),
        };
        store.write().unwrap();
        let loaded = load_store(dir.path(), "H100").unwrap().unwrap();
        assert_eq!(loaded, store);

        let mut th = Thresholds {
            items: vec![Threshold {
                metric: "median_audio_rtf".into(),
                value: 0.1591,
                direction: Direction::LowerIsBetter,
                source: ThresholdSource::Inline,
            }],
            skipped: vec!["audio_throughput".into()],
            ..Thresholds::default()
        };
        assert!(!loaded.apply("other", &mut th));
        assert!(loaded.apply("t::s::c1", &mut th));
        assert_eq!(th.items.len(), 2);
        assert_eq!(th.items[0].value, 0.2);
        assert_eq!(
            th.items[0].source,
            ThresholdSource::Store {
                file: store.file.clone()
            }
        );
        assert_eq!(th.items[1].metric, "audio_throughput");
        assert_eq!(th.items[1].direction, Direction::HigherIsBetter);
        assert!(th.skipped.is_empty());
    }

    #[test]
    fn bad_stores_are_config_errors_naming_the_file() {
        let f = Path::new("baselines/H100.json");
        let msgs = |text: &str| -> Vec<String> {
            parse_store(f, text)
                .unwrap_err()
                .iter()
                .map(|e| e.to_string())
                .collect()
        };
        let m = msgs("{\n  \"a\": ");
        assert!(
            m[0].starts_with("baselines/H100.json: invalid JSON at line 2"),
            "{m:?}"
        );
        let m = msgs("[1]");
        assert!(m[0].contains("top level must be an object"), "{m:?}");
        let m = msgs(r#"{"t::a::c1": {"bogus_metric": 1, "mean_e2el_ms": "fast"}, "t::b::c1": 3}"#);
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(m[0].contains("key `t::a::c1.bogus_metric`") && m[0].contains("unknown metric"));
        assert!(m[1].contains("key `t::a::c1.mean_e2el_ms`") && m[1].contains("a string"));
        assert!(m[2].contains("key `t::b::c1`") && m[2].contains("a number"));
    }
}
