use super::*;
use crate::diag::{Ctx, Errs};
use serde_json::json;
use serde_json::{Map, Value};
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
        case::CASE,
        &mut errs,
    );
    let text = errs[0].to_string();
    assert!(
        text.contains("key `sever_params`: unknown case key")
            && text.contains("closest: server_params"),
        "{text}"
    );
}

/// The field names a raw serde struct reads (what its `Deserialize` asks for).
fn fields_of<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    struct Fields(Option<&'static [&'static str]>);
    impl<'de> serde::Deserializer<'de> for &mut Fields {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: serde::de::Visitor<'de>>(
            self,
            _: V,
        ) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(serde::de::Error::custom("fields read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut f = Fields(None);
    let _ = T::deserialize(&mut f);
    f.0.expect("a struct")
}

#[test]
fn every_key_the_loader_reads_is_in_its_table() {
    use crate::config::raw::{RawDiffusionEntry, RawOmniEntry, RawServerParams};
    let server: Vec<&str> = case::SERVER_PARAMS.iter().map(|k| k.name).collect();
    for f in fields_of::<RawServerParams>() {
        assert!(
            server.contains(f),
            "server_params.{f} is read but not in the table"
        );
    }
    let mut omni = EntryKind::Omni
        .own_keys()
        .chain(entry::READ_FLAGS.iter().map(|k| k.name));
    let omni: Vec<String> = omni.by_ref().map(as_flag).collect();
    for f in fields_of::<RawOmniEntry>() {
        let own = omni.contains(&as_flag(f));
        assert!(own, "omni entry key {f} is read but not in the entry table");
    }
    for f in fields_of::<RawDiffusionEntry>() {
        assert!(
            EntryKind::Diffusion.knows(f),
            "diffusion key {f} is read but unknown"
        );
    }
}

/// The string literals of the function `name` in `file` (under `src/`), a body that ends
/// at the first line `close` (`}` of a free function, `    }` of a method).
fn literals_of(file: &str, name: &str, close: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(file);
    let text = std::fs::read_to_string(path).unwrap();
    let start = text.find(&format!("fn {name}(")).expect(name);
    let body = &text[start..];
    let end = body.find(&format!("\n{close}\n")).expect(close);
    let mut parts = body[..end].split('"').skip(1).step_by(2);
    std::iter::from_fn(|| parts.next())
        .filter(|l| l.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(String::from)
        .collect()
}

/// The native-duplex keys are read by hand from the raw entry (`native_duplex_entry`,
/// `DuplexKeys::read`): every key those read is a row of the runner's table, so none is
/// refused as unknown before it is read.
#[test]
fn every_native_duplex_key_read_is_in_its_table() {
    let mut read = literals_of("config/runners.rs", "native_duplex_entry", "}");
    read.extend(literals_of("runner_keys.rs", "read", "    }"));
    assert!(read.iter().any(|k| k == "timeout_s") && read.iter().any(|k| k == "workload"));
    for key in &read {
        assert!(
            EntryKind::NativeDuplex.knows(key),
            "native-duplex key `{key}` is read but not in the table"
        );
    }
}

#[test]
fn the_loader_accepts_every_row_and_nothing_else() {
    for kind in [
        EntryKind::Omni,
        EntryKind::Diffusion,
        EntryKind::NativeDuplex,
        EntryKind::DiffusionSoak,
    ] {
        let rows: Vec<&str> = kind.own_keys().collect();
        let entry: Map<String, Value> = rows.iter().map(|k| (k.to_string(), json!(1))).collect();
        assert_eq!(
            errors(kind, Value::Object(entry)),
            Vec::<String>::new(),
            "{kind:?}"
        );
        let e = errors(kind, json!({"zz_not_a_key": 1}));
        assert!(
            e.len() == 1 && e[0].contains("unknown entry key"),
            "{kind:?}: {e:?}"
        );
    }
    for t in tables()
        .iter()
        .filter(|t| t.flags.is_none() && t.place != "capacity")
    {
        let mut errs = Errs::new();
        let ctx = Ctx::new(Path::new("t.json")).case(0);
        let mut obj: Map<String, Value> =
            t.rows().map(|k| (k.name.to_string(), json!(1))).collect();
        check_keys(&ctx, ("", t.place), &obj, t.parts[0], &mut errs);
        assert!(errs.is_empty(), "{}: {errs:?}", t.place);
        obj.insert("zz_not_a_key".into(), json!(1));
        check_keys(&ctx, ("", t.place), &obj, t.parts[0], &mut errs);
        assert_eq!(errs.len(), 1, "{}", t.place);
    }
}

#[test]
fn the_flags_dfx_perf_reads_are_bench_flags_and_newer_ones_are_not() {
    let flags = vllm_bench_flags();
    for k in entry::READ_FLAGS {
        assert!(
            flags.contains(&k.name.replace('_', "-").as_str()),
            "{}",
            k.name
        );
    }
    for k in entry::NEWER_FLAGS {
        assert!(
            !flags.contains(&k.name.replace('_', "-").as_str()),
            "{}",
            k.name
        );
    }
}

/// Every `.rs` file under `dir`, except the key tables themselves.
fn sources(dir: &Path, out: &mut String) {
    for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let p = e.path();
        if p.ends_with("known_keys") {
            continue;
        }
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push_str(&std::fs::read_to_string(&p).unwrap());
        }
    }
}

