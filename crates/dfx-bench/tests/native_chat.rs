//! The native chat-omni bench against a scripted SSE server: each metric against values
//! computed by hand from the script's timeline, body key order, headers, warmups, the
//! result's key order, failures.

mod chat_support;

use std::path::Path;

use chat_support::*;
use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::{StepKind, Trial};
use serde_json::{Map, Value, json};

fn settings() -> NativeSettings {
    NativeSettings {
        progress: false,
        auth_token_env: None,
        ..NativeSettings::default()
    }
}

fn ctx<'a>(trial: &'a Trial, server: &ChatServer, out: &Path) -> BenchContext<'a> {
    let port: u16 = server.base_url.rsplit(':').next().unwrap().parse().unwrap();
    BenchContext {
        trial,
        base_url: server.base_url.clone(),
        host: "127.0.0.1".into(),
        port,
        out_dir: out.to_path_buf(),
        hardware: "SIM".into(),
        judge_url: None,
        server_group: None,
    }
}

fn entry(extra: Value) -> Value {
    let mut e = json!({
        "dataset_name": "random",
        "backend": "openai-chat-omni",
        "endpoint": "/v1/chat/completions",
        "random_input_len": 20,
        "random_output_len": 8,
        "ignore_eos": true,
        "percentile-metrics": "ttft,tpot,itl,e2el,audio_rtf,audio_ttfp,audio_duration",
        "num_warmups": 0
    });
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    e
}

fn f(doc: &Map<String, Value>, k: &str) -> f64 {
    doc.get(k)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{k} missing"))
}

/// Within 40 ms of the scripted time (loopback, a loaded 2-core machine).
fn near(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() < 0.04, "{what}: got {got}, want {want}");
}

#[test]
fn text_and_audio_metrics_match_the_script() {
    let server = ChatServer::start(text_audio_script());
    let tmp = tempfile::tempdir().unwrap();
    let t = chat_trial(
        entry(json!({"num_warmups": 2})),
        StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(1).unwrap(),
        },
        1,
    );
    let bench = NativeBench::new(settings());
    bench.supports(&t.entry).unwrap();
    bench.preflight(&t).unwrap();
    let out = bench.run(&ctx(&t, &server, tmp.path()));
    assert_eq!(out.exit, None, "{}", out.log_tail);
    let doc = out.result.unwrap();
    assert_eq!(doc["completed"], 1);
    // Server usage: prompt 77, completion 3.
    assert_eq!(doc["total_input_tokens"], 77);
    assert_eq!(doc["total_output_tokens"], 3);
    // TTFT: the first text message with tokens, at 150 ms (the modality-less chunk at
    // 50 ms and the role chunk at 100 ms do not count).
    near(f(&doc, "mean_ttft_ms") / 1000.0, 0.15, "ttft");
    // 2 tokens 100 ms later: two ITLs of 50 ms; TPOT = their mean.
    assert_eq!(doc["num_itl_samples"], 2);
    near(f(&doc, "mean_itl_ms") / 1000.0, 0.05, "itl");
    near(f(&doc, "mean_tpot_ms") / 1000.0, 0.05, "tpot");
    assert_eq!(doc["num_tpot_samples"], 1);
    // E2EL: the last JSON message (usage) at 550 ms.
    near(f(&doc, "mean_e2el_ms") / 1000.0, 0.55, "e2el");
    // Audio: first chunk completed at 380 ms (split across two writes), last at 480 ms,
    // 4800 frames at 24 kHz = 0.2 s, RTF = 0.48 / 0.2.
    near(f(&doc, "mean_audio_ttfp_ms") / 1000.0, 0.38, "ttfp");
    assert_eq!(doc["total_audio_frames"], 4800);
    assert_eq!(f(&doc, "mean_audio_duration_s"), 0.2);
    assert!(
        (f(&doc, "mean_audio_rtf") - 2.4).abs() < 0.25,
        "{}",
        doc["mean_audio_rtf"]
    );
    // One request: its 3 tokens fall in one second.
    assert_eq!(f(&doc, "max_output_tokens_per_s"), 3.0);
    assert_eq!(
        doc["request_stage_metrics"],
        json!([{"0": {"num_tokens_out": 3, "finish_reason": "length", "audio_frames": null, "audio_duration_s": null},
                "1": {"num_tokens_out": null, "finish_reason": null, "audio_frames": 4800, "audio_duration_s": 0.2}}])
    );
    assert_eq!(doc["dfx_tokenizer"], "approximate");
    // Records: text and audio timelines.
    let recs = read_records(tmp.path());
    assert_eq!(recs.len(), 3);
    let m = recs.iter().find(|r| r["warmup"] == false).unwrap();
    assert_eq!(m["token_n"], json!([1, 2]));
    assert_eq!(m["audio_chunk_frames"], json!([2400, 2400]));
    assert_eq!(m["prompt_len_source"], "server");
    // Warmups resend the first request's body without a request id.
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    let ids: Vec<Option<&str>> = seen
        .iter()
        .map(|s| s.headers.get("x-request-id").and_then(|v| v.to_str().ok()))
        .collect();
    assert_eq!(ids.iter().filter(|i| i.is_none()).count(), 2);
    assert!(
        ids.iter()
            .flatten()
            .all(|i| i.starts_with("bench-") && i.ends_with('0'))
    );
    assert!(seen.iter().all(|s| s.body == seen[0].body));
    assert_eq!(seen[0].headers["content-type"], "application/json");
}

