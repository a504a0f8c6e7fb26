use super::*;
use serde_json::json;
use std::path::Path;

fn errors(kind: EntryKind, entry: Value) -> Vec<String> {
    let mut errs = Errs::new();
    let ctx = Ctx::new(Path::new("t.json")).case(0).entry(0);
    check_entry_keys(&ctx, entry.as_object().unwrap(), kind, &mut errs);
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn the_flag_lists_come_from_the_data_files() {
    let serve = vllm_bench_flags();
    assert!(serve.len() > 100, "{}", serve.len());
    for f in [
        "num-warmups",
        "goodput",
        "seed-tts-locale",
        "omniinteract-evaluate",
    ] {
        assert!(serve.contains(&f), "{f}");
    }
    assert!(!serve.contains(&"help"));
    let diffusion = diffusion_flags();
    for f in [
        "num-inference-steps",
        "bot-task",
        "warmup-requests",
        "extra-body",
    ] {
        assert!(diffusion.contains(&f), "{f}");
    }
}

#[test]
fn flags_runner_keys_and_own_keys_are_known() {
    let entry = json!({
        "dataset_name": "seed-tts", "num_prompts": [4], "max_concurrency": [1],
        "percentile-metrics": "ttft", "ignore_eos": true, "goodput": ["e2el:500"],
        "omniinteract_min_ia_qtf1": 0.2, "connection": "fresh", "cohorts": [],
        "duration_sec": 10, "seed_tts_reference_as_input": true, "baseline": {},
    });
    assert_eq!(errors(EntryKind::Omni, entry), Vec::<String>::new());
    let diffusion = json!({"num-prompts": 1, "bot-task": "x", "warmup-prompt": "p",
                           "enable_negative_prompt": true, "dataset": "random"});
    assert_eq!(
        errors(EntryKind::Diffusion, diffusion),
        Vec::<String>::new()
    );
}

#[test]
fn an_abbreviation_names_the_flag_argparse_would_read() {
    let e = errors(EntryKind::Omni, json!({"num_warmup": 0}));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("key `num_warmup`")
            && e[0].contains("would be read by vllm bench serve as `--num-warmups`")
            && e[0].contains("write the full key")
            && e[0].contains("accepted: num_warmups"),
        "{e:?}"
    );
    let e = errors(EntryKind::Omni, json!({"seed_tts": "en"}));
    assert!(
        e[0].contains("ambiguous abbreviation") && e[0].contains("--seed-tts-locale"),
        "{e:?}"
    );
}

#[test]
fn a_typo_is_refused_with_the_closest_keys() {
    let e = errors(EntryKind::Omni, json!({"datset_name": "seed-tts"}));
    assert!(
        e[0].contains("unknown entry key") && e[0].contains("closest: dataset_name"),
        "{e:?}"
    );
    let e = errors(EntryKind::NativeDuplex, json!({"sesions": 2}));
    assert!(e[0].contains("closest: sessions"), "{e:?}");
    // A vllm bench flag is not a native-duplex key.
    assert_eq!(
        errors(EntryKind::NativeDuplex, json!({"goodput": 1})).len(),
        1
    );
}

#[test]
fn case_and_server_keys_are_checked_with_suggestions() {
    let mut errs = Errs::new();
    let ctx = Ctx::new(Path::new("t.json")).case(0);
    let obj = json!({"sever_params": {}, "test_name": "t"});
    check_keys(
        &ctx,
        ("", "case"),
        obj.as_object().unwrap(),
        CASE_KEYS,
        &mut errs,
    );
    let text = errs[0].to_string();
    assert!(
        text.contains("key `sever_params`: unknown case key")
            && text.contains("closest: server_params"),
        "{text}"
    );
}
