//! Load shapes and the saturation gate of the native bench against the in-process
//! scripted server: the planned send offsets in `records.jsonl` are the schedule's, the
//! actual sends follow them in order and relative spacing (generous bounds: two shared
//! cores), and the gate fails arrivals exactly when a slow server holds every slot.

mod native_support;

use dfx_bench::native::schedule::planned_offsets;
use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchOutcome};
use dfx_core::plan::{Cohort, LoadShape, LoadSpec, Saturation, StepKind, Trial};
use native_support::*;
use serde_json::Value;

const SEED: u64 = 7;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Runs a rate step of `n` requests over rows of `texts` with `load`.
fn run(texts: &[&str], rate: f64, n: u64, burstiness: f64, load: LoadSpec) -> Run {
    let server = Scripted::start();
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    text_dataset(&ds, texts);
    let trial = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        kind: StepKind::RequestRate { request_rate: rate },
        num_prompts: n,
        burstiness: Some(burstiness),
        extra_body: Some(serde_json::json!({"voice": "Vivian"})),
        load,
        ..TrialSpec::default()
    });
    let out = tmp.path().join("out");
    let settings = NativeSettings {
        auth_token_env: None,
        progress: false,
        seed: SEED,
        ..NativeSettings::default()
    };
    let outcome = NativeBench::new(settings).run(&bench_ctx(&trial, &server, &out));
    let records = measured_records(&out);
    Run {
        trial,
        outcome,
        records,
        _tmp: tmp,
    }
}

struct Run {
    trial: Trial,
    outcome: BenchOutcome,
    records: Vec<Value>,
    _tmp: tempfile::TempDir,
}

impl Run {
    fn doc(&self) -> &serde_json::Map<String, Value> {
        self.outcome.result.as_ref().expect("a result")
    }
    fn planned(&self) -> Vec<f64> {
        self.records
            .iter()
            .map(|r| f(&r["planned_send_s"]))
            .collect()
    }
    fn actual(&self) -> Vec<f64> {
        self.records
            .iter()
            .map(|r| f(&r["actual_send_s"]))
            .collect()
    }
    /// The records hold the schedule's offsets (shifted by the phase's 20 ms lead), and
    /// each request went out at or after its deadline, in deadline order.
    fn check_planned_vs_actual(&self, want: &[f64]) {
        let planned = self.planned();
        assert_eq!(planned.len(), want.len());
        let lead = planned[0] - want[0];
        for (p, w) in planned.iter().zip(want) {
            assert!((p - w - lead).abs() < 1e-6, "planned {p} vs {w} + {lead}");
        }
        let actual = self.actual();
        for (a, p) in actual.iter().zip(&planned) {
            assert!(*a >= p - 1e-6, "sent at {a} before its deadline {p}");
            assert!(a - p < 0.5, "sent at {a}, deadline {p}");
        }
        let mut order: Vec<usize> = (0..actual.len()).collect();
        order.sort_by(|&i, &j| actual[i].total_cmp(&actual[j]));
        let late_swaps = order
            .windows(2)
            .filter(|w| planned[w[1]] - planned[w[0]] > 0.05 && w[1] < w[0])
            .count();
        assert_eq!(late_swaps, 0, "sends out of deadline order: {order:?}");
        assert_eq!(self.doc()["completed"], want.len());
    }
}

fn shaped(shape: LoadShape) -> LoadSpec {
    LoadSpec {
        shape,
        ..LoadSpec::default()
    }
}