#[test]
fn body_keys_in_upstream_order() {
    let server = ChatServer::start(text_only_script());
    let tmp = tempfile::tempdir().unwrap();
    let e = entry(json!({"top-p": 0.9, "temperature": 0.5,
        "extra_body": {"modalities": ["text", "audio"], "audio": {"format": "wav"}}}));
    let t = chat_trial(
        e,
        StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(1).unwrap(),
        },
        1,
    );
    let out = NativeBench::new(settings()).run(&ctx(&t, &server, tmp.path()));
    assert_eq!(out.exit, None, "{}", out.log_tail);
    let seen = server.seen.lock().unwrap();
    let body: Map<String, Value> = serde_json::from_slice(&seen[0].body).unwrap();
    let keys: Vec<&str> = body.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "model",
            "messages",
            "temperature",
            "max_tokens",
            "stream",
            "stream_options",
            "ignore_eos",
            "top_p",
            "modalities",
            "audio",
            "return_stage_metrics"
        ]
    );
    // The flag overwrites the hard-coded 0.0 in place.
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(
        body["stream_options"],
        json!({"include_usage": true, "continuous_usage_stats": true})
    );
    let content = &body["messages"][0]["content"];
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(content[0]["type"], "text");
    // Approximate tokenizer: 20 words, max_tokens = the sampled output length (ratio 0).
    assert_eq!(content[0]["text"].as_str().unwrap().split(' ').count(), 20);
    assert_eq!(body["max_tokens"], 8);
}

#[test]
fn text_only_stream_has_zero_audio_and_upstream_key_order() {
    let server = ChatServer::start(text_only_script());
    let tmp = tempfile::tempdir().unwrap();
    let e = entry(
        json!({"percentile-metrics": "ttft,tpot,itl,e2el", "extra_body": {"modalities": ["text"]}}),
    );
    let t = chat_trial(
        e,
        StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(2).unwrap(),
        },
        2,
    );
    let out = NativeBench::new(settings()).run(&ctx(&t, &server, tmp.path()));
    let doc = out.result.unwrap();
    assert_eq!(doc["completed"], 2);
    near(f(&doc, "mean_ttft_ms") / 1000.0, 0.2, "ttft");
    near(f(&doc, "mean_itl_ms") / 1000.0, 0.1, "itl");
    near(f(&doc, "mean_e2el_ms") / 1000.0, 0.52, "e2el");
    assert_eq!(doc["total_output_tokens"], 8);
    assert_eq!(doc["num_itl_samples"], 6);
    assert_eq!(doc["total_audio_duration_s"], 0.0);
    assert_eq!(doc["num_audio_ttfp_samples"], 2);
    assert!(!doc.contains_key("request_stage_metrics"));
    assert!(!doc.contains_key("mean_audio_rtf"));
    let keys: Vec<&str> = doc.keys().map(String::as_str).collect();
    let want_head = [
        "date",
        "endpoint_type",
        "backend",
        "label",
        "model_id",
        "tokenizer_id",
        "num_prompts",
        "request_rate",
        "burstiness",
        "max_concurrency",
        "duration",
        "completed",
        "failed",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "total_audio_duration_s",
        "total_audio_frames",
        "audio_throughput",
        "total_images",
        "image_throughput",
        "average_pixels_per_image",
    ];
    assert_eq!(&keys[..want_head.len()], want_head);
    let at = |k: &str| {
        keys.iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k}"))
    };
    let order = [
        "stage_durations_p99",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
        "rtfx",
        "num_ttft_samples",
        "num_tpot_samples",
        "num_itl_samples",
        "num_audio_ttfp_samples",
        "num_audio_rtf_samples",
        "mean_ttft_ms",
        "median_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "p99_tpot_ms",
        "mean_itl_ms",
        "p99_itl_ms",
        "mean_e2el_ms",
        "p99_e2el_ms",
        "peak_inflight",
        "result_source",
    ];
    for w in order.windows(2) {
        assert!(at(w[0]) < at(w[1]), "{} before {}", w[0], w[1]);
    }
    let block = std::fs::read_to_string(tmp.path().join("bench.log")).unwrap();
    for line in [
        "================== Text Result ===================",
        "Mean TTFT (ms):",
        "Mean ITL (ms):",
        "Total generated tokens:                  8",
        "Time per Output Token (excl. 1st token)",
    ] {
        assert!(block.contains(line), "{line} not in {block}");
    }
    assert!(block.contains("token counts are approximate"));
}

