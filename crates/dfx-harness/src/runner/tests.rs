use std::sync::Arc;
use std::time::Duration;

use chrono::TimeZone;
use dfx_core::baseline::Direction;
use dfx_core::bench::{Bench, BenchKind, BenchOutcome, Unsupported};
use dfx_core::plan::{BenchEntry, Plan, Trial};
use serde_json::{Value, json};

use super::*;
use crate::select::{BenchSlot, plan_trials};
use dfx_testkit::fake::bench::{FakeBench, FakeKnobs};
use dfx_testkit::fake::server::{FakeEvent, FakeLauncher, FakeState};
use dfx_testkit::trials::{StubBench, concurrency_trial, spec, threshold};

pub(super) struct Fixture {
    pub(super) session: Session,
    state: Arc<FakeState>,
    _dir: tempfile::TempDir,
}

pub(super) fn fixture(
    trials: Vec<Trial>,
    bench: Box<dyn Bench + Send>,
    assert_baseline: bool,
) -> Fixture {
    fixture_hw(trials, bench, assert_baseline, "H100")
}

fn fixture_hw(
    trials: Vec<Trial>,
    bench: Box<dyn Bench + Send>,
    assert_baseline: bool,
    hw: &str,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let launcher = FakeLauncher::new();
    let state = launcher.state();
    let benches = BenchSet {
        slots: vec![BenchSlot {
            label: "fake",
            bench: Ok(bench),
        }],
    };
    let plan = Plan {
        trials,
        warnings: vec![],
        hardware_labels: vec![],
    };
    let planned = plan_trials(&plan, &launcher, &benches);
    let now = chrono::Local.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let run = RunDir::create(dir.path(), hw, now).unwrap();
    let n = planned.len();
    let session = Session {
        pool: ServerPool::new(
            Box::new(launcher),
            run.servers_dir(),
            Duration::from_secs(5),
        ),
        run,
        benches,
        planned,
        hardware: hw.into(),
        assert_baseline,
        require_thresholds: false,
        progress: crate::progress::Progress::shared(vec![None; n]),
        upstream_results_dir: None,
        gpu_absent_said: false,
        quality_cmd: None,
        quality_said: false,
        ia_counts: Default::default(),
        trial_started: chrono::Local::now(),
        repeats: None,
        seed: 0,
        gpu_hour_price: None,
        history: Vec::new(),
    };
    Fixture {
        session,
        state,
        _dir: dir,
    }
}

pub(super) fn fake(knobs: FakeKnobs) -> Box<dyn Bench + Send> {
    Box::new(FakeBench { knobs })
}

