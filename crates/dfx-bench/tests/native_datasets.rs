//! The shipped datasets and dataset resolution through the whole bench: bodies for the
//! three task types, `--dataset-root` mapping of HF ids, the config-folder fallback, the
//! auth header, and the error that names every place looked at.

mod native_support;

use std::path::{Path, PathBuf};

use base64::Engine;
use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use native_support::*;
use serde_json::Value;

fn repo_datasets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../perf-configs/datasets")
}

fn ctx<'a>(t: &'a dfx_core::plan::Trial, s: &Scripted, out: &Path) -> BenchContext<'a> {
    let port = s.base_url.rsplit(':').next().unwrap().parse().unwrap();
    BenchContext {
        trial: t,
        base_url: s.base_url.clone(),
        host: "127.0.0.1".into(),
        port,
        out_dir: out.to_path_buf(),
        hardware: "SIM".into(),
        judge_url: None,
        server_group: None,
    }
}

fn quiet() -> NativeSettings {
    NativeSettings {
        auth_token_env: None,
        progress: false,
        ..NativeSettings::default()
    }
}

#[test]
fn voice_clone_from_shipped_subset_via_dataset_root() {
    let server = Scripted::start();
    let tmp = tempfile::tempdir().unwrap();
    let t = trial(TrialSpec {
        dataset_name: "seed-tts",
        dataset_path: "linyueqian/seed-tts-eval-subset",
        config_file: tmp.path().join("elsewhere/test.json"),
        num_prompts: 12, // more than the 10 rows: oversampled
        kind: dfx_core::plan::StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(4).unwrap(),
        },
        extra_body: Some(serde_json::json!({"seed": 1})),
        ..TrialSpec::default()
    });
    // The token variable: PATH is always set, and the test can check it never leaks.
    let s = NativeSettings {
        dataset_roots: vec![tmp.path().join("nothing-here"), repo_datasets()],
        auth_token_env: Some("PATH".into()),
        ..quiet()
    };
    let out = tmp.path().join("out");
    let outcome = NativeBench::new(s).run(&ctx(&t, &server, &out));
    assert_eq!(outcome.exit, None, "{}", outcome.log_tail);
    assert_eq!(outcome.result.unwrap()["completed"], 12);
    let seen = server.seen.lock().unwrap().clone();
    let token = std::env::var("PATH").unwrap();
    for s in &seen {
        assert_eq!(
            s.headers["authorization"].to_str().unwrap(),
            format!("Bearer {token}")
        );
        let keys: Vec<&str> = s.body.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "model",
                "input",
                "stream",
                "stream_format",
                "response_format",
                "seed",
                "ref_audio",
                "ref_text",
                "task_type",
                "language",
                "max_new_tokens"
            ]
        );
        assert_eq!(s.body["task_type"], "Base");
        assert_eq!(s.body["language"], "English");
        assert_eq!(s.body["max_new_tokens"], 2048);
        let url = s.body["ref_audio"].as_str().unwrap();
        let wav = base64::engine::general_purpose::STANDARD
            .decode(url.strip_prefix("data:audio/wav;base64,").unwrap())
            .unwrap();
        assert_eq!(&wav[..4], b"RIFF", "the whole WAV file");
        assert!(wav.len() > 1000);
    }
    let distinct: std::collections::HashSet<&Value> =
        seen.iter().map(|s| &s.body["input"]).collect();
    assert_eq!(
        distinct.len(),
        10,
        "all 10 rows used before oversampling repeats any"
    );
    for f in ["records.jsonl", "bench.log"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(!text.contains(&token), "the token leaked into {f}");
    }
}

#[test]
fn design_and_smoke_sets_resolve_next_to_the_config() {
    let server = Scripted::start();
    let tmp = tempfile::tempdir().unwrap();
    // perf-configs/<config>.json with an upstream path: found as <config dir>/datasets/<name>.
    let config = repo_datasets().join("../test_tts.json");
    let t = trial(TrialSpec {
        dataset_name: "seed-tts-design",
        dataset_path: "benchmarks/build_dataset/seed_tts_design",
        config_file: config.clone(),
        num_prompts: 2,
        extra_body: Some(serde_json::json!({"task_type": "VoiceDesign", "language": "English"})),
        ..TrialSpec::default()
    });
    let out = tmp.path().join("design");
    let outcome = NativeBench::new(quiet()).run(&ctx(&t, &server, &out));
    assert_eq!(outcome.exit, None, "{}", outcome.log_tail);
    let seen = server.seen.lock().unwrap().clone();
    let b = &seen.last().unwrap().body;
    let keys: Vec<&str> = b.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "model",
            "input",
            "stream",
            "stream_format",
            "response_format",
            "task_type",
            "language",
            "instructions",
            "max_new_tokens"
        ]
    );
    assert!(b["instructions"].as_str().unwrap().len() > 10);
    // The smoke set: 30 rows of 40–200 characters.
    let meta = std::fs::read_to_string(repo_datasets().join("seed_tts_smoke/en/meta.lst")).unwrap();
    let texts: Vec<&str> = meta
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('|').nth(3).unwrap())
        .collect();
    assert_eq!(texts.len(), 30);
    assert!(
        texts.iter().all(|t| (40..=200).contains(&t.len())),
        "{texts:?}"
    );
}

#[test]
fn missing_dataset_leaves_no_result_and_names_every_place() {
    let tmp = tempfile::tempdir().unwrap();
    let t = trial(TrialSpec {
        dataset_path: "someone/not-there",
        config_file: tmp.path().join("cfg/test.json"),
        ..TrialSpec::default()
    });
    let c = BenchContext {
        trial: &t,
        base_url: "http://127.0.0.1:9".into(),
        host: "127.0.0.1".into(),
        port: 9,
        out_dir: tmp.path().join("out"),
        hardware: "SIM".into(),
        judge_url: None,
        server_group: None,
    };
    let s = NativeSettings {
        dataset_roots: vec![tmp.path().join("root")],
        ..quiet()
    };
    let outcome = NativeBench::new(s).run(&c);
    assert!(outcome.result.is_none());
    let exit = outcome.exit.unwrap().to_string();
    for place in [
        "cfg/someone/not-there",
        "root/someone/not-there",
        "root/not-there",
        "datasets--someone--not-there",
    ] {
        assert!(exit.contains(place), "{place} not in {exit}");
    }
    assert!(exit.contains("en/meta.lst"));
    assert!(
        outcome
            .log_tail
            .contains("dataset \"someone/not-there\" not found")
    );
    assert!(
        std::fs::read_to_string(tmp.path().join("out/bench.log"))
            .unwrap()
            .contains("not found")
    );
}

#[test]
fn supports_names_backend_and_dataset() {
    let b = NativeBench::new(quiet());
    let mut entry = (*trial(TrialSpec::default()).entry).clone();
    assert!(b.supports(&entry).is_ok());
    entry.dataset_name = Some("random".into());
    entry.backend = Some("openai-foo".into());
    let why = b.supports(&entry).unwrap_err().to_string();
    assert_eq!(
        why,
        "native bench implements backend openai-audio-speech with datasets seed-tts, seed-tts-text, seed-tts-design; got backend openai-foo dataset random"
    );
    // A chat entry the chat backend cannot serve names the endpoint it needs.
    entry.backend = Some("openai-chat-omni".into());
    let why = b.supports(&entry).unwrap_err().to_string();
    assert!(
        why.contains("endpoint /v1/chat/completions only; got /v1/audio/speech"),
        "{why}"
    );
}