/// The named rows of the key tables' sources: (constant, key), from
/// `const NAME: KeySpec = KeySpec::new("key", …`.
fn named_rows() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config/known_keys");
    let mut rows = Vec::new();
    for file in ["case.rs", "entry.rs", "runners.rs"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        for part in text.split("const ").skip(1) {
            let Some((ident, rest)) = part.split_once(": KeySpec =") else {
                continue;
            };
            if let Some(key) = rest.split('"').nth(1) {
                rows.push((ident.trim().to_string(), key.to_string()));
            }
        }
    }
    rows
}

#[test]
fn every_row_names_a_key_some_code_reads() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut code = String::new();
    for krate in ["dfx-core", "dfx-bench", "dfx-harness"] {
        sources(&crates.join(krate).join("src"), &mut code);
    }
    let named = named_rows();
    assert!(
        named
            .iter()
            .any(|(c, k)| c == "NUM_WARMUPS" && k == "num_warmups")
    );
    // A read: the key as a literal, a raw struct's field, or a named row's `.name`.
    let read = |key: &str| {
        let field = format!("pub {}: Option<Value>", key.replace('-', "_"));
        let by_row = named
            .iter()
            .any(|(c, k)| k == key && code.contains(&format!("{c}.name")));
        code.contains(&format!("\"{key}\"")) || code.contains(&field) || by_row
    };
    for t in tables() {
        // Upstream's keys and the flags an external bench passes on from the raw map are
        // read by no dfx-perf code of their own.
        let own = |k: &&KeySpec| {
            ![UPSTREAM_ONLY, EXTERNAL_VLLM, EXTERNAL_DIFFUSION].contains(&k.consumer)
        };
        for k in t.rows().filter(own) {
            assert!(
                read(k.name),
                "{} key `{}`: no code reads it (mark it UPSTREAM_ONLY or remove it)",
                t.place,
                k.name
            );
        }
    }
}

#[test]
fn every_bound_is_printed_from_its_row() {
    let warmups = entry::NUM_WARMUPS.bound.unwrap().text();
    assert_eq!(warmups, format!("0 – {}", crate::bounds::MAX_WARMUPS));
    assert_eq!(entry::SEED.bound.unwrap().text(), "0 – 2^64 − 1");
    let timeout = case::READY_TIMEOUT_S.bound.unwrap().text();
    assert_eq!(timeout, "1 – 604800 s");
    for t in tables() {
        for k in t.rows() {
            if let Some(b) = k.bound {
                assert!(!b.text().is_empty(), "{}", k.name);
            }
        }
    }
}
