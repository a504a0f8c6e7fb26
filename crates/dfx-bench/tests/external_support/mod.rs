//! Shared helpers of the external-bench tests: the reference data folder, trials built
//! from upstream perf-config JSON, and a bench wired to the fake `vllm`.
//!
//! Reference trials come from `dfx_core::config::load_plan`; `entry_from_raw` and `steps`
//! build synthetic entries for the cases the reference configs do not cover.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dfx_bench::external::{ExternalSettings, VllmBench};
use dfx_core::bench::BenchContext;
use dfx_core::plan::{
    BenchEntry, Dialect, GoodputSpec, PercentileKeys, StepKind, SweepStep, Trial, python_float_str,
};
use serde_json::{Map, Value};

/// The upstream reference data (see `dfx_core::reference`); missing data fails the test.
pub(crate) fn reference_dir() -> PathBuf {
    dfx_core::reference::reference_dir().unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn vllm_bench_dir() -> PathBuf {
    reference_dir().join("vllm-bench")
}

pub(crate) fn upstream_config(name: &str) -> PathBuf {
    reference_dir().join("upstream/tests").join(name)
}

/// dfx-testkit's stand-in for `vllm bench serve --omni`.
pub(crate) fn fake_vllm() -> PathBuf {
    dfx_testkit::bin("dfx-fake-vllm").to_path_buf()
}

/// Trials of `file` as the suite's own loader plans them (hardware H100, the repo's
/// deploy folder, no baseline store).
pub(crate) fn trials_from_config(file: &Path) -> Vec<Trial> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let no_store = tempfile::tempdir().unwrap();
    let opts = dfx_core::config::LoadOptions {
        files: vec![file.to_path_buf()],
        hardware: "H100".into(),
        deploy_dir: repo.join("deploy"),
        baselines_dir: no_store.path().to_path_buf(),
        mark: None,
    };
    dfx_core::config::load_plan(&opts)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .trials
}

/// A `BenchEntry` from the entry as written.
pub(crate) fn entry_from_raw(
    index: usize,
    raw: Map<String, Value>,
    trust_remote_code: bool,
) -> BenchEntry {
    let s = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
    let suffix = ["task", "eval_phase", "dataset_name"]
        .iter()
        .filter_map(|k| s(k))
        .collect::<Vec<_>>()
        .join("_");
    let dialect = if raw
        .keys()
        .any(|k| k == "num-prompts" || k == "max-concurrency")
    {
        Dialect::Diffusion
    } else {
        Dialect::Omni
    };
    BenchEntry {
        index,
        suffix: if suffix.is_empty() {
            format!("case{index}")
        } else {
            suffix
        },
        dialect,
        dataset_name: s("dataset_name"),
        backend: s("backend"),
        endpoint: s("endpoint"),
        dataset_path: s("dataset_path"),
        seed_tts_locale: s("seed_tts_locale"),
        percentiles: PercentileKeys::parse(
            s("percentile-metrics").as_deref(),
            s("metric-percentiles").as_deref(),
        )
        .expect("valid percentile keys"),
        goodput: raw
            .get("goodput")
            .filter(|g| !g.is_null())
            .map(|g| GoodputSpec::parse(g).expect("valid goodput")),
        extra_body: raw.get("extra_body").and_then(Value::as_object).cloned(),
        num_warmups: raw
            .get("num_warmups")
            .and_then(Value::as_u64)
            .map(|n| n as u32),
        burstiness: raw.get("burstiness").and_then(Value::as_f64),
        seed: raw.get("seed").and_then(Value::as_u64),
        task: s("task"),
        eval_phase: s("eval_phase"),
        name: s("name"),
        trust_remote_code,
        raw,
        case: Default::default(),
        connection: None,
        repeats: None,
        capacity: None,
        load: Default::default(),
        runner: Default::default(),
        gates: Default::default(),
    }
}

fn to_list(v: Option<&Value>) -> Vec<Value> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(x) => vec![x.clone()],
    }
}

/// Upstream's sweep expansion: QPS steps first, then concurrency steps.
pub(crate) fn steps(raw: &Map<String, Value>) -> Vec<SweepStep> {
    let mut qps = to_list(raw.get("request_rate"));
    let mut conc = to_list(raw.get("max_concurrency"));
    let mut prompts = to_list(raw.get("num_prompts"));
    let len = qps.len().max(conc.len());
    if prompts.len() == 1 && len > 1 {
        prompts = vec![prompts[0].clone(); len];
    } else if len == 1 && prompts.len() > 1 {
        if qps.len() == 1 {
            qps = vec![qps[0].clone(); prompts.len()];
        }
        if conc.len() == 1 {
            conc = vec![conc[0].clone(); prompts.len()];
        }
    }
    let mut out = Vec::new();
    for (index, (r, n)) in qps.iter().zip(&prompts).enumerate() {
        let rate = r.as_f64().unwrap();
        out.push(SweepStep {
            kind: StepKind::RequestRate { request_rate: rate },
            index,
            num_prompts: std::num::NonZeroU64::new(n.as_u64().unwrap()).unwrap(),
            label: format!("qps{}", python_float_str(rate)),
        });
    }
    for (index, (c, n)) in conc.iter().zip(&prompts).enumerate() {
        let c = c.as_u64().unwrap() as u32;
        out.push(SweepStep {
            kind: StepKind::Concurrency {
                max_concurrency: std::num::NonZeroU32::new(c).unwrap(),
            },
            index,
            num_prompts: std::num::NonZeroU64::new(n.as_u64().unwrap()).unwrap(),
            label: format!("c{c}"),
        });
    }
    out
}

/// A context for `trial` with a fixed server address.
pub(crate) fn context<'a>(trial: &'a Trial, out_dir: &Path, hardware: &str) -> BenchContext<'a> {
    BenchContext {
        trial,
        base_url: "http://127.0.0.1:8091".into(),
        host: "127.0.0.1".into(),
        port: 8091,
        out_dir: out_dir.to_path_buf(),
        hardware: hardware.into(),
        judge_url: None,
        server_group: None,
    }
}

/// Settings running the fake `vllm` in `mode`, copying `result` (a reference file name),
/// recording to `record`.
pub(crate) fn fake_settings(mode: &str, result: Option<&str>, record: &Path) -> ExternalSettings {
    let mut extra_env = BTreeMap::new();
    extra_env.insert("DFX_FAKE_VLLM_MODE".to_string(), mode.to_string());
    extra_env.insert(
        "DFX_FAKE_VLLM_RECORD".to_string(),
        record.display().to_string(),
    );
    if let Some(name) = result {
        let path = vllm_bench_dir().join(name);
        extra_env.insert(
            "DFX_FAKE_VLLM_RESULT".to_string(),
            path.display().to_string(),
        );
    }
    ExternalSettings {
        vllm_bin: Some(fake_vllm()),
        extra_env,
        ..ExternalSettings::default()
    }
}

pub(crate) fn fake_bench(mode: &str, result: Option<&str>, record: &Path) -> VllmBench {
    VllmBench::new(fake_settings(mode, result, record))
}

/// One recorded invocation of the fake: its argv and environment subset.
pub(crate) fn recorded(record: &Path) -> Vec<(Vec<String>, BTreeMap<String, String>)> {
    let Ok(text) = std::fs::read_to_string(record) else {
        return Vec::new();
    };
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let argv = v["argv"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            let env = v["env"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            (argv, env)
        })
        .collect()
}

/// The first trial of the TTS reference config (Qwen3-TTS base, c1).
pub(crate) fn tts_trial() -> Trial {
    trials_from_config(&upstream_config("test_tts.json")).remove(0)
}
