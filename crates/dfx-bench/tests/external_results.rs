//! Parsing every real `vllm bench serve --omni` result file of the reference data: key
//! order, value types, the keys that disappear when every request failed, the request
//! errors of a `--save-detailed` file.

mod external_support;

use dfx_bench::external::{ResultFileError, read_result, request_errors};
use external_support::*;
use serde_json::Value;

const FILES: [&str; 3] = [
    "result-c2-with-failure-detailed.json",
    "result-rate20-burstiness0.5.json",
    "result-all-failed.json",
];

/// Top-level keys in file order, scanned from the text (independent of serde_json).
fn keys_in_text(text: &str) -> Vec<String> {
    let (mut depth, mut keys, mut chars) = (0i32, Vec::new(), text.char_indices().peekable());
    while let Some((i, c)) = chars.next() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            '"' => {
                let start = i + 1;
                let mut end = start;
                while let Some((j, c)) = chars.next() {
                    if c == '\\' {
                        chars.next();
                    } else if c == '"' {
                        end = j;
                        break;
                    }
                }
                let rest = text[end + 1..].trim_start();
                if depth == 1 && rest.starts_with(':') {
                    keys.push(text[start..end].to_string());
                }
            }
            _ => {}
        }
    }
    keys
}

#[test]
fn all_reference_results_parse_in_key_order_with_their_types() {
    for name in FILES {
        let path = vllm_bench_dir().join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let doc = read_result(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut want = keys_in_text(&text);
        want.push("result_source".into());
        assert_eq!(doc.keys().cloned().collect::<Vec<_>>(), want, "{name}");
        assert_eq!(doc["result_source"], "vllm");
        // Every top-level scalar prints back as written: ints stay ints, floats keep
        // their digits, null and strings stay.
        for (k, v) in doc.iter().filter(|(k, _)| *k != "result_source") {
            if v.is_array() || v.is_object() {
                continue;
            }
            let written = format!("\"{k}\": {}", serde_json::to_string(v).unwrap());
            assert!(text.contains(&written), "{name}: {written} not in the file");
        }
    }
}

#[test]
fn value_types_match_what_vllm_wrote() {
    let read = |n: &str| read_result(&vllm_bench_dir().join(n)).unwrap();
    let c2 = read(FILES[0]);
    assert_eq!(c2["request_rate"], Value::from("inf"));
    assert_eq!(c2["max_concurrency"].as_u64(), Some(2));
    assert!(c2["label"].is_null() && c2["request_goodput"].is_null());
    assert!(c2["total_audio_duration_s"].is_f64());
    assert!(c2["completed"].is_u64() && c2["total_audio_frames"].is_u64());
    assert!(!c2.contains_key("mean_ttft_ms"), "TTS writes no ttft keys");
    let pos = |d: &dfx_core::result::ResultDoc, k: &str| d.keys().position(|x| x == k).unwrap();
    assert!(pos(&c2, "mean_audio_rtf") < pos(&c2, "mean_audio_ttfp_ms"));

    let rate = read(FILES[1]);
    assert!(rate["request_rate"].is_f64() && rate["request_rate"].as_f64() == Some(20.0));
    assert!(rate["max_concurrency"].is_null());
    assert!(rate.contains_key("p99_audio_underrun_s"));
    assert!(pos(&rate, "mean_audio_ttfp_ms") < pos(&rate, "mean_audio_rtf"));

    let failed = read(FILES[2]);
    assert_eq!(failed["completed"], 0);
    assert!(
        failed["total_audio_duration_s"].is_u64(),
        "integer 0 when nothing succeeded"
    );
    assert!(!failed.contains_key("mean_audio_ttfp_ms") && !failed.contains_key("mean_audio_rtf"));
}

#[test]
fn request_errors_come_from_the_detailed_file_only() {
    let read = |n: &str| read_result(&vllm_bench_dir().join(n)).unwrap();
    assert_eq!(request_errors(&read(FILES[0])), ["Internal Fake Error"]);
    assert!(request_errors(&read(FILES[1])).is_empty());
    assert!(request_errors(&read(FILES[2])).is_empty());
}

#[test]
fn unusable_files_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.json");
    assert!(matches!(
        read_result(&missing),
        Err(ResultFileError::Missing(_))
    ));
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"date\": ").unwrap();
    assert!(matches!(
        read_result(&bad),
        Err(ResultFileError::Malformed { .. })
    ));
    let list = dir.path().join("list.json");
    std::fs::write(&list, "[1, 2]").unwrap();
    let err = read_result(&list).unwrap_err();
    assert!(err.to_string().contains("an array, not an object"), "{err}");
}