#[test]
fn error_chunk_fails_the_request() {
    let server = ChatServer::start(error_script());
    let tmp = tempfile::tempdir().unwrap();
    let t = chat_trial(
        entry(json!({})),
        StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(1).unwrap(),
        },
        2,
    );
    let out = NativeBench::new(settings()).run(&ctx(&t, &server, tmp.path()));
    let doc = out.result.unwrap();
    assert_eq!(doc["completed"], 0);
    assert_eq!(doc["failed"], 2);
    assert_eq!(doc["error_counts"], json!({"stream_error": 2}));
    assert!(
        out.errors[0].contains("engine overloaded"),
        "{:?}",
        out.errors
    );
    // Nothing succeeded: no text statistics; E2EL and duration stay with zeros.
    assert!(!doc.contains_key("mean_ttft_ms"));
    assert_eq!(doc["mean_e2el_ms"], 0.0);
    assert_eq!(doc["total_audio_duration_s"], 0);
}

#[test]
fn malformed_stream_and_http_error_fail() {
    let bad = vec![(
        std::time::Duration::from_millis(10),
        b"data:{\"nospace\":1}\n\n".to_vec(),
    )];
    let server = ChatServer::start(bad);
    let tmp = tempfile::tempdir().unwrap();
    let t = chat_trial(
        entry(json!({})),
        StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(1).unwrap(),
        },
        1,
    );
    let doc = NativeBench::new(settings())
        .run(&ctx(&t, &server, tmp.path()))
        .result
        .unwrap();
    assert_eq!(doc["error_counts"], json!({"malformed": 1}));
    // A wrong endpoint on the server side: 404 from axum.
    let tmp = tempfile::tempdir().unwrap();
    let s2 = ChatServer::start(text_only_script());
    let mut c = ctx(&t, &s2, tmp.path());
    c.base_url.push_str("/nothing");
    let doc = NativeBench::new(settings()).run(&c).result.unwrap();
    assert_eq!(doc["error_counts"], json!({"http_404": 1}));
}

#[test]
fn open_loop_rate_step_runs() {
    let server = ChatServer::start(text_only_script());
    let tmp = tempfile::tempdir().unwrap();
    let t = chat_trial(
        entry(json!({})),
        StepKind::RequestRate { request_rate: 20.0 },
        4,
    );
    let out = NativeBench::new(settings()).run(&ctx(&t, &server, tmp.path()));
    assert!(out.invalid_load.is_none(), "{:?}", out.invalid_load);
    let doc = out.result.unwrap();
    assert_eq!(doc["completed"], 4);
    assert_eq!(doc["request_rate"], 20.0);
    let recs = read_records(tmp.path());
    assert!(
        recs.iter().all(|r| r["lag_s"].as_f64().unwrap() < 0.2),
        "{recs:?}"
    );
}

#[test]
fn a_stalled_stream_ends_the_step_early() {
    use std::time::{Duration, Instant};
    // One text event, then nothing for a minute.
    let event = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n".to_vec();
    let script = vec![
        (Duration::from_millis(10), event),
        (Duration::from_secs(60), b"data: [DONE]\n\n".to_vec()),
    ];
    let server = ChatServer::start(script);
    let tmp = tempfile::tempdir().unwrap();
    let t = chat_trial(
        entry(json!({})),
        StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(1).unwrap(),
        },
        5,
    );
    let s = NativeSettings {
        stall: dfx_bench::native::stall::StallRule {
            window: Duration::from_millis(500),
            floor: 64,
            in_a_row: 3,
        },
        ..settings()
    };
    let started = Instant::now();
    let out = NativeBench::new(s).run(&ctx(&t, &server, tmp.path()));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "not the read timeout's 60 s"
    );
    assert!(
        out.errors[0].starts_with("server stalled: no stream made progress"),
        "{:?}",
        out.errors
    );
    assert!(
        out.errors[0].contains("not sent 4; last: stream stalled"),
        "{:?}",
        out.errors
    );
    let doc = out.result.unwrap();
    assert_eq!(doc["error_counts"], json!({"stall": 1}));
}

