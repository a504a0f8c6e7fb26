//! Compatibility of the native bench's result document and stdout block with the real
//! output of `vllm bench serve --omni` (`tests/reference/vllm-bench/` of the repository).

use dfx_bench::native::aggregate::{self, StepFacts, StepHeader};
use dfx_bench::native::record::{Ending, Identity, RequestRecord, Sending};
use dfx_bench::native::selection::Selection;
use dfx_bench::native::summary;
use dfx_core::result::ResultDoc;
use serde_json::Value;

fn fixture(name: &str) -> String {
    let dir = dfx_core::reference::reference_dir().unwrap_or_else(|e| panic!("{e}"));
    let p = dir.join("vllm-bench").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn doc(name: &str) -> ResultDoc {
    serde_json::from_str(&fixture(name)).unwrap()
}

/// Keys only `--save-detailed` writes (the native bench has records.jsonl instead).
const DETAILED: [&str; 7] = [
    "input_lens",
    "start_times",
    "output_lens",
    "ttfts",
    "itls",
    "generated_texts",
    "errors",
];

/// dfx-perf's keys after the upstream ones, in order, for metric percentiles `ps`.
fn extra_keys(ps: &[&str], underrun_selected: bool, any_ok: bool) -> Vec<String> {
    let mut k = vec![
        "audio_continuity_ok_rate".to_string(),
        "num_audio_continuity_samples".into(),
        "audio_skipped_requests".into(),
    ];
    if !underrun_selected && any_ok {
        k.push("mean_audio_underrun_s".into());
        k.push("median_audio_underrun_s".into());
        k.extend(ps.iter().map(|p| format!("p{p}_audio_underrun_s")));
    }
    if any_ok {
        k.push("std_audio_underrun_s".into());
    }
    k.push("num_ttfa_audible_samples".into());
    k.push("mean_ttfa_audible_ms".into());
    k.push("median_ttfa_audible_ms".into());
    k.extend(ps.iter().map(|p| format!("p{p}_ttfa_audible_ms")));
    for s in [
        "peak_inflight",
        "generator_lag_p99_ms",
        "generator_lag_max_ms",
        "num_empty_audio",
        "error_counts",
        "audio_sample_rate",
        "result_source",
    ] {
        k.push(s.into());
    }
    k
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Same keys in the same order with the same JSON types (the upstream part), then exactly
/// dfx-perf's extras.
fn assert_compatible(ours: &ResultDoc, reference: &ResultDoc, extras: &[String]) {
    let want: Vec<(&String, &Value)> = reference
        .iter()
        .filter(|(k, _)| !DETAILED.contains(&k.as_str()))
        .collect();
    let got: Vec<(&String, &Value)> = ours.iter().collect();
    let got_keys: Vec<&String> = got.iter().map(|(k, _)| *k).collect();
    let want_keys: Vec<&String> = want.iter().map(|(k, _)| *k).collect();
    assert!(
        got.len() >= want.len(),
        "ours {got_keys:?}\nwant {want_keys:?}"
    );
    assert_eq!(
        &got_keys[..want.len()],
        &want_keys[..],
        "upstream key order"
    );
    for ((k, a), (_, b)) in got.iter().zip(&want) {
        assert_eq!(kind(a), kind(b), "type of {k}: ours {a}, upstream {b}");
        if let (Value::Array(x), Value::Array(y)) = (a, b) {
            assert_eq!(x, y, "{k}");
        }
    }
    let rest: Vec<&String> = got_keys[want.len()..].to_vec();
    let extras: Vec<&String> = extras.iter().collect();
    assert_eq!(rest, extras, "dfx-perf extra keys");
    assert_eq!(ours["result_source"], "native");
    for runner_key in [
        "baseline",
        "random_input_len",
        "random_output_len",
        "Hardware",
    ] {
        assert!(
            !ours.contains_key(runner_key),
            "{runner_key} is the harness's"
        );
    }
}

/// A measured request. `audio_s` > 0 makes a stream of 0.1 s chunks every 0.1 s.
fn rec(index: usize, ok: bool, audio_s: f64, send: f64, ttfp: f64, e2el: f64) -> RequestRecord {
    let frames = (audio_s * 24_000.0).round() as u64;
    let chunks = (frames / 2400) as usize;
    let chunk_t: Vec<f64> = (0..chunks).map(|i| ttfp + 0.1 * i as f64).collect();
    let continuous = (ok && chunks > 0).then_some(true);
    RequestRecord {
        id: Identity {
            index,
            warmup: false,
            request_id: Some(format!("bench-test-{index}")),
        },
        sample_id: format!("s{index}"),
        text_len: 26,
        sent: Sending {
            planned_send_s: send,
            actual_send_s: send,
            queue_s: 0.0,
            saturated: false,
            lag_s: 0.0001,
        },
        dispatch_lag_s: 0.00005,
        connect_s: None,
        end: Ending {
            end_s: send + e2el,
            status: Some(if ok { 200 } else { 500 }),
            ok,
            error_class: (!ok).then(|| "http_500".into()),
            error: (!ok).then(|| "HTTP 500 Internal Server Error: Internal Fake Error".into()),
        },
        empty: ok && frames == 0,
        bytes: frames * 2,
        sample_rate: 24_000,
        sample_width: 2,
        channels: 1,
        audio_frames: if ok { frames } else { 0 },
        audio_s: if ok { audio_s } else { 0.0 },
        ttfp_s: (chunks > 0).then_some(ttfp),
        e2el_s: ok.then_some(e2el),
        rtf: ok.then(|| if audio_s > 0.0 { e2el / audio_s } else { 0.0 }),
        underrun_s: continuous.map(|_| 0.0),
        underrun_events: continuous.map(|_| 0),
        continuous_50ms: continuous,
        continuous_100ms: continuous,
        continuous_200ms: continuous,
        leading_silence_s: 0.0,
        ttfa_audible_s: (ok && chunks > 0).then_some(ttfp),
        gap_max_s: None,
        pcm_peak: 0.5,
        pcm_rms: 0.2,
        clipping_ratio: 0.0,
        silence_ratio: 0.0,
        chunk_t_s: chunk_t,
        chunk_bytes: vec![4800; chunks],
        audio: None,
        quality: None,
    }
}

fn facts(rate: Option<f64>, burstiness: f64, c: Option<u32>, n: u64) -> StepFacts {
    StepFacts {
        header: StepHeader {
            date: "20261130-101233".into(),
            backend: "openai-audio-speech".into(),
            model_id: "fake-tts".into(),
            tokenizer_id: "fake-tts".into(),
            num_prompts: n,
            request_rate: rate,
            burstiness,
            max_concurrency: c.and_then(std::num::NonZeroU32::new),
        },
        sample_rate: 24_000,
        peak_inflight: c.unwrap_or(4) as usize,
        goodput: None,
        input_tokens: 0,
    }
}

#[test]
fn c2_with_failure_and_empty_bodies_matches_reference_keys_and_values() {
    let sel = Selection::parse(
        Some("ttft,e2el,audio_rtf,audio_ttfp,audio_duration"),
        Some("50,90,99"),
    )
    .unwrap();
    // One HTTP 500, three empty 200s, two 0.5 s streams (the reference run's shape).
    let records = vec![
        rec(0, false, 0.0, 0.0, 0.0, 0.002),
        rec(1, true, 0.0, 0.0, 0.0, 0.002),
        rec(2, true, 0.5, 0.003, 0.153, 0.557),
        rec(3, true, 0.5, 0.004, 0.153, 0.558),
        rec(4, true, 0.0, 0.56, 0.0, 0.002),
        rec(5, true, 0.0, 0.561, 0.0, 0.002),
    ];
    let d = aggregate::result_doc(&records, &facts(None, 1.0, Some(2), 6), &sel);
    let reference = doc("result-c2-with-failure-detailed.json");
    assert_compatible(
        &d,
        &reference,
        &extra_keys(&["50", "90", "99"], false, true),
    );
    for key in [
        "completed",
        "failed",
        "total_audio_duration_s",
        "total_audio_frames",
        "max_concurrent_requests",
        "num_audio_ttfp_samples",
        "mean_audio_duration_s",
        "median_audio_duration_s",
        "p90_audio_duration_s",
        "median_audio_rtf",
        "median_audio_ttfp_ms",
    ] {
        assert_eq!(d[key], reference[key], "{key}");
    }
    assert_eq!(d["num_empty_audio"], 3);
    assert_eq!(
        d["audio_skipped_requests"], 3,
        "upstream's name for the same count"
    );
    assert_eq!(d["error_counts"], serde_json::json!({"http_500": 1}));
    // Upstream counts empty streams as continuous; dfx-perf measures only the two streams.
    assert_eq!(aggregate::upstream_continuity_ok_rate(&records), 1.0);
    assert_eq!(d["audio_continuity_ok_rate"], 1.0);
    assert_eq!(d["num_audio_continuity_samples"], 2);
    assert_eq!(d["num_ttfa_audible_samples"], 2);
}

#[test]
fn open_loop_with_underrun_selected_matches_reference() {
    let sel = Selection::parse(
        Some("e2el,audio_ttfp,audio_rtf,audio_duration,audio_underrun"),
        None,
    )
    .unwrap();
    let records: Vec<RequestRecord> = (0..4)
        .map(|i| rec(i, true, 0.5, 0.05 * i as f64, 0.153, 0.56))
        .collect();
    let d = aggregate::result_doc(&records, &facts(Some(20.0), 0.5, None, 4), &sel);
    let reference = doc("result-rate20-burstiness0.5.json");
    assert_compatible(&d, &reference, &extra_keys(&["99"], true, true));
    assert_eq!(d["request_rate"], 20.0);
    assert_eq!(d["burstiness"], 0.5);
    assert_eq!(
        d["total_audio_duration_s"],
        reference["total_audio_duration_s"]
    );
    assert_eq!(d["max_concurrent_requests"], 4);
}

#[test]
fn all_failed_keeps_only_e2el_and_duration_blocks() {
    let sel =
        Selection::parse(Some("ttft,e2el,audio_rtf,audio_ttfp,audio_duration"), None).unwrap();
    let records = vec![
        rec(0, false, 0.0, 0.0, 0.0, 0.003),
        rec(1, false, 0.0, 0.0, 0.0, 0.007),
    ];
    let d = aggregate::result_doc(&records, &facts(None, 1.0, None, 2), &sel);
    let reference = doc("result-all-failed.json");
    assert_compatible(&d, &reference, &extra_keys(&["99"], false, false));
    assert_eq!(d["total_audio_duration_s"], Value::from(0));
    assert!(
        d["total_audio_duration_s"].is_u64(),
        "integer 0 like Python's sum([])"
    );
    assert_eq!(d["completed"], 0);
    assert_eq!(d["request_throughput"], 0.0);
    assert_eq!(
        d["audio_continuity_ok_rate"],
        Value::Null,
        "nothing measured is not OK"
    );
    assert_eq!(d["mean_ttfa_audible_ms"], Value::Null);
    assert_eq!(d["error_counts"], serde_json::json!({"http_500": 2}));
    assert!((d["duration"].as_f64().unwrap() - 0.007).abs() < 1e-12);
}

/// Upstream's block without its `Text Result` section: speech produces no tokens, so
/// dfx-perf prints none of those lines (every other line is upstream's, byte for byte).
fn without_token_lines(reference: &str) -> String {
    let mut out = String::new();
    let mut in_text = false;
    for line in reference.lines() {
        if line.starts_with('=') {
            in_text = line.contains(" Text Result ");
        }
        if !in_text {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn stdout_block_matches_reference_layout_byte_for_byte() {
    let cases = [
        (
            "result-c2-with-failure-detailed.json",
            "stdout-c2-with-failure.txt",
            "ttft,e2el,audio_rtf,audio_ttfp,audio_duration",
            "50,90,99",
            1.0,
        ),
        (
            "result-rate20-burstiness0.5.json",
            "stdout-rate20.txt",
            "e2el,audio_ttfp,audio_rtf,audio_duration,audio_underrun",
            "99",
            0.75,
        ),
    ];
    for (result, stdout, metrics, ps, ok_rate) in cases {
        let sel = Selection::parse(Some(metrics), Some(ps)).unwrap();
        let block = summary::serving_block(&doc(result), &sel, ok_rate);
        let want = without_token_lines(&fixture(stdout));
        assert_eq!(
            block.trim_end_matches('\n'),
            want.trim_end_matches('\n'),
            "{stdout}"
        );
    }
}

#[test]
fn stdout_block_of_an_all_failed_run_has_no_rtf_or_ttfp_section() {
    let sel =
        Selection::parse(Some("ttft,e2el,audio_rtf,audio_ttfp,audio_duration"), None).unwrap();
    let block = summary::serving_block(&doc("result-all-failed.json"), &sel, 0.0);
    assert!(block.contains("----------------End-to-end Latency----------------"));
    assert!(block.contains("------------------Audio Duration------------------"));
    assert!(
        !block.contains("AUDIO_RTF") && !block.contains("AUDIO_TTFP"),
        "{block}"
    );
    assert!(
        !block.contains("Maximum request concurrency"),
        "max_concurrency is null"
    );
    assert!(
        block
            .lines()
            .all(|l| l.chars().count() == 50 || l.len() == 51),
        "{block}"
    );
}

/// Upstream's one-second buckets, hand-computed: successes spanning (0, 0.5), (0.2, 1.7),
/// (1.1, 1.2) and (2.5, 2.6) s occupy buckets {0}, {0, 1}, {1}, {2}: the largest holds 2.
/// A failure never counts; the exact peak in flight is a separate key.
#[test]
fn max_concurrent_requests_uses_one_second_buckets() {
    let recs = [
        rec(0, true, 0.5, 0.0, 0.1, 0.5),
        rec(1, true, 0.5, 0.2, 0.1, 1.5),
        rec(2, true, 0.5, 1.1, 0.1, 0.1),
        rec(3, true, 0.5, 2.5, 0.1, 0.1),
        rec(4, false, 0.0, 0.0, 0.0, 3.0),
    ];
    let ok: Vec<&RequestRecord> = recs.iter().filter(|r| r.end.ok).collect();
    assert_eq!(aggregate::max_concurrent_requests(&ok), 2);
    assert_eq!(aggregate::max_concurrent_requests(&[]), 0);
    // Five back-to-back requests inside the first second: 5, although none overlapped.
    let burst: Vec<RequestRecord> = (0..5)
        .map(|i| rec(i, true, 0.1, 0.15 * i as f64, 0.01, 0.1))
        .collect();
    let ok: Vec<&RequestRecord> = burst.iter().collect();
    assert_eq!(aggregate::max_concurrent_requests(&ok), 5);
}

/// The bug "Peak concurrent requests: 20.00" at c=1 beside "Peak in-flight requests: 1":
/// the block printed upstream's one-second-bucket count as the peak. It prints the exact
/// peak in flight when measured, and the bucket count under its own name in the extras.
#[test]
fn the_peak_concurrency_line_is_the_peak_in_flight() {
    let sel = Selection::parse(None, None).unwrap();
    let mut d = doc("result-c2-with-failure-detailed.json");
    d.insert("max_concurrent_requests".into(), 20.into());
    d.insert("peak_inflight".into(), 1.into());
    let block = summary::serving_block(&d, &sel, 1.0);
    let peaks: Vec<&str> = block.lines().filter(|l| l.starts_with("Peak")).collect();
    assert_eq!(peaks.len(), 1, "{block}");
    assert_eq!(peaks[0].split_whitespace().last(), Some("1"), "{block}");
    assert!(
        !block.contains("token"),
        "no token lines for speech:\n{block}"
    );
    let extras = summary::extras_block(&d, &sel);
    assert!(
        extras.contains(&format!(
            "{:<40} {:<10}",
            "Peak requests per 1-s bucket (upstream):", 20
        )),
        "{extras}"
    );
    assert!(!extras.contains("Peak in-flight"), "{extras}");
}

#[test]
fn continuity_rates_upstream_and_measured_only() {
    let mut recs = vec![
        rec(0, true, 0.5, 0.0, 0.1, 0.5),
        rec(1, true, 0.0, 0.0, 0.0, 0.01), // empty: upstream continuous, dfx-perf not measured
        rec(2, false, 0.0, 0.0, 0.0, 0.01),
        rec(3, true, 0.5, 0.0, 0.1, 0.9),
    ];
    recs[3].continuous_100ms = Some(false);
    recs[3].underrun_s = Some(0.4);
    assert!((aggregate::upstream_continuity_ok_rate(&recs) - 2.0 / 3.0).abs() < 1e-12);
    let sel = Selection::parse(None, None).unwrap();
    let d = aggregate::result_doc(&recs, &facts(None, 1.0, Some(2), 4), &sel);
    assert_eq!(d["audio_continuity_ok_rate"], 0.5);
    assert_eq!(d["num_audio_continuity_samples"], 2);
    // Underrun statistics (not selected: dfx-perf's extra keys) over the 3 successes,
    // the empty one counting 0 like upstream.
    assert!((d["mean_audio_underrun_s"].as_f64().unwrap() - 0.4 / 3.0).abs() < 1e-12);
    assert_eq!(d["median_audio_underrun_s"], 0.0);
}
