//! A run folder read into a [`RunRecord`]: dfx-report's loader for `run.json` and
//! `summary.json` (or the trials rebuilt from `trials/*/result.json` when the run died
//! before its summary), plus every numeric key of each result file, the fingerprint and
//! the hashes of the config and deploy files.

use std::collections::BTreeMap;
use std::path::Path;

use dfx_core::artefact::ConfigFileRef;
use dfx_core::baseline::ThresholdSource;
use dfx_report::run::{Outcome, Run, TrialSummary};
use serde_json::{Map, Value};

use crate::HistoryError;
use crate::model::{Fingerprint, Gpu, RunRecord, Threshold, TrialOutcome, TrialRecord};

/// Longest run id accepted (the harness writes about 30 characters).
const MAX_RUN_ID: usize = 200;

/// sha256 of `bytes`, lower-case hex (one definition, with the run folders' manifests).
pub use dfx_core::artefact::manifest::sha256_hex;

/// Reads the run folder `dir`. Errors name the folder or file and what is wrong.
pub fn read_run(dir: &Path) -> Result<RunRecord, HistoryError> {
    let run = dfx_report::load_run(dir)?;
    validate_run_id(dir, &run.run_id)?;
    let trials = run
        .trials
        .iter()
        .enumerate()
        .map(|(i, t)| trial_record(&run, i, t))
        .collect::<Result<Vec<_>, _>>()?;
    let started = run.info.started.clone();
    Ok(RunRecord {
        sort_key: sort_key(started.as_deref(), &run.run_id),
        hardware_identity: run.hardware_identity(),
        run_id: run.run_id.clone(),
        started,
        finished: run.info.finished.clone(),
        interrupted: run.info.interrupted,
        fingerprint: fingerprint(&run),
        trials,
    })
}

fn validate_run_id(dir: &Path, id: &str) -> Result<(), HistoryError> {
    let ok = !id.is_empty() && id.len() <= MAX_RUN_ID && !id.chars().any(char::is_control);
    if ok {
        return Ok(());
    }
    Err(HistoryError::BadRun {
        path: dir.to_path_buf(),
        problem: format!(
            "run id {id:?} cannot be stored (accepted: 1 to {MAX_RUN_ID} printable characters)"
        ),
    })
}

/// The UTC start time when `started` parses as RFC 3339, else the run id (which starts
/// with the local start time).
fn sort_key(started: Option<&str>, run_id: &str) -> String {
    started
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string()
        })
        .unwrap_or_else(|| run_id.to_string())
}

fn trial_record(run: &Run, seq: usize, t: &TrialSummary) -> Result<TrialRecord, HistoryError> {
    let mut metrics: BTreeMap<String, f64> = BTreeMap::new();
    if let Some(rel) = &t.result {
        let path = run.dir.join(rel);
        if path.is_file() {
            numeric_keys(&path, &mut metrics)?;
        }
    }
    for (k, v) in &t.metrics {
        if let Some(x) = v.as_f64().filter(|x| x.is_finite()) {
            metrics.insert(k.clone(), x);
        }
    }
    let repeats: BTreeMap<String, Vec<f64>> = t
        .metrics
        .keys()
        .map(|k| (k.clone(), t.repeat_values(k)))
        .filter(|(_, v)| v.len() > 1)
        .collect();
    let outcome = match t.outcome {
        Outcome::Passed => TrialOutcome::Passed,
        Outcome::Failed => TrialOutcome::Failed,
        Outcome::Ignored => TrialOutcome::Ignored,
    };
    let mut thresholds: Vec<Threshold> = t
        .thresholds
        .iter()
        .map(|th| Threshold {
            metric: th.metric.clone(),
            value: th.value,
            direction: direction_name(th.direction).into(),
            source: source_text(&th.source),
        })
        .collect();
    thresholds.sort_by(|a, b| a.metric.cmp(&b.metric));
    let interrupted = t
        .failures
        .iter()
        .chain(&t.warnings)
        .any(|f| f.contains("interrupted"));
    Ok(TrialRecord {
        name: t.name.clone(),
        seq: seq as i64,
        outcome,
        interrupted,
        unclean: dfx_report::run::unclean_reason(t),
        failures: t.failures.clone(),
        failure_class: t.failure_class.map(|c| c.as_str().to_string()),
        needs_data: t.needs_data(),
        metrics,
        repeats,
        thresholds,
    })
}