/// `goodput` on a chat-omni step: the scripted stream (TTFT 150 ms, TPOT 50 ms, E2EL
/// 550 ms, audio TTFP 380 ms, RTF 2.4) meets generous SLOs on every figure and misses an
/// RTF of 1; without `goodput` the result keeps `null` and no `slo_attainment`.
#[test]
fn goodput_counts_chat_requests_meeting_every_slo() {
    let server = ChatServer::start(text_audio_script());
    let bench = NativeBench::new(settings());
    let run = |goodput: Value| {
        let tmp = tempfile::tempdir().unwrap();
        let t = chat_trial(
            entry(json!({"goodput": goodput})),
            StepKind::Concurrency {
                max_concurrency: std::num::NonZeroU32::new(2).unwrap(),
            },
            2,
        );
        bench.preflight(&t).unwrap();
        let out = bench.run(&ctx(&t, &server, tmp.path()));
        assert_eq!(out.exit, None, "{}", out.log_tail);
        out.result.unwrap()
    };
    let met = run(json!(
        "ttft:2000 tpot:2000 e2el:10000 audio_ttfp:10000 audio_rtf:100"
    ));
    assert_eq!(met["completed"], 2);
    assert_eq!(met["request_goodput"], met["request_throughput"]);
    assert!(f(&met, "request_goodput") > 0.0);
    assert_eq!(f(&met, "slo_attainment"), 1.0);
    let missed = run(json!(["e2el:10000", "audio_rtf:1"]));
    assert_eq!(f(&missed, "request_goodput"), 0.0);
    assert_eq!(f(&missed, "slo_attainment"), 0.0);
    let none = run(Value::Null);
    assert!(none["request_goodput"].is_null());
    assert!(!none.contains_key("slo_attainment"));
}

/// The load keys on a chat step, on the one scheduler: a burst of 6 half-second streams
/// against an open-loop cap of 2 with `saturation: "fail"`: 2 sent, 4 refused and
/// recorded, the step failed with the gate's line, and the load keys written.
#[test]
fn a_chat_burst_meets_the_cap_and_the_saturation_gate() {
    use dfx_core::plan::{LoadShape, LoadSpec, Saturation};
    let server = ChatServer::start(text_only_script());
    let tmp = tempfile::tempdir().unwrap();
    let mut t = chat_trial(
        entry(json!({})),
        StepKind::RequestRate { request_rate: 1.0 },
        6,
    );
    let mut e = (*t.entry).clone();
    e.load = LoadSpec {
        shape: LoadShape::Burst,
        open_loop_max_concurrency: std::num::NonZeroU32::new(2),
        saturation: Saturation::Fail,
    };
    t.entry = std::sync::Arc::new(e);
    let bench = NativeBench::new(settings());
    bench.supports(&t.entry).expect("chat takes the load keys");
    let out = bench.run(&ctx(&t, &server, tmp.path()));
    let doc = out.result.unwrap();
    assert_eq!(doc["completed"], 2, "{doc:?}");
    assert_eq!(doc["failed"], 4);
    assert_eq!(doc["load_shape"], "burst");
    assert_eq!(doc["saturated_requests"], 4);
    let first = "load generator saturated: 4 arrivals found max_concurrency=2 requests in flight";
    assert_eq!(out.errors, vec![first.to_string()]);
    let recs = read_records(tmp.path());
    let refused = recs
        .iter()
        .filter(|r| r["error_class"] == "saturated")
        .count();
    assert_eq!(refused, 4, "{recs:?}");
    // Without load keys a chat result keeps upstream's keys only.
    let plain = chat_trial(
        entry(json!({})),
        StepKind::RequestRate { request_rate: 20.0 },
        2,
    );
    let tmp2 = tempfile::tempdir().unwrap();
    let doc = bench
        .run(&ctx(&plain, &server, tmp2.path()))
        .result
        .unwrap();
    assert!(doc.get("load_shape").is_none(), "{doc:?}");
}
