//! The upstream reference configs load unchanged, the project's perf-configs load, and the
//! plan listing of each is pinned by a snapshot (hardware H100).

mod common;

use std::path::{Path, PathBuf};

use common::{json_files, repo_root, upstream_dir};
use dfx_core::config::{LoadOptions, default_config_files, load_plan};
use dfx_core::describe::describe_plan;
use dfx_core::plan::Plan;

fn load(files: &[PathBuf], hardware: &str, baselines_dir: &Path) -> Plan {
    let opts = LoadOptions {
        files: files.to_vec(),
        hardware: hardware.into(),
        deploy_dir: repo_root().join("deploy"),
        baselines_dir: baselines_dir.to_path_buf(),
        mark: None,
    };
    load_plan(&opts).unwrap_or_else(|e| panic!("{e}"))
}

fn listing(plan: &Plan, dir: &Path, alias: &str) -> String {
    describe_plan(plan).replace(&dir.display().to_string(), alias)
}

#[test]
fn every_upstream_config_loads_unchanged_and_is_listed() {
    let dir = upstream_dir();
    let files = json_files(&dir);
    assert!(
        files.len() >= 3,
        "expected the upstream reference configs in {}",
        dir.display()
    );
    let empty = tempfile::tempdir().unwrap();
    for f in &files {
        let plan = load(std::slice::from_ref(f), "H100", empty.path());
        assert!(
            !plan.trials.is_empty(),
            "{} produced no trials",
            f.display()
        );
        let stem = f.file_stem().unwrap().to_string_lossy();
        insta::assert_snapshot!(
            format!("upstream_{stem}"),
            listing(&plan, &dir, "<upstream>")
        );
    }
    // all together: test names stay distinct, nothing collides
    let all = load(&files, "H100", empty.path());
    assert!(all.trials.iter().all(|t| t.unsupported.is_none()));
}

#[test]
fn upstream_tts_trials_match_the_documented_identity_and_thresholds() {
    let dir = upstream_dir();
    let empty = tempfile::tempdir().unwrap();
    let plan = load(&[dir.join("test_tts.json")], "H100", empty.path());
    let t = plan
        .trials
        .iter()
        .find(|t| t.name == "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c16")
        .expect("documented example trial exists");
    assert_eq!(t.step.index, 1);
    assert_eq!(t.step.num_prompts, std::num::NonZeroU64::new(128).unwrap());
    let th: Vec<(&str, f64)> = t
        .thresholds
        .items
        .iter()
        .map(|i| (i.metric.as_str(), i.value))
        .collect();
    assert_eq!(
        th,
        [
            ("median_audio_ttfp_ms", 647.1272),
            ("median_audio_rtf", 0.3642),
            ("audio_throughput", 40.3552)
        ]
    );
    // disabled quality entries are gone, and indices were assigned after dropping them
    assert!(!plan.trials.iter().any(|t| t.name.contains("quality")));
    let stress = plan
        .trials
        .iter()
        .find(|t| {
            t.name == "test_qwen3_tts_customvoice::default_voice_stress_seed-tts-text::qps2.0"
        })
        .unwrap();
    assert_eq!(stress.entry.index, 2);
    assert_eq!(stress.source.raw_entry_index, 3);
    // base 1 + 3, customvoice 1 + 3 + 1 + 1 + 3 + 1, voxtral 1 + 1 + 1
    assert_eq!(plan.trials.len(), 17);
}

#[test]
fn upstream_on_other_hardware_has_notes_not_errors() {
    let dir = upstream_dir();
    let empty = tempfile::tempdir().unwrap();
    let plan = load(&[dir.join("test_tts.json")], "A3", empty.path());
    let base: Vec<_> = plan
        .trials
        .iter()
        .filter(|t| t.test_name == "test_qwen3_tts_base")
        .collect();
    assert!(
        base.iter().all(|t| !t.thresholds.items.is_empty()),
        "A3 bucket used"
    );
    let custom = plan
        .trials
        .iter()
        .find(|t| t.test_name == "test_qwen3_tts_customvoice")
        .unwrap();
    assert!(custom.thresholds.items.is_empty());
    assert!(
        custom
            .thresholds
            .note
            .as_deref()
            .unwrap()
            .contains("no bucket for `A3`")
    );
    // one warning per entry without a bucket: 6 customvoice + 3 voxtral entries
    assert_eq!(plan.warnings.len(), 9, "{:#?}", plan.warnings);
    let h20 = load(&json_files(&dir), "H20", empty.path());
    assert!(h20.trials.iter().all(|t| t.thresholds.items.is_empty()));
}

#[test]
fn every_perf_config_loads_and_is_listed() {
    let root = repo_root();
    let files = default_config_files(&root);
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "test_qwen3_omni_async_chunk.json",
            "test_qwen3_tts_contract.json",
            "test_qwen3_tts_sglang.json",
            "test_tts.json"
        ]
    );
    let empty = tempfile::tempdir().unwrap();
    for f in &files {
        let plan = load(std::slice::from_ref(f), "H100", empty.path());
        let stem = f.file_stem().unwrap().to_string_lossy();
        insta::assert_snapshot!(
            format!("perf_configs_{stem}"),
            listing(&plan, &root, "<repo>")
        );
    }
    let all = load(&files, "H100", empty.path());
    for t in &all.trials {
        if let Some(p) = &t.entry.dataset_path {
            assert!(p.starts_with("perf-configs/datasets/"), "{}: {p}", t.name);
        }
    }
}

#[test]
fn the_repository_baseline_stores_load_with_the_perf_configs() {
    let root = repo_root();
    let files = default_config_files(&root);
    for store in json_files(&root.join("baselines")) {
        let hw = store.file_stem().unwrap().to_string_lossy().into_owned();
        let plan = load(&files, &hw, &root.join("baselines"));
        assert!(
            !plan.warnings.iter().any(|w| w.contains("matches no trial")),
            "{}: {:#?}",
            store.display(),
            plan.warnings
        );
    }
}

/// The result's `baseline` of an upstream trial: every hardware bucket of the config
/// narrowed to the step, and on a label with a store file, the store's numbers as that
/// label's bucket.
#[test]
fn result_baseline_holds_every_bucket_and_the_store_fills_the_own_one() {
    let dir = upstream_dir();
    let store = tempfile::tempdir().unwrap();
    let trial = "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c16";
    std::fs::write(
        store.path().join("H20.json"),
        serde_json::json!({ trial: {"median_audio_rtf": 0.5} }).to_string(),
    )
    .unwrap();
    let plan = load(&[dir.join("test_tts.json")], "H20", store.path());
    let t = plan.trials.iter().find(|t| t.name == trial).unwrap();
    let buckets = &t.thresholds.buckets;
    assert_eq!(
        buckets["H100"],
        serde_json::json!({"median_audio_ttfp_ms": 647.1272, "median_audio_rtf": 0.3642,
                           "audio_throughput": 40.3552})
    );
    assert_eq!(buckets["H20"], serde_json::json!({"median_audio_rtf": 0.5}));
    // Every bucket narrowed: numbers only, no per-step lists left.
    for (hw, bucket) in buckets {
        let bucket = bucket.as_object().unwrap();
        assert!(bucket.values().all(|v| v.is_number()), "{hw}: {bucket:?}");
    }
    let got: Vec<&str> = buckets.keys().map(String::as_str).collect();
    assert_eq!(got.first(), Some(&"H100"));
    assert_eq!(got.last(), Some(&"H20"));
}