#[test]
fn ramp_sends_speed_up_as_planned() {
    let shape = LoadShape::Ramp { start_rate: 2.0 };
    let r = run(
        &["One.", "Two.", "Three."],
        12.0,
        12,
        100.0,
        shaped(shape.clone()),
    );
    let want = planned_offsets(&shape, 12, 12.0, 100.0, SEED).unwrap();
    r.check_planned_vs_actual(&want);
    let a = r.actual();
    let (first, last) = (a[1] - a[0], a[11] - a[10]);
    // Planned gaps: ~0.4 s first, ~0.083 s last (ratio ~5).
    assert!(first > 2.0 * last, "first gap {first}, last gap {last}");
    let doc = r.doc();
    assert_eq!(doc["load_shape"], "ramp");
    let offered = f(&doc["offered_request_rate"]);
    let planned_rate = 11.0 / (want[11] - want[0]);
    assert!((offered / planned_rate - 1.0).abs() < 1e-6, "{offered}");
    let achieved = f(&doc["achieved_request_rate"]);
    assert!(
        (achieved / offered - 1.0).abs() < 0.3,
        "{achieved} vs {offered}"
    );
    assert_eq!(doc["saturated_requests"], 0);
}

#[test]
fn burst_sends_everything_at_once() {
    let r = run(&["One.", "Two."], 1.0, 6, 1.0, shaped(LoadShape::Burst));
    r.check_planned_vs_actual(&[0.0; 6]);
    let a = r.actual();
    let spread = a.iter().cloned().fold(0.0, f64::max) - a.iter().cloned().fold(9.0, f64::min);
    assert!(spread < 0.25, "a burst spread over {spread} s");
    let doc = r.doc();
    assert_eq!(doc["load_shape"], "burst");
    assert_eq!(doc["offered_request_rate"], Value::Null, "infinite");
    assert_eq!(doc["peak_inflight"], 6, "nothing capped it");
}

#[test]
fn soak_spreads_the_requests_over_its_duration() {
    let shape = LoadShape::Soak { duration_s: 2.0 };
    // request_rate 0.5 only names the step: 8 requests over 2 s is 4 req/s.
    let r = run(&["One.", "Two."], 0.5, 8, 1.0, shaped(shape.clone()));
    let want = planned_offsets(&shape, 8, 0.5, 1.0, SEED).unwrap();
    assert!((want[7] - 1.75).abs() < 1e-9);
    r.check_planned_vs_actual(&want);
    let a = r.actual();
    let span = a[7] - a[0];
    assert!((1.6..2.3).contains(&span), "sends span {span} s");
    let doc = r.doc();
    assert_eq!(doc["load_shape"], "soak");
    assert!((f(&doc["offered_request_rate"]) - 4.0).abs() < 1e-6);
}

#[test]
fn cohorts_collide_at_their_offsets() {
    let cohort = |offset_s, request_rate| Cohort {
        offset_s,
        num_prompts: 4,
        request_rate,
    };
    let shape = LoadShape::Cohorts {
        cohorts: vec![cohort(0.0, None), cohort(1.2, Some(40.0))],
    };
    let r = run(&["One.", "Two."], 20.0, 8, 100.0, shaped(shape.clone()));
    let want = planned_offsets(&shape, 8, 20.0, 100.0, SEED).unwrap();
    r.check_planned_vs_actual(&want);
    let a = r.actual();
    let lead = r.planned()[0];
    let early = a.iter().filter(|t| **t - lead < 1.0).count();
    let late = a.iter().filter(|t| **t - lead >= 1.2 - 1e-6).count();
    assert_eq!((early, late), (4, 4), "sends {a:?}");
    // The second cohort runs at twice the first one's rate.
    let gap = |i: usize| a[i + 1] - a[i];
    assert!(
        gap(0) + gap(1) + gap(2) > 1.3 * (gap(4) + gap(5) + gap(6)),
        "{a:?}"
    );
    assert_eq!(r.doc()["load_shape"], "cohorts");
}

fn gated(shape: LoadShape, cap: u32, saturation: Saturation) -> LoadSpec {
    LoadSpec {
        shape,
        open_loop_max_concurrency: std::num::NonZeroU32::new(cap),
        saturation,
    }
}

