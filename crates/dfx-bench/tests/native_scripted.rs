//! The native bench against an in-process server with a scripted timeline: every reported
//! metric is checked against the known delays and chunk sizes (generous tolerances: two
//! shared cores).

mod native_support;

use std::time::Duration;

use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::StepKind;
use native_support::*;
use serde_json::Value;

/// Scheduling slack allowed on top of a scripted delay.
const SLACK: f64 = 0.15;

fn settings() -> NativeSettings {
    NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    }
}

fn ctx<'a>(
    trial: &'a dfx_core::plan::Trial,
    server: &Scripted,
    out: &std::path::Path,
) -> BenchContext<'a> {
    let url = reqwest_free_url(&server.base_url);
    BenchContext {
        trial,
        base_url: server.base_url.clone(),
        host: url.0,
        port: url.1,
        out_dir: out.to_path_buf(),
        hardware: "SIM".into(),
        judge_url: None,
        server_group: None,
    }
}

fn reqwest_free_url(base: &str) -> (String, u16) {
    let hostport = base.trim_start_matches("http://");
    let (h, p) = hostport.rsplit_once(':').unwrap();
    (h.to_string(), p.parse().unwrap())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn within(x: f64, lo: f64, hi: f64, what: &str) {
    assert!(x >= lo && x <= hi, "{what} = {x}, expected in [{lo}, {hi}]");
}

fn by_text<'a>(records: &'a [Value], sample: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["sample_id"] == sample && r["warmup"] == false)
        .unwrap_or_else(|| panic!("no measured record for {sample}"))
}