pub(super) fn result_json(f: &Fixture, idx: usize) -> serde_json::Map<String, Value> {
    let path = f
        .session
        .run
        .trial_dir(&f.session.planned[idx].dir_name)
        .join("result.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

pub(super) fn entry(f: &Fixture, idx: usize) -> SummaryEntry {
    f.session.entry(idx).expect("summary entry recorded")
}

#[test]
fn result_json_carries_the_runner_keys_and_dfx_keys() {
    let mut t = concurrency_trial("test_a", "clone", 1, 4);
    let mut e: BenchEntry = (*t.entry).clone();
    e.raw.insert("random_input_len".into(), json!(100));
    e.raw.insert("random_output_len".into(), Value::Null);
    t.entry = Arc::new(e);
    t.thresholds.items.push(threshold(
        "median_audio_ttfp_ms",
        1000.0,
        Direction::LowerIsBetter,
    ));
    let buckets =
        json!({"H100": {"median_audio_ttfp_ms": 1000.0}, "A3": {"median_audio_ttfp_ms": 900.0}});
    t.thresholds.buckets = buckets.as_object().unwrap().clone();
    let mut f = fixture(vec![t], fake(FakeKnobs::default()), true);
    let out = f.session.run_trial(0);
    assert!(matches!(out, Ok(Ran::Passed)), "{out:?}");
    let doc = result_json(&f, 0);
    assert_eq!(doc["baseline"], buckets);
    let sections: dfx_core::artefact::ResultSections =
        serde_json::from_value(Value::Object(doc.clone())).unwrap();
    assert_eq!(sections.thresholds().len(), 1);
    assert_eq!(doc["random_input_len"], json!(100));
    assert!(!doc.contains_key("random_output_len"));
    assert_eq!(doc["Hardware"], json!("H100"));
    assert_eq!(doc["result_source"], json!("fake"));
    assert_eq!(doc["bench"], json!("fake"));
    assert_eq!(doc["trial"], json!("test_a::clone::c1"));
    assert_eq!(doc["test_name"], json!("test_a"));
    assert_eq!(doc["name"], Value::Null);
    assert_eq!(doc["verdict"]["passed"], json!(true));
    assert_eq!(doc["completed"], json!(4));
    let dir = f.session.run.trial_dir(&f.session.planned[0].dir_name);
    for file in ["verdict.json", "records.jsonl", "bench.log"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let e = entry(&f, 0);
    assert_eq!(e.outcome, Outcome::Passed);
    assert_eq!(
        e.result.as_deref(),
        Some("trials/test_a__clone__c1/result.json")
    );
    assert_eq!(e.server.as_deref(), Some("servers/01-test_a"));
    assert_eq!(e.metrics["completed"], json!(4));
    assert!(e.metrics.contains_key("median_audio_ttfp_ms"));
}

#[test]
fn unknown_hardware_is_written_as_an_empty_string_like_upstream() {
    let mut f = fixture_hw(
        vec![concurrency_trial("t", "s", 1, 2)],
        fake(FakeKnobs::default()),
        false,
        "na",
    );
    let _ = f.session.run_trial(0);
    assert_eq!(result_json(&f, 0)["Hardware"], json!(""));
    assert_eq!(result_json(&f, 0)["baseline"], json!({}));
}

#[test]
fn missing_result_writes_the_template_fallback_and_says_why() {
    let knobs = FakeKnobs {
        no_result: true,
        ..FakeKnobs::default()
    };
    let mut f = fixture(vec![concurrency_trial("t", "s", 1, 2)], fake(knobs), false);
    let msg = f.session.run_trial(0).unwrap_err().to_string();
    assert!(msg.contains("left no result (exit status 1)"), "{msg}");
    assert!(
        msg.contains("DFX_FAKE_NO_RESULT"),
        "log tail missing: {msg}"
    );
    let doc = result_json(&f, 0);
    assert_eq!(doc["result_source"], json!("template"));
    assert_eq!(doc["completed"], json!(0));
    assert_eq!(doc["trial"], json!("t::s::c1"));
    assert_eq!(entry(&f, 0).outcome, Outcome::Failed);
    assert_eq!(entry(&f, 0).result_source.as_deref(), Some("template"));
}

#[test]
fn unrunnable_trials_are_ignored_on_a_plain_run_and_fail_under_assert_baseline() {
    let mut t = concurrency_trial("t", "s", 1, 2);
    t.unsupported = Some("diffusion dialect".into());
    let mut plain = fixture(vec![t.clone()], fake(FakeKnobs::default()), false);
    match plain.session.run_trial(0) {
        Ok(Ran::Ignored(reason)) => assert_eq!(reason, "unsupported: diffusion dialect"),
        other => panic!("{other:?}"),
    }
    assert_eq!(entry(&plain, 0).outcome, Outcome::Ignored);
    assert!(
        plain.state.events().is_empty(),
        "no server for an ignored trial"
    );

    let mut strict = fixture(vec![t], fake(FakeKnobs::default()), true);
    let msg = strict.session.run_trial(0).unwrap_err().to_string();
    assert!(
        msg.contains("--assert-baseline") && msg.contains("diffusion dialect"),
        "{msg}"
    );
    assert_eq!(result_json(&strict, 0)["result_source"], json!("template"));
    assert!(strict.state.events().is_empty());
}

#[test]
fn breaches_warn_without_assert_baseline_and_fail_with_it() {
    let mut t = concurrency_trial("t", "s", 1, 3);
    // The fake's median TTFP at c=1 is 51 ms.
    t.thresholds.items.push(threshold(
        "median_audio_ttfp_ms",
        40.0,
        Direction::LowerIsBetter,
    ));
    let mut lenient = fixture(vec![t.clone()], fake(FakeKnobs::default()), false);
    assert!(matches!(lenient.session.run_trial(0), Ok(Ran::Passed)));
    let e = entry(&lenient, 0);
    assert_eq!(e.breaches.len(), 1);
    assert!(!e.warnings.is_empty());
    assert_eq!(
        result_json(&lenient, 0)["verdict"]["breaches"][0]["metric"],
        json!("median_audio_ttfp_ms")
    );

    let mut strict = fixture(vec![t], fake(FakeKnobs::default()), true);
    let msg = strict.session.run_trial(0).unwrap_err().to_string();
    assert!(
        msg.contains("median_audio_ttfp_ms 51 > 40 (+27.5 %)"),
        "{msg}"
    );
    assert_eq!(entry(&strict, 0).outcome, Outcome::Failed);
}

#[test]
fn failed_requests_fail_the_trial_with_the_first_errors() {
    let knobs = FakeKnobs {
        fail_requests: 2,
        ..FakeKnobs::default()
    };
    let mut f = fixture(vec![concurrency_trial("t", "s", 2, 5)], fake(knobs), false);
    let msg = f.session.run_trial(0).unwrap_err().to_string();
    assert!(msg.contains('3') && msg.contains('5'), "{msg}");
    assert!(msg.contains("HTTP 500: fake failure"), "{msg}");
    assert_eq!(result_json(&f, 0)["completed"], json!(3));
}

/// A bench that "kills" the server while it runs.
struct KillingBench(Arc<FakeState>);

impl Bench for KillingBench {
    fn kind(&self) -> BenchKind {
        BenchKind::Native
    }
    fn supports(&self, _e: &BenchEntry) -> Result<(), Unsupported> {
        Ok(())
    }
    fn run(&self, ctx: &dfx_core::bench::BenchContext<'_>) -> BenchOutcome {
        self.0.kill_latest();
        FakeBench::default().run(ctx)
    }
}

#[test]
fn a_server_dying_during_the_benchmark_fails_the_trial_and_is_restarted_for_the_next() {
    let trials = vec![
        concurrency_trial("t", "s", 1, 2),
        concurrency_trial("t", "s", 2, 2),
    ];
    let mut f = fixture(trials, fake(FakeKnobs::default()), false);
    f.session.benches.slots[0].bench = Ok(Box::new(KillingBench(f.state.clone())));
    let msg = f.session.run_trial(0).unwrap_err().to_string();
    assert!(
        msg.contains("server exited with exit status 137 during the benchmark"),
        "{msg}"
    );
    assert!(msg.contains("server log tail"), "{msg}");
    let _ = f.session.run_trial(1);
    f.session.pool.shutdown();
    assert_eq!(
        f.state.events(),
        [
            FakeEvent::Start("A".into()),
            FakeEvent::Stop("A".into()),
            FakeEvent::Start("A".into()),
            FakeEvent::Stop("A".into())
        ]
    );
    assert_eq!(entry(&f, 1).server.as_deref(), Some("servers/02-t"));
}

#[test]
fn a_panicking_bench_fails_only_its_trial() {
    let mut stub = StubBench::accepting();
    stub.panic_on_run = true;
    let mut f = fixture(
        vec![concurrency_trial("t", "s", 1, 2)],
        Box::new(stub),
        false,
    );
    let msg = f.session.run_trial(0).unwrap_err().to_string();
    assert!(msg.contains("trial panicked: stub bench exploded"), "{msg}");
    assert_eq!(entry(&f, 0).outcome, Outcome::Failed);
    // the trial folder still gets a (template) result and a verdict saying why
    let rel = entry(&f, 0).result.expect("a result path");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f.session.run.path.join(&rel)).unwrap())
            .unwrap();
    assert_eq!(doc["result_source"], "template");
    assert_eq!(doc["completed"], 0);
    let failures = doc["verdict"]["failures"].to_string();
    assert!(failures.contains("stub bench exploded"), "{failures}");
    f.session.pool.shutdown();
    assert_eq!(
        f.state.events(),
        [FakeEvent::Start("A".into()), FakeEvent::Stop("A".into())]
    );
}

#[test]
fn a_server_that_cannot_start_fails_its_trials_without_retrying() {
    let mut a = concurrency_trial("t", "s", 1, 2);
    a.server = Arc::new(spec("BROKEN"));
    let mut b = concurrency_trial("t", "s", 2, 2);
    b.server = a.server.clone();
    let mut f = fixture(vec![a, b], fake(FakeKnobs::default()), false);
    f.state.fail_starts_of("BROKEN");
    let first = f.session.run_trial(0).unwrap_err().to_string();
    assert!(
        first.contains("server failed to start") && first.contains("before becoming ready"),
        "{first}"
    );
    let second = f.session.run_trial(1).unwrap_err().to_string();
    assert!(second.contains("not retried"), "{second}");
    assert_eq!(f.session.pool.starts(), 1);
    assert_eq!(result_json(&f, 1)["result_source"], json!("template"));
}

#[test]
fn reuse_order_across_trials_is_recorded_in_the_summary() {
    let mk = |c: u32, model: &str| {
        let mut t = concurrency_trial(&format!("test_{model}"), "s", c, 1);
        t.server = Arc::new(spec(model));
        t
    };
    let trials = vec![mk(1, "A"), mk(2, "A"), mk(1, "B"), mk(4, "A")];
    let mut f = fixture(trials, fake(FakeKnobs::default()), false);
    for i in 0..4 {
        let _ = f.session.run_trial(i);
    }
    f.session.pool.shutdown();
    let servers: Vec<_> = (0..4)
        .map(|i| {
            (
                entry(&f, i).server.clone().unwrap(),
                entry(&f, i).server_started.unwrap(),
            )
        })
        .collect();
    assert_eq!(
        servers,
        [
            ("servers/01-test_A".to_string(), true),
            ("servers/01-test_A".to_string(), false),
            ("servers/02-test_B".to_string(), true),
            ("servers/03-test_A".to_string(), true),
        ]
    );
    let starts = f
        .state
        .events()
        .iter()
        .filter(|e| matches!(e, FakeEvent::Start(_)))
        .count();
    assert_eq!(starts, 3);
}

#[test]
fn after_an_interruption_the_main_thread_records_nothing() {
    let trials = vec![
        concurrency_trial("t", "s", 1, 2),
        concurrency_trial("t", "s", 2, 2),
    ];
    let mut f = fixture(trials, fake(FakeKnobs::default()), false);
    assert!(matches!(f.session.run_trial(0), Ok(Ran::Passed)));
    crate::progress::lock(&f.session.progress).frozen = true;
    // The trial still runs (the handler is about to exit the process), but neither its
    // entry nor its "running" state reach the summary the handler writes.
    let _ = f.session.run_trial(1);
    assert!(f.session.entry(1).is_none());
    let progress = crate::progress::lock(&f.session.progress);
    assert!(progress.current.is_none());
    assert!(progress.entries[0].is_some());
}

/// Upstream's `_parse_from_filename` (tools/nightly), as docs/research/upstream-2026.md §7
/// describes it: prefix `result_test_` stripped, split on `_`, from the right: timestamp,
/// `out…`, `in…`, num_prompts, flow (`max_concurrency` only when an integer), dataset
/// (kept only for `random` / `random-mm`), the rest joined = test_name.
fn parse_upstream_name(file: &str) -> Option<serde_json::Map<String, Value>> {
    let core = file.strip_suffix(".json")?.strip_prefix("result_test_")?;
    let parts: Vec<&str> = core.split('_').collect();
    if parts.len() < 5 {
        return None;
    }
    let mut out = serde_json::Map::new();
    let mut idx = parts.len() - 1;
    if parts[idx].len() >= 15 {
        out.insert("date".into(), json!(parts[idx]));
    }
    idx -= 1;
    if let Some(ro) = parts[idx].strip_prefix("out") {
        out.insert("random_output_len".into(), json!(ro));
        idx -= 1;
        if let Some(ri) = parts[idx].strip_prefix("in") {
            out.insert("random_input_len".into(), json!(ri));
            idx -= 1;
        }
    }
    if idx < 3 {
        return None;
    }
    out.insert("num_prompts".into(), json!(parts[idx].parse::<u64>().ok()?));
    if let Ok(c) = parts[idx - 1].parse::<u64>() {
        out.insert("max_concurrency".into(), json!(c));
    }
    out.insert("flow".into(), json!(parts[idx - 1]));
    let dataset = parts[idx - 2];
    if dataset == "random" || dataset == "random-mm" {
        out.insert("dataset_name".into(), json!(dataset));
    }
    out.insert("test_name".into(), json!(parts[..idx - 2].join("_")));
    Some(out)
}

#[test]
fn upstream_folder_holds_every_trial_under_upstreams_file_name() {
    let mut named = concurrency_trial("test_qwen3_tts", "fast", 4, 8);
    let mut e: BenchEntry = (*named.entry).clone();
    e.name = Some("fast".into());
    e.dataset_name = Some("random".into());
    e.raw.insert("random_input_len".into(), json!(100));
    named.entry = Arc::new(e);
    let trials = vec![
        concurrency_trial("test_qwen3_tts", "clone", 1, 4),
        concurrency_trial("test_qwen3_tts", "clone", 2, 6),
        dfx_testkit::trials::rate_trial("test_qwen3_tts", "clone", 0.5, 4),
        named,
    ];
    let mut trials = trials;
    let buckets = json!({"H100": {"mean_ttft_ms": 10.0}, "H20": {"mean_ttft_ms": 12.5}});
    trials[1].thresholds.buckets = buckets.as_object().unwrap().clone();
    let mut f = fixture_hw(trials.clone(), fake(FakeKnobs::default()), false, "H20");
    let flat = tempfile::tempdir().unwrap();
    f.session.upstream_results_dir = Some(flat.path().join("nightly"));
    for i in 0..trials.len() {
        f.session.run_trial(i).unwrap();
    }
    let dir = f.session.run.path.join("upstream");
    // --upstream-results-dir gets the same files
    let names = |d: &std::path::Path| -> std::collections::BTreeSet<String> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(names(&dir), names(&flat.path().join("nightly")));
    type Doc = serde_json::Map<String, Value>;
    let mut parsed: Vec<(String, Doc, Doc)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let fields = parse_upstream_name(&name).unwrap_or_else(|| panic!("{name}"));
            let doc = serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap();
            (name, fields, doc)
        })
        .collect();
    assert_eq!(parsed.len(), trials.len(), "{parsed:?}");
    for t in &trials {
        let at = parsed
            .iter()
            .position(|(_, fields, doc)| {
                doc["trial"] == json!(t.name)
                    && fields["num_prompts"] == json!(t.step.num_prompts)
                    && fields.get("max_concurrency").cloned()
                        == t.step.max_concurrency().map(|c| json!(c))
                    && fields["test_name"]
                        .as_str()
                        .unwrap()
                        .starts_with("qwen3_tts")
                    && fields["test_name"].as_str().unwrap().ends_with("_H20")
            })
            .unwrap_or_else(|| panic!("{} not found in {parsed:?}", t.name));
        let (name, fields, doc) = parsed.remove(at);
        assert_eq!(doc["test_name"], json!("test_qwen3_tts"), "{name}");
        assert_eq!(
            doc["baseline"],
            Value::Object(t.thresholds.buckets.clone()),
            "{name}"
        );
        assert!(!doc.contains_key("verdict"), "{name}");
        assert_eq!(fields["date"].as_str().unwrap().len(), 15, "{name}");
        if t.entry.name.is_some() {
            assert_eq!(fields["test_name"], json!("qwen3_tts_fast_H20"));
            assert_eq!(fields["dataset_name"], json!("random"));
            assert_eq!(fields["random_input_len"], json!("100"));
            assert_eq!(fields["random_output_len"], json!("na"));
            assert_eq!(doc["name"], json!("fast"));
        } else {
            assert_eq!(doc["name"], Value::Null);
        }
        if t.step.request_rate().is_some() {
            assert_eq!(fields["flow"], json!("0.5"), "{name}");
        }
    }
}

