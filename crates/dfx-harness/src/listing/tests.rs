use std::path::{Path, PathBuf};

use dfx_core::baseline::{Direction, ThresholdSource};
use dfx_core::config::{LoadOptions, load_plan};
use dfx_core::plan::Plan;

use super::*;
use crate::select::{BenchSlot, plan_trials};
use dfx_testkit::fake::bench::FakeBench;
use dfx_testkit::fake::server::FakeLauncher;
use dfx_testkit::trials::{concurrency_trial, rate_trial, threshold};

fn fake_benches() -> BenchSet {
    BenchSet {
        slots: vec![BenchSlot {
            label: "fake",
            bench: Ok(Box::new(FakeBench::default())),
        }],
    }
}

fn listing(plan: &Plan, assert_baseline: bool) -> String {
    let benches = fake_benches();
    let planned = plan_trials(plan, &FakeLauncher::new(), &benches);
    let all: Vec<usize> = (0..planned.len()).collect();
    let ctx = ListContext {
        benches: &benches,
        launcher: "fake",
        hardware: "H100",
        assert_baseline,
        shard: None,
    };
    render_verbose(&planned, &all, &ctx)
}

#[test]
fn verbose_listing_shows_every_decision() {
    let mut a = concurrency_trial("test_a", "clone", 8, 80);
    a.thresholds.items.push(threshold(
        "median_audio_ttfp_ms",
        226.747,
        Direction::LowerIsBetter,
    ));
    let mut store = threshold("audio_throughput", 24.2, Direction::HigherIsBetter);
    store.source = ThresholdSource::Store {
        file: PathBuf::from("/somewhere/baselines/H100.json"),
    };
    a.thresholds.items.push(store);
    a.thresholds.skipped.push("p99_e2el_ms".into());
    let mut b = rate_trial("test_a", "stress", 2.0, 20);
    b.thresholds.note = Some("no `H100` bucket in the hardware-nested baseline".into());
    b.unsupported = Some("diffusion dialect".into());
    let plan = Plan {
        trials: vec![a, b],
        warnings: vec![],
        hardware_labels: vec![],
    };
    let text = listing(&plan, false);
    let expected = "\
# 2 of 2 trials selected; 1 server configuration(s); hardware H100; server fake
test_a::clone::c8: test
    step       concurrency 8, 80 prompts (sweep index 0)
    server     #1 vllm-omni A (launcher fake)
    bench      fake
    threshold  median_audio_ttfp_ms <= 226.747 (inline)
    threshold  audio_throughput >= 24.2 (store H100.json)
    threshold  p99_e2el_ms: none (null baseline)
    marks      tts
test_a::stress::qps2.0: test
    step       request rate 2.0/s, 20 prompts (sweep index 0)
    server     #1 vllm-omni A (launcher fake)
    ignored    unsupported: diffusion dialect
    threshold  none: no `H100` bucket in the hardware-nested baseline
    marks      tts
";
    assert_eq!(text, expected);
    let strict = listing(&plan, true);
    assert!(strict.contains("    FAILS      (--assert-baseline) unsupported: diffusion dialect\n"));
}

#[test]
fn every_trial_line_is_libtest_list_compatible() {
    let plan = Plan {
        trials: vec![
            concurrency_trial("t", "a", 1, 1),
            concurrency_trial("t", "a", 2, 1),
        ],
        warnings: vec![],
        hardware_labels: vec![],
    };
    let text = listing(&plan, false);
    let names: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('#'))
        .collect();
    assert_eq!(names, ["t::a::c1: test", "t::a::c2: test"]);
}