#[test]
fn scripted_timeline_gives_every_metric() {
    let server = Scripted::start();
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    text_dataset(
        &ds,
        &[
            "A plain sentence.",
            "SILENT then speech.",
            "A GAP in the stream.",
        ],
    );
    let t = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        num_warmups: None, // default: max(2, 2) = 2
        extra_body: Some(
            serde_json::json!({"voice": "Vivian", "language": "English", "task_type": "CustomVoice"}),
        ),
        ..TrialSpec::default()
    });
    let out = tmp.path().join("out");
    let outcome = NativeBench::new(settings()).run(&ctx(&t, &server, &out));
    assert_eq!(outcome.exit, None, "{}", outcome.log_tail);
    let doc = outcome.result.expect("a result");
    assert!(outcome.invalid_load.is_none());
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);

    let records = read_records(&out);
    assert_eq!(records.len(), 5, "2 warmups + 3 measured");
    assert_eq!(records.iter().filter(|r| r["warmup"] == true).count(), 2);
    let plain = by_text(&records, "row0");
    let silent = by_text(&records, "row1");
    let gap = by_text(&records, "row2");
    let first = FIRST_DELAY.as_secs_f64();
    let e2el = first + (CHUNKS - 1) as f64 * CHUNK_GAP.as_secs_f64();
    for r in [plain, silent, gap] {
        assert_eq!(r["ok"], true);
        assert_eq!(r["status"], 200);
        assert_eq!(r["bytes"], (CHUNKS * CHUNK_BYTES) as u64);
        assert_eq!(r["audio_frames"], 12_000);
        assert_eq!(r["audio_s"], 0.5);
        assert_eq!(r["sample_rate"], 24_000);
        within(f(&r["ttfp_s"]), first, first + SLACK, "ttfp");
        let sizes: u64 = r["chunk_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap())
            .sum();
        assert_eq!(
            sizes,
            (CHUNKS * CHUNK_BYTES) as u64,
            "timeline covers the body"
        );
        assert_eq!(r["chunk_t_s"][0], r["ttfp_s"]);
        assert!(r["request_id"].as_str().unwrap().starts_with("bench-"));
    }
    within(f(&plain["e2el_s"]), e2el, e2el + SLACK, "e2el");
    within(f(&plain["rtf"]), e2el / 0.5, (e2el + SLACK) / 0.5, "rtf");
    assert_eq!(plain["continuous_100ms"], true);
    within(
        f(&plain["underrun_s"]),
        0.0,
        0.05,
        "underrun of a steady stream",
    );
    assert_eq!(plain["leading_silence_s"], 0.0);
    // 0.2 s of leading silence is found exactly; audible TTFA adds it to the TTFP.
    assert!((f(&silent["leading_silence_s"]) - 0.2).abs() < 1e-9);
    assert!((f(&silent["ttfa_audible_s"]) - f(&silent["ttfp_s"]) - 0.2).abs() < 1e-9);
    // GAP: the 3rd chunk comes 0.6 s late; the player had 0.2 s and played 0.65 s by then.
    let gap_e2el = e2el + GAP_PAUSE.as_secs_f64();
    within(f(&gap["e2el_s"]), gap_e2el, gap_e2el + SLACK, "gap e2el");
    within(
        f(&gap["underrun_s"]),
        0.45 - 0.05,
        0.45 + SLACK,
        "gap underrun",
    );
    assert_eq!(gap["continuous_200ms"], false);
    within(
        f(&gap["gap_max_s"]),
        0.65 - 0.02,
        0.65 + SLACK,
        "largest gap",
    );

    // Aggregates.
    assert_eq!(doc["completed"], 3);
    assert_eq!(doc["failed"], 0);
    assert_eq!(doc["request_rate"], "inf");
    assert_eq!(doc["max_concurrency"], 2);
    assert_eq!(doc["total_audio_duration_s"], 1.5);
    assert_eq!(doc["total_audio_frames"], 36_000);
    assert_eq!(doc["mean_audio_duration_s"], 0.5);
    assert_eq!(doc["audio_sample_rate"], 24_000);
    let dur = f(&doc["duration"]);
    // c=2 over 3 requests: the GAP one and one other in parallel, then the third.
    within(
        dur,
        gap_e2el.max(2.0 * e2el),
        2.0 * e2el + gap_e2el + 3.0 * SLACK,
        "duration",
    );
    assert!((f(&doc["request_throughput"]) - 3.0 / dur).abs() < 1e-9);
    assert!((f(&doc["audio_throughput"]) - 1.5 / dur).abs() < 1e-9);
    let ttfps: Vec<f64> = [plain, silent, gap]
        .iter()
        .map(|r| f(&r["ttfp_s"]) * 1000.0)
        .collect();
    assert!((f(&doc["mean_audio_ttfp_ms"]) - ttfps.iter().sum::<f64>() / 3.0).abs() < 1e-6);
    within(
        f(&doc["median_e2el_ms"]),
        e2el * 1000.0,
        (e2el + SLACK) * 1000.0,
        "median e2el",
    );
    // numpy p99 of three values: rank 1.98 between the 2nd and the largest.
    let mut e: Vec<f64> = [plain, silent, gap]
        .iter()
        .map(|r| f(&r["e2el_s"]) * 1000.0)
        .collect();
    e.sort_by(f64::total_cmp);
    assert!((f(&doc["p99_e2el_ms"]) - (e[1] + 0.98 * (e[2] - e[1]))).abs() < 1e-6);
    assert!((f(&doc["median_e2el_ms"]) - e[1]).abs() < 1e-9);
    assert!((f(&doc["audio_continuity_ok_rate"]) - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(doc["num_audio_continuity_samples"], 3);
    assert_eq!(doc["peak_inflight"], 2, "closed loop at c=2");
    assert_eq!(doc["num_empty_audio"], 0);
    assert_eq!(doc["error_counts"], serde_json::json!({}));
    within(
        f(&doc["p99_audio_underrun_s"]),
        0.4,
        0.45 + SLACK,
        "p99 underrun",
    );
    within(
        f(&doc["generator_lag_p99_ms"]),
        0.0,
        50.0,
        "closed-loop lag",
    );
    assert!(!doc.contains_key("mean_ttft_ms"));

    // Requests as sent: warmups without x-request-id, measured with prefix + index.
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 5);
    let ids: Vec<Option<String>> = seen
        .iter()
        .map(|s| {
            s.headers
                .get("x-request-id")
                .map(|v| v.to_str().unwrap().to_string())
        })
        .collect();
    assert!(
        ids[..2].iter().all(Option::is_none),
        "warmups carry no id: {ids:?}"
    );
    let mut suffixes: Vec<String> = ids[2..]
        .iter()
        .map(|i| i.clone().unwrap().rsplit('-').next().unwrap().to_string())
        .collect();
    suffixes.sort();
    assert_eq!(suffixes, ["0", "1", "2"]);
    for s in &seen {
        assert!(s.headers.get("authorization").is_none());
        assert_eq!(s.headers["content-type"], "application/json");
        let keys: Vec<&str> = s.body.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "model",
                "input",
                "stream",
                "stream_format",
                "response_format",
                "voice",
                "language",
                "task_type"
            ]
        );
    }

    // Artifacts: bench.log holds the vllm block.
    let log = std::fs::read_to_string(out.join("bench.log")).unwrap();
    assert!(
        log.contains("============ Serving Benchmark Result ============"),
        "{log}"
    );
    assert!(log.contains("Successful requests:                     3"));
    assert!(log.contains("Streaming continuity OK rate:            66.67%"));
    assert!(outcome.log_tail.contains("Serving Benchmark Result"));
}