#[test]
fn the_gate_fails_arrivals_when_a_slow_server_holds_every_slot() {
    // A burst of 6 three-second streams against a cap of 2: 2 sent, 4 refused.
    let load = gated(LoadShape::Burst, 2, Saturation::Fail);
    let r = run(&["SLOW one.", "SLOW two."], 1.0, 6, 1.0, load);
    let doc = r.doc();
    assert_eq!(doc["completed"], 2);
    assert_eq!(doc["failed"], 4);
    assert_eq!(doc["saturated_requests"], 4);
    assert_eq!(doc["max_concurrency"], 2, "the cap the step ran with");
    assert_eq!(doc["error_counts"], serde_json::json!({"saturated": 4}));
    assert_eq!(doc["peak_inflight"], 2);
    let refused: Vec<&Value> = r
        .records
        .iter()
        .filter(|x| x["saturated"] == true)
        .collect();
    assert_eq!(refused.len(), 4);
    for x in &refused {
        assert_eq!(x["ok"], false);
        assert_eq!(x["error_class"], "saturated");
        assert_eq!(x["bytes"], 0);
    }
    let first = "load generator saturated: 4 arrivals found max_concurrency=2 requests in flight";
    assert_eq!(r.outcome.errors, vec![first.to_string()]);
    let v = dfx_core::verdict::judge(doc, 6, &r.trial.thresholds, &r.outcome.errors, false);
    assert!(!v.passed);
    assert!(
        v.failures[0].contains("completed 2 of num_prompts 6") && v.failures[0].contains(first),
        "{:?}",
        v.failures
    );
}

#[test]
fn the_gate_stays_open_when_the_server_keeps_up() {
    // 2 req/s, near-regular gaps, 0.3 s streams: at most ~1 in flight against a cap of 4.
    let load = gated(LoadShape::Steady, 4, Saturation::Fail);
    let r = run(&["One.", "Two.", "Three."], 2.0, 6, 100.0, load);
    let doc = r.doc();
    assert_eq!(doc["completed"], 6);
    assert_eq!(doc["saturated_requests"], 0);
    assert_eq!(doc["load_shape"], "steady");
    assert!(r.outcome.errors.is_empty(), "{:?}", r.outcome.errors);
    let v = dfx_core::verdict::judge(doc, 6, &r.trial.thresholds, &r.outcome.errors, false);
    assert!(v.passed, "{:?}", v.failures);
}

#[test]
fn without_the_gate_a_full_cap_makes_arrivals_wait() {
    // Upstream's semaphore: the same burst against a cap of 2 completes in three waves.
    let load = gated(LoadShape::Burst, 2, Saturation::Wait);
    let r = run(&["One.", "Two."], 1.0, 6, 1.0, load);
    let doc = r.doc();
    assert_eq!(doc["completed"], 6);
    assert_eq!(doc["saturated_requests"], 0);
    assert_eq!(doc["peak_inflight"], 2);
    let queued = r.records.iter().filter(|x| f(&x["queue_s"]) > 0.2).count();
    assert!(queued >= 4, "{queued} requests waited for a slot");
    assert!(r.outcome.invalid_load.is_none(), "queueing is not send lag");
}

#[test]
fn speech_chat_and_realtime_take_the_load_keys() {
    let bench = NativeBench::new(NativeSettings::default());
    let mut t = trial(TrialSpec {
        kind: StepKind::RequestRate { request_rate: 1.0 },
        load: shaped(LoadShape::Burst),
        ..TrialSpec::default()
    });
    bench
        .supports(&t.entry)
        .expect("openai-audio-speech runs a burst");
    let mut chat = (*t.entry).clone();
    chat.backend = Some("openai-chat-omni".into());
    chat.endpoint = Some("/v1/chat/completions".into());
    chat.dataset_name = Some("random".into());
    t.entry = std::sync::Arc::new(chat.clone());
    bench
        .supports(&t.entry)
        .expect("openai-chat-omni runs a burst on the same scheduler");
    let mut rt = chat;
    rt.backend = Some("openai-realtime-duplex".into());
    rt.endpoint = Some("/v1/realtime".into());
    rt.dataset_name = Some("seed-tts".into());
    t.entry = std::sync::Arc::new(rt);
    bench
        .supports(&t.entry)
        .expect("openai-realtime-duplex runs a burst on the same scheduler");
}