#[test]
fn the_header_names_the_shard() {
    let plan = Plan {
        trials: vec![concurrency_trial("t", "a", 1, 1)],
        warnings: vec![],
        hardware_labels: vec![],
    };
    let benches = fake_benches();
    let planned = plan_trials(&plan, &FakeLauncher::new(), &benches);
    let record = crate::partition::ShardRecord {
        spec: "hash:2/3".into(),
        method: crate::partition::Method::Hash,
        shard: 2,
        total: 3,
        server_groups: 4,
        server_groups_in_shard: 1,
    };
    let ctx = ListContext {
        benches: &benches,
        launcher: "fake",
        hardware: "H100",
        assert_baseline: false,
        shard: Some(&record),
    };
    let text = render_verbose(&planned, &[0], &ctx);
    assert!(
        text.starts_with(
            "# 1 of 1 trials selected; 1 server configuration(s); hardware H100; server fake; shard hash:2/3 (1 of 4 selected server groups)\n"
        ),
        "{text}"
    );
}

// ---- snapshots of real configs (need the config loader of dfx-core) ----

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The upstream reference data (see `dfx_core::reference`); missing data fails the test.
fn reference_dir() -> PathBuf {
    dfx_core::reference::reference_dir().unwrap_or_else(|e| panic!("{e}"))
}

fn load(files: Vec<PathBuf>, deploy_dir: PathBuf, baselines_dir: PathBuf) -> Plan {
    let opts = LoadOptions {
        files,
        hardware: "H100".into(),
        deploy_dir,
        baselines_dir,
        mark: None,
    };
    load_plan(&opts).unwrap_or_else(|e| panic!("{e}"))
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no *.json in {}", dir.display());
    files
}

#[test]
fn snapshot_upstream_reference_configs() {
    let reference = reference_dir();
    let no_store = tempfile::tempdir().unwrap();
    for file in json_files(&reference.join("upstream/tests")) {
        let plan = load(
            vec![file.clone()],
            reference.join("upstream/deploy"),
            no_store.path().to_path_buf(),
        );
        assert!(!plan.trials.is_empty(), "{} has no trials", file.display());
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        insta::assert_snapshot!(format!("upstream_{stem}"), listing(&plan, false));
    }
}

/// Today's upstream forms (2026): every config loads unchanged and lists its trials,
/// runnable or ignored with the reason, thresholds with regression tolerances applied.
#[test]
fn snapshot_upstream_2026_configs() {
    let reference = reference_dir();
    let no_store = tempfile::tempdir().unwrap();
    for dir in ["upstream/2026/perf/tests", "upstream/2026/stability/tests"] {
        for file in json_files(&reference.join(dir)) {
            let mut opts = LoadOptions {
                files: vec![file.clone()],
                hardware: "H200".into(),
                deploy_dir: reference.join("upstream/deploy"),
                baselines_dir: no_store.path().to_path_buf(),
                mark: None,
            };
            let plan = load_plan(&opts).unwrap_or_else(|e| panic!("{e}"));
            assert!(!plan.trials.is_empty(), "{} has no trials", file.display());
            let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
            let kind = dir.split('/').nth(2).unwrap_or("perf");
            insta::assert_snapshot!(
                format!("upstream_2026_{kind}_{stem}"),
                listing(&plan, false)
            );
            // another runner label leaves the H200 bucket unused, said in the listing
            opts.hardware = "B200".into();
            load_plan(&opts).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn snapshot_perf_configs() {
    let root = repo_root();
    let plan = load(
        json_files(&root.join("perf-configs")),
        root.join("deploy"),
        root.join("baselines"),
    );
    assert!(!plan.trials.is_empty());
    insta::assert_snapshot!("perf_configs", listing(&plan, false));
}

#[test]
fn a_capacity_trial_lists_its_search_not_a_sweep_step() {
    let mut t = rate_trial("test_a", "cap", 1.0, 64);
    let mut e = (*t.entry).clone();
    e.capacity = Some(dfx_core::plan::CapacitySpec {
        max_p99_ttfp_ms: 500.0,
        min_continuity: 0.95,
        start_rate: 2.0,
        min_rate: 0.25,
        max_rate: 128.0,
        tolerance: 0.1,
        boundary_repeats: std::num::NonZeroU32::new(3).unwrap(),
        max_probes: 24,
    });
    t.entry = std::sync::Arc::new(e);
    assert_eq!(
        step_line(&t),
        "capacity search from 2.0/s (0.25–128.0/s), 64 prompts a probe, at most 24 probes"
    );
}