#[test]
fn failure_classes_and_empty_bodies() {
    let server = Scripted::start();
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    let texts = [
        "FAIL please.",
        "EMPTY body.",
        "STALL forever.",
        "RIFF header.",
        "HUGE body.",
        "SLOW trickle.",
        "Fine one.",
    ];
    text_dataset(&ds, &texts);
    let t = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        kind: StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(7).unwrap(),
        },
        num_prompts: 7,
        ..TrialSpec::default()
    });
    let out = tmp.path().join("out");
    let s = NativeSettings {
        read_timeout: Duration::from_millis(400),
        request_timeout: Duration::from_millis(900),
        max_body_bytes: 100_000,
        ..settings()
    };
    let outcome = NativeBench::new(s).run(&ctx(&t, &server, &out));
    let doc = outcome.result.expect("a result");
    assert_eq!(doc["completed"], 2, "EMPTY and the fine one");
    assert_eq!(doc["failed"], 5);
    assert_eq!(doc["num_empty_audio"], 1);
    assert_eq!(
        doc["error_counts"],
        serde_json::json!({"http_500": 1, "not_pcm": 1, "oversize": 1, "stall": 1, "timeout": 1})
    );
    // The empty success counts with zero audio, like upstream: median TTFP of {0, x} = x/2.
    assert_eq!(doc["num_audio_ttfp_samples"], 2);
    assert_eq!(doc["total_audio_duration_s"], 0.5);
    assert_eq!(
        doc["audio_continuity_ok_rate"], 1.0,
        "the empty stream is not measured"
    );
    assert_eq!(doc["num_audio_continuity_samples"], 1);
    let records = read_records(&out);
    let r = by_text(&records, "row0");
    assert_eq!(r["status"], 500);
    assert_eq!(
        r["error"],
        "HTTP 500 Internal Server Error: Internal Fake Error"
    );
    let r = by_text(&records, "row1");
    assert_eq!(
        (r["ok"].clone(), r["empty"].clone(), r["ttfp_s"].clone()),
        (Value::Bool(true), Value::Bool(true), Value::Null)
    );
    let r = by_text(&records, "row2");
    within(
        f(&r["end_s"]) - f(&r["actual_send_s"]),
        0.5,
        0.5 + SLACK + 0.1,
        "stall detected after first chunk + read timeout",
    );
    assert!(r["error"].as_str().unwrap().contains("read timeout"));
    assert!(
        by_text(&records, "row3")["error"]
            .as_str()
            .unwrap()
            .contains("RIFF")
    );
    assert_eq!(by_text(&records, "row4")["error_class"], "oversize");
    let r = by_text(&records, "row5");
    assert_eq!(r["error_class"], "timeout");
    within(
        f(&r["end_s"]) - f(&r["actual_send_s"]),
        0.9,
        0.9 + SLACK,
        "total timeout",
    );
    assert!(
        outcome
            .errors
            .iter()
            .any(|e| e.contains("Internal Fake Error")),
        "{:?}",
        outcome.errors
    );
}

#[test]
fn connection_refused_is_a_transport_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    text_dataset(&ds, &["Nobody listens."]);
    let t = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        num_prompts: 2,
        ..TrialSpec::default()
    });
    // Bind and drop: a loopback port with nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let c = BenchContext {
        trial: &t,
        base_url: format!("http://127.0.0.1:{port}"),
        host: "127.0.0.1".into(),
        port,
        out_dir: tmp.path().join("out"),
        hardware: "SIM".into(),
        judge_url: None,
        server_group: None,
    };
    let outcome = NativeBench::new(settings()).run(&c);
    let doc = outcome.result.unwrap();
    assert_eq!(doc["failed"], 2);
    assert_eq!(doc["error_counts"], serde_json::json!({"transport": 2}));
    assert_eq!(doc["total_audio_duration_s"], Value::from(0));
    assert!(!doc.contains_key("mean_audio_ttfp_ms"));
}