fn direction_name(d: dfx_core::baseline::Direction) -> &'static str {
    match d {
        dfx_core::baseline::Direction::HigherIsBetter => "higher_is_better",
        dfx_core::baseline::Direction::LowerIsBetter => "lower_is_better",
    }
}

/// `inline`, or `store:baselines/H100.json`.
fn source_text(source: &ThresholdSource) -> String {
    match source {
        ThresholdSource::Store { file } if !file.as_os_str().is_empty() => {
            format!("store:{}", file.display())
        }
        other => other.label().to_string(),
    }
}

/// Every finite top-level number of a result file.
fn numeric_keys(path: &Path, into: &mut BTreeMap<String, f64>) -> Result<(), HistoryError> {
    let text = dfx_core::fsutil::read_text_bounded(path, dfx_core::bounds::MAX_RUN_FILE_BYTES)
        .map_err(|e| HistoryError::Io {
            path: path.to_path_buf(),
            source: e.into_io(),
        })?;
    let doc: Map<String, Value> =
        serde_json::from_str(&text).map_err(|e| HistoryError::BadRun {
            path: path.to_path_buf(),
            problem: format!("not a JSON object: {e}"),
        })?;
    for (k, v) in doc {
        if let Some(x) = v.as_f64().filter(|x| x.is_finite()) {
            into.insert(k, x);
        }
    }
    Ok(())
}

fn fingerprint(run: &Run) -> Fingerprint {
    Fingerprint {
        dfx_perf_version: run.info.dfx_perf_version.clone(),
        git_sha: run.info.git_sha.clone(),
        hardware: run.hardware.clone(),
        sim_speed: run.info.sim_speed,
        bench_tool: run.info.bench_tool.clone(),
        hostname: run.info.hostname.clone(),
        gpu: run.info.gpu.as_ref().and_then(gpu),
        server_versions: run.info.server_versions.clone(),
        config_hashes: config_hashes(&run.info.config_files, &run.info.config_hashes),
        deploy_hashes: deploy_hashes(&run.dir),
        flags: serde_json::to_value(&run.info.flags).unwrap_or(Value::Null),
    }
}

fn gpu(v: &Value) -> Option<Gpu> {
    let o = v.as_object()?;
    Some(Gpu {
        name: o.get("name").and_then(Value::as_str).map(str::to_string),
        driver: o.get("driver").and_then(Value::as_str).map(str::to_string),
        memory_mib: o.get("memory_mib").and_then(Value::as_f64),
    })
}

/// The recorded hash of each config file (objects with `sha256`, or run.json's
/// `config_hashes` map), else the hash of the file as it is now when it can be read, else
/// nothing for that path.
fn config_hashes(
    files: &[ConfigFileRef],
    recorded_map: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for f in files {
        let path = f.path().to_string();
        let recorded = match f {
            ConfigFileRef::Described { sha256, .. } => sha256.clone(),
            ConfigFileRef::Path(_) => None,
        };
        let hash = recorded
            .or_else(|| recorded_map.get(&path).cloned())
            .or_else(|| {
                let cap = dfx_core::bounds::MAX_CONFIG_BYTES;
                let bytes = dfx_core::fsutil::read_bounded(Path::new(&path), cap).ok()?;
                Some(sha256_hex(&bytes))
            });
        if let Some(h) = hash {
            out.insert(path, h);
        }
    }
    out
}

/// sha256 of every `servers/*/deploy-*.yaml` the run wrote (the deploy files its servers
/// were started with).
fn deploy_hashes(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(servers) = std::fs::read_dir(dir.join("servers")) else {
        return out;
    };
    for server in servers.flatten() {
        let Ok(files) = std::fs::read_dir(server.path()) else {
            continue;
        };
        for f in files.flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.starts_with("deploy-")
                && name.ends_with(".yaml")
                && let Ok(bytes) =
                    dfx_core::fsutil::read_bounded(&f.path(), dfx_core::bounds::MAX_CONFIG_BYTES)
            {
                let key = format!("{}/{name}", server.file_name().to_string_lossy());
                out.insert(key, sha256_hex(&bytes));
            }
        }
    }
    out
}