#[test]
fn fixed_length_workloads_are_checked_on_the_result() {
    let mut t = concurrency_trial("test_a", "fixed", 1, 2);
    let mut e: BenchEntry = (*t.entry).clone();
    e.raw.insert(
        "extra_body".into(),
        json!({"sampling_params_list": [{"min_tokens": 5, "max_tokens": 5}]}),
    );
    t.entry = Arc::new(e);
    let mut f = fixture(vec![t], fake(FakeKnobs::default()), false);
    let err = f.session.run_trial(0).unwrap_err().to_string();
    assert!(
        err.contains("Fixed stage workload: the result has no request_stage_metrics"),
        "{err}"
    );
}

/// Answers every OmniInteract subset with the counts given for it.
struct SubsetBench(Vec<(&'static str, (f64, f64, f64))>);

impl Bench for SubsetBench {
    fn kind(&self) -> BenchKind {
        BenchKind::Vllm
    }

    fn supports(&self, _entry: &BenchEntry) -> Result<(), Unsupported> {
        Ok(())
    }

    fn run(&self, ctx: &dfx_core::bench::BenchContext<'_>) -> BenchOutcome {
        let subset = ctx.trial.entry.raw["omniinteract_subsets"]
            .as_str()
            .unwrap();
        let (tp, fp, fn_) = self.0.iter().find(|(s, _)| *s == subset).unwrap().1;
        let n = ctx.trial.step.num_prompts;
        let doc = json!({"completed": n, "failed": 0, "omniinteract": {"accuracy": {
            "status": "ok", "failed": 0, "evaluated": 4,
            "summary": {"IA_QTF1": 0.5, "Global_TP": tp, "Global_FP": fp, "Global_FN": fn_}}}});
        BenchOutcome {
            result: doc.as_object().cloned(),
            ..BenchOutcome::default()
        }
    }
}

/// The pooled IA-QTF1 of the case's three subsets: nothing is judged until the third
/// subset's trial, which fails when the pooled value is under the floor.
#[test]
fn pooled_ia_qtf1_gate_fails_the_trial_that_completes_the_subsets() {
    let subsets = ["1q1a", "1q1a_math", "1qna"];
    let trials: Vec<Trial> = subsets
        .iter()
        .map(|s| {
            let mut t = concurrency_trial("test_gander", s, 1, 4);
            let mut e: BenchEntry = (*t.entry).clone();
            e.raw.insert("dataset_name".into(), json!("omniinteract"));
            e.raw.insert("omniinteract_evaluate".into(), json!(true));
            e.raw.insert("omniinteract_subsets".into(), json!(s));
            e.case.omniinteract_aggregate_min_ia_qtf1 = Some(0.2);
            e.case.omniinteract_aggregate_subsets = subsets.iter().map(|s| s.to_string()).collect();
            t.entry = Arc::new(e);
            t
        })
        .collect();
    let low = SubsetBench(vec![
        ("1q1a", (1.0, 9.0, 9.0)),
        ("1q1a_math", (0.0, 2.0, 2.0)),
        ("1qna", (0.0, 3.0, 3.0)),
    ]);
    let mut f = fixture(trials, Box::new(low), false);
    assert!(matches!(f.session.run_trial(0), Ok(Ran::Passed)));
    assert!(matches!(f.session.run_trial(1), Ok(Ran::Passed)));
    let third = f.session.run_trial(2);
    let failures = result_json(&f, 2)["verdict"]["failures"].to_string();
    assert!(third.is_err(), "{third:?}");
    assert!(failures.contains("aggregate IA-QTF1"), "{failures}");
}