#[test]
fn open_loop_follows_the_seeded_schedule() {
    let server = Scripted::start();
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    text_dataset(&ds, &["One.", "Two.", "Three."]);
    let mk = |burst| {
        trial(TrialSpec {
            dataset_path: ds.to_str().unwrap(),
            kind: StepKind::RequestRate { request_rate: 40.0 },
            num_prompts: 8,
            burstiness: burst,
            ..TrialSpec::default()
        })
    };
    let t = mk(Some(0.5));
    let out = tmp.path().join("out");
    let outcome = NativeBench::new(NativeSettings {
        seed: 11,
        ..settings()
    })
    .run(&ctx(&t, &server, &out));
    let doc = outcome.result.unwrap();
    assert_eq!(doc["request_rate"], 40.0);
    assert_eq!(doc["burstiness"], 0.5);
    assert_eq!(doc["max_concurrency"], Value::Null);
    assert_eq!(doc["completed"], 8);
    assert!(outcome.invalid_load.is_none(), "{:?}", outcome.invalid_load);
    // vllm bench's schedule for the seed: the first request waits its gap too.
    let want = dfx_bench::native::schedule::upstream_offsets(8, 40.0, 0.5, 11).unwrap();
    let records = read_records(&out);
    let mut measured: Vec<&Value> = records.iter().filter(|r| r["warmup"] == false).collect();
    measured.sort_by_key(|r| r["index"].as_u64());
    for (r, w) in measured.iter().zip(&want) {
        assert!(
            (f(&r["planned_send_s"]) - w).abs() < 1e-6,
            "planned {} vs {w}",
            r["planned_send_s"]
        );
        assert!(f(&r["actual_send_s"]) >= f(&r["planned_send_s"]));
        within(f(&r["lag_s"]), 0.0, 0.1, "send lag");
    }
    // A zero threshold turns any lag into an invalid step.
    let out2 = tmp.path().join("out2");
    let strict = NativeSettings {
        lag_threshold: Duration::ZERO,
        ..settings()
    };
    let outcome = NativeBench::new(strict).run(&ctx(&mk(None), &server, &out2));
    let why = outcome.invalid_load.expect("lag beyond a zero threshold");
    assert!(why.contains("open-loop send lag"), "{why}");
    assert!(
        outcome.result.is_some(),
        "an invalid step still has its result"
    );
}

/// The reference run's shape end to end (seed-tts-text, c=2, one HTTP 500, empty bodies,
/// `metric-percentiles 50,90,99`): the live result has upstream's keys in upstream's
/// order with upstream's value types.
#[test]
fn live_result_has_the_reference_keys_and_types() {
    let server = Scripted::start();
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    text_dataset(
        &ds,
        &[
            "FAIL this one on purpose.",
            "The quick brown fox jumps.",
            "EMPTY answer.",
            "EMPTY again.",
            "Third normal sentence here.",
            "EMPTY once more.",
        ],
    );
    let t = trial(TrialSpec {
        dataset_path: ds.to_str().unwrap(),
        num_prompts: 6,
        metric_percentiles: Some("50,90,99"),
        ..TrialSpec::default()
    });
    let out = tmp.path().join("out");
    let doc = NativeBench::new(settings())
        .run(&ctx(&t, &server, &out))
        .result
        .unwrap();
    let path = dfx_core::reference::reference_dir()
        .unwrap_or_else(|e| panic!("{e}"))
        .join("vllm-bench/result-c2-with-failure-detailed.json");
    let reference: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let detailed = [
        "input_lens",
        "start_times",
        "output_lens",
        "ttfts",
        "itls",
        "generated_texts",
        "errors",
    ];
    let want: Vec<(&String, &Value)> = reference
        .iter()
        .filter(|(k, _)| !detailed.contains(&k.as_str()))
        .collect();
    let got: Vec<(&String, &Value)> = doc.iter().take(want.len()).collect();
    let type_of = |v: &Value| match v {
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Null => "null",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Bool(_) => "bool",
    };
    for ((gk, gv), (wk, wv)) in got.iter().zip(&want) {
        assert_eq!(gk, wk, "key order");
        assert_eq!(type_of(gv), type_of(wv), "type of {gk}: {gv} vs {wv}");
    }
    assert_eq!(got.len(), want.len());
    for key in [
        "completed",
        "failed",
        "total_audio_duration_s",
        "total_audio_frames",
        "max_concurrent_requests",
    ] {
        assert_eq!(doc[key], reference[key], "{key}: same scenario, same value");
    }
    assert_eq!(doc["num_empty_audio"], 3);
}
