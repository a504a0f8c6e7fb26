//! The native realtime client against the simulator's `/v1/realtime` (in process): a
//! seed-tts step of two requests of two turns each, with `save_duplex_request_metrics`;
//! and what `supports()` refuses at load.

mod native_support;

use std::sync::Arc;

use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::Bench;
use dfx_core::plan::StepKind;
use native_support::{TrialSpec, read_records, realtime, seed_tts, trial};
use serde_json::{Value, json};

const OMNI: &str = "Qwen/Qwen3-Omni-30B-A3B-Instruct";

#[test]
fn native_realtime_client_against_the_simulator() {
    let (rt, sim) = native_support::spawn_sim(OMNI, 10.0);
    let dir = tempfile::tempdir().unwrap();
    native_support::seed_tts(&dir.path().join("ds"), 6);
    let t = trial(TrialSpec {
        dataset_name: "seed-tts",
        dataset_path: dir.path().join("ds").to_str().unwrap(),
        kind: StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(2).unwrap(),
        },
        num_prompts: 2,
        num_warmups: Some(1),
        extra_body: Some(json!({"save_duplex_request_metrics": true})),
        percentile_metrics: Some("ttft,e2el,audio_ttfp,audio_rtf,audio_duration"),
        model: OMNI,
        ..TrialSpec::default()
    });
    let t = realtime(
        t,
        "openai-realtime-duplex",
        "/v1/realtime",
        json!({"seed_tts_turns_per_session": 2, "expected_duplex_audio_turns_per_session": 2}),
    );
    let bench = NativeBench::new(NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    });
    bench.supports(&t.entry).unwrap();
    let out = dir.path().join("out");
    let ctx = native_support::sim_context(&t, sim.base_url(), sim.addr.port(), &out);
    let outcome = bench.run(&ctx);
    assert!(
        outcome.errors.is_empty(),
        "{:?}\n{}",
        outcome.errors,
        outcome.log_tail
    );
    assert_eq!(outcome.exit, None, "the expected turn count holds");
    let log = std::fs::read_to_string(out.join("bench.log")).unwrap();
    let ttft = log
        .find("Mean TTFT (ms):")
        .expect("TTFT section in the summary");
    assert!(ttft < log.find("Mean E2EL (ms):").unwrap());
    let doc = outcome.result.unwrap();
    assert_eq!(doc["backend"], "openai-realtime-duplex");
    let mut strict = (*t.entry).clone();
    strict.gates.expected_duplex_turns = Some(3);
    let why = dfx_bench::native::realtime::expected_turns(&strict, &doc, 2).unwrap();
    assert!(
        why.contains("2 session(s) with another audio_turn_count"),
        "{why}"
    );
    assert_eq!(doc["completed"], 2, "{}", outcome.log_tail);
    assert_eq!(doc["failed"], 0);
    assert!(
        doc["total_output_tokens"].as_u64().unwrap() >= 4 * 5,
        "five words a turn"
    );
    assert!(
        doc["max_output_tokens_per_s"].is_null(),
        "NaN upstream, null here"
    );
    let keys: Vec<&str> = doc.keys().map(String::as_str).collect();
    let pos = |k: &str| {
        keys.iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("no {k}"))
    };
    assert!(pos("mean_ttft_ms") < pos("mean_e2el_ms"));
    assert_eq!(
        pos("duplex_request_metrics"),
        pos("num_audio_rtf_samples") + 1
    );
    assert_eq!(
        pos("duplex_session_metrics"),
        pos("duplex_request_metrics") + 1
    );
    let sessions = doc["duplex_session_metrics"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert!(
        sessions.iter().all(|s| s["audio_turn_count"] == 2),
        "{sessions:?}"
    );
    assert!(
        sessions[0]["session_id"]
            .as_str()
            .unwrap()
            .starts_with("seed-tts-")
    );
    let turns = doc["duplex_request_metrics"].as_array().unwrap();
    assert_eq!(turns.len(), 4);
    for m in turns {
        let ttft = m["ttft_ms"].as_f64().unwrap();
        let ttfp = m["ttfp_ms"].as_f64().unwrap();
        assert!(ttft > 0.0 && ttft <= ttfp + 1.0, "{m}");
        assert!(m["audio_duration_ms"].as_f64().unwrap() > 1000.0, "{m}");
        assert!(
            m["rtf"].as_f64().unwrap() < 1.0,
            "speed 10 runs faster than real time: {m}"
        );
    }
    // Each request runs two sessions one after the other: its E2EL covers both turns'
    // audio generation (the per-turn ttfp is a mean over turns).
    let e2el = doc["mean_e2el_ms"].as_f64().unwrap();
    let ttfp = doc["mean_audio_ttfp_ms"].as_f64().unwrap();
    assert!(e2el > 2.0 * ttfp, "{e2el} vs {ttfp}");
    let dur = doc["mean_audio_duration_s"].as_f64().unwrap();
    assert!(dur > 2.0, "two turns of ~2.2 s each: {dur}");
    let recs = read_records(&out);
    let measured: Vec<&Value> = recs.iter().filter(|r| r["warmup"] == false).collect();
    assert_eq!(measured.len(), 2);
    assert_eq!(recs.len(), 3, "one warmup");
    for r in measured {
        let turns = r["turns"].as_array().unwrap();
        assert_eq!(turns.len(), 2);
        assert!(turns.iter().all(|t| t["closed"] == true && t["ok"] == true));
        assert!(!turns[0]["audio_t_s"].as_array().unwrap().is_empty());
        assert_eq!(
            r["audio_frames"].as_u64().unwrap(),
            (r["audio_s"].as_f64().unwrap() * 24000.0) as u64
        );
    }
    rt.block_on(sim.shutdown()).unwrap();
}

