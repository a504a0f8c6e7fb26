//! JSON Schemas of the run artefacts, generated from the types of this module and
//! checked into `docs/schema/` (a test keeps them current; `DFX_UPDATE_SCHEMA=1 cargo
//! test -p dfx-core schema` rewrites them).

use schemars::{JsonSchema, generate::SchemaSettings};

use super::{Manifest, ResultSections, RunInfo, Summary, VerdictFile};

/// `(file name in docs/schema/, schema)` for every artefact.
pub fn all() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("run.schema.json", of::<RunInfo>("dfx-perf run.json")),
        (
            "summary.schema.json",
            of::<Summary>("dfx-perf summary.json"),
        ),
        (
            "verdict.schema.json",
            of::<VerdictFile>("dfx-perf verdict.json"),
        ),
        (
            "manifest.schema.json",
            of::<Manifest>("dfx-perf manifest.json"),
        ),
        (
            "result-sections.schema.json",
            of::<ResultSections>("dfx-perf's sections of result.json"),
        ),
    ]
}

/// The draft 2020-12 schema of `T`, titled `title`.
fn of<T: JsonSchema>(title: &str) -> serde_json::Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>();
    schema.insert("title".into(), title.into());
    schema.to_value()
}

/// The file as checked in: pretty JSON with a final newline.
pub fn render(schema: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(schema).unwrap_or_default();
    s.push('\n');
    s
}

/// Validates every artefact of the run folder `dir` against its schema: `run.json`,
/// `summary.json`, `manifest.json` when there is one, and each `verdict.json` and `result.json` under `trials/` (repeat and
/// probe folders included). Returns how many files were checked, or every violation as
/// `<file>: <path>: <problem>`. Test support (feature `schema-check`).
#[cfg(feature = "schema-check")]
pub fn check_run_dir(dir: &std::path::Path) -> Result<usize, Vec<String>> {
    let schemas: std::collections::BTreeMap<_, _> = all().into_iter().collect();
    let mut files = vec![
        (dir.join("run.json"), "run.schema.json"),
        (dir.join("summary.json"), "summary.schema.json"),
    ];
    if dir.join(super::MANIFEST_FILE).exists() {
        files.push((dir.join(super::MANIFEST_FILE), "manifest.schema.json"));
    }
    collect_trial_files(&dir.join("trials"), &mut files);
    let mut problems = Vec::new();
    for (path, schema_name) in &files {
        let validator = match jsonschema::validator_for(&schemas[schema_name]) {
            Ok(v) => v,
            Err(e) => return Err(vec![format!("{schema_name}: not a schema: {e}")]),
        };
        let doc: serde_json::Value = match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(d) => d,
            Err(e) => {
                problems.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        for err in validator.iter_errors(&doc) {
            problems.push(format!(
                "{}: {}: {err}",
                path.display(),
                err.instance_path()
            ));
        }
    }
    if problems.is_empty() {
        Ok(files.len())
    } else {
        Err(problems)
    }
}

#[cfg(feature = "schema-check")]
fn collect_trial_files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, &'static str)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_trial_files(&path, out);
        } else if path.file_name().is_some_and(|n| n == "verdict.json") {
            out.push((path, "verdict.schema.json"));
        } else if path.file_name().is_some_and(|n| n == "result.json") {
            out.push((path, "result-sections.schema.json"));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn docs_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema")
    }

    /// The checked-in schemas are what the types generate.
    #[test]
    fn schema_files_are_current() {
        let update = std::env::var_os("DFX_UPDATE_SCHEMA").is_some();
        let mut stale = Vec::new();
        for (name, schema) in all() {
            let path = docs_dir().join(name);
            let want = render(&schema);
            if update {
                std::fs::create_dir_all(docs_dir()).unwrap();
                std::fs::write(&path, &want).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
                stale.push(name);
            }
        }
        assert!(
            stale.is_empty(),
            "docs/schema/ is stale for {stale:?}: run `DFX_UPDATE_SCHEMA=1 cargo test -p dfx-core schema`"
        );
    }
}