#[test]
fn supports_refuses_what_it_cannot_serve() {
    let bench = NativeBench::new(NativeSettings::default());
    let base = trial(TrialSpec {
        dataset_name: "seed-tts",
        ..TrialSpec::default()
    });
    let why = |backend: &str, endpoint: &str, raw: Value| {
        let t = realtime(base.clone(), backend, endpoint, raw);
        bench.supports(&t.entry).err().map(|u| u.to_string())
    };
    assert_eq!(why("openai-realtime-tts", "/v1/realtime", json!({})), None);
    assert!(
        why("openai-realtime-chat", "/v1/realtime", json!({}))
            .unwrap()
            .contains("realtime_trigger")
    );
    assert!(
        why("openai-realtime-tts", "/v1/audio/speech", json!({}))
            .unwrap()
            .contains("/v1/realtime")
    );
    assert!(
        why(
            "openai-realtime-duplex",
            "/v1/realtime",
            json!({"seed_tts_turns_per_session": 0})
        )
        .unwrap()
        .contains("seed_tts_turns_per_session")
    );
    let mut t = realtime(
        base.clone(),
        "openai-realtime-duplex",
        "/v1/realtime",
        json!({}),
    );
    let mut e = (*t.entry).clone();
    e.dataset_name = Some("omniinteract".into());
    t.entry = Arc::new(e);
    assert!(
        bench
            .supports(&t.entry)
            .unwrap_err()
            .to_string()
            .contains("OmniInteract")
    );
}

#[test]
fn open_loop_realtime_tts_with_text_rows() {
    let (rt, sim) = native_support::spawn_sim(OMNI, 10.0);
    let dir = tempfile::tempdir().unwrap();
    native_support::text_dataset(
        &dir.path().join("ds"),
        &["One two three four.", "Five six seven eight.", "Nine ten."],
    );
    let t = trial(TrialSpec {
        dataset_name: "seed-tts-text",
        dataset_path: dir.path().join("ds").to_str().unwrap(),
        kind: StepKind::RequestRate { request_rate: 5.0 },
        num_prompts: 3,
        num_warmups: Some(0),
        percentile_metrics: Some("e2el,audio_ttfp,audio_rtf,audio_duration"),
        model: OMNI,
        ..TrialSpec::default()
    });
    let t = realtime(t, "openai-realtime-tts", "/v1/realtime", json!({}));
    let bench = NativeBench::new(NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    });
    let out = dir.path().join("out");
    let ctx = native_support::sim_context(&t, sim.base_url(), sim.addr.port(), &out);
    let outcome = bench.run(&ctx);
    assert!(outcome.invalid_load.is_none(), "{:?}", outcome.invalid_load);
    let doc = outcome.result.unwrap();
    assert_eq!(doc["completed"], 3, "{}", outcome.log_tail);
    assert_eq!(doc["request_rate"], 5.0);
    assert!(doc.get("mean_ttft_ms").is_none(), "ttft not selected");
    assert!(doc.get("duplex_session_metrics").is_none(), "not asked for");
    assert!(doc["max_output_tokens_per_s"].as_f64().unwrap() >= 2.0);
    let recs = read_records(&out);
    let mut sends: Vec<f64> = recs
        .iter()
        .map(|r| r["actual_send_s"].as_f64().unwrap())
        .collect();
    sends.sort_by(f64::total_cmp);
    assert!(
        sends[2] > 0.05,
        "arrivals spread by the schedule: {sends:?}"
    );
    rt.block_on(sim.shutdown()).unwrap();
}

/// The load keys on realtime sessions, on the one scheduler: a burst of 4 sessions against
/// an open-loop cap of 1 with `saturation: "fail"`: one session runs, three are refused
/// and recorded (never sent), the step fails with the gate's line, and the load keys are
/// written.
#[test]
fn a_realtime_burst_meets_the_cap_and_the_saturation_gate() {
    use dfx_core::plan::{LoadShape, LoadSpec, Saturation};
    let (_rt, sim) = native_support::spawn_sim(OMNI, 10.0);
    let dir = tempfile::tempdir().unwrap();
    seed_tts(&dir.path().join("ds"), 4);
    let t = trial(TrialSpec {
        dataset_name: "seed-tts",
        dataset_path: dir.path().join("ds").to_str().unwrap(),
        kind: StepKind::RequestRate { request_rate: 1.0 },
        num_prompts: 4,
        num_warmups: Some(0),
        model: OMNI,
        ..TrialSpec::default()
    });
    let mut t = realtime(t, "openai-realtime-duplex", "/v1/realtime", json!({}));
    let mut e = (*t.entry).clone();
    e.load = LoadSpec {
        shape: LoadShape::Burst,
        open_loop_max_concurrency: std::num::NonZeroU32::new(1),
        saturation: Saturation::Fail,
    };
    t.entry = Arc::new(e);
    let bench = NativeBench::new(NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    });
    bench
        .supports(&t.entry)
        .expect("realtime takes the load keys");
    let out = dir.path().join("out");
    let ctx = native_support::sim_context(&t, sim.base_url(), sim.addr.port(), &out);
    let outcome = bench.run(&ctx);
    let doc = outcome.result.unwrap();
    assert_eq!(doc["completed"], 1, "{}", outcome.log_tail);
    assert_eq!(doc["failed"], 3);
    assert_eq!(doc["load_shape"], "burst");
    assert_eq!(doc["saturated_requests"], 3);
    let first = "load generator saturated: 3 arrivals found max_concurrency=1 requests in flight";
    assert_eq!(outcome.errors, vec![first.to_string()]);
    let refused = read_records(&out)
        .iter()
        .filter(|r| r["saturated"] == true && r["error_class"] == "saturated")
        .count();
    assert_eq!(refused, 3);
}
