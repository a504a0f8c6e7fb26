//! Every key dfx-perf reads itself refuses a value of the wrong type at load, naming the
//! key: a typo in a value (`"realtime_input": "no"`) is never run as something else.

mod common;

use common::{Fx, tts_case};
use dfx_core::config::known_keys::{
    EXTERNAL_DIFFUSION, EXTERNAL_VLLM, KeySpec, KeyType, UPSTREAM_ONLY, tables,
};
use serde_json::{Value, json};

/// A value no key of type `ty` accepts; `None` for types that take anything.
fn wrong(ty: KeyType) -> Option<Value> {
    match ty {
        KeyType::Bool => Some(json!("no")),
        KeyType::Integer | KeyType::IntegerList | KeyType::Number | KeyType::NumberList => {
            Some(json!("ten"))
        }
        KeyType::String => Some(json!(["a"])),
        KeyType::StringList => Some(json!(5)),
        KeyType::Object => Some(json!(5)),
        KeyType::ObjectList => Some(json!(5)),
        KeyType::AnyJson | KeyType::BenchFlag => None,
    }
}

/// The rows of `place` that dfx-perf reads itself, with a wrong value each.
fn own_rows(place: &str) -> Vec<(&'static KeySpec, Value)> {
    let table = tables().into_iter().find(|t| t.place == place).unwrap();
    table
        .rows()
        .filter(|k| ![UPSTREAM_ONLY, EXTERNAL_VLLM, EXTERNAL_DIFFUSION].contains(&k.consumer))
        .filter_map(|k| wrong(k.ty).map(|v| (k, v)))
        .collect()
}

fn check(fx: &Fx, place: &str, case: impl Fn(&str, Value) -> Value) -> Vec<String> {
    let mut silent = Vec::new();
    for (k, v) in own_rows(place) {
        let errors = match fx.load(&json!([case(k.name, v.clone())]).to_string()) {
            Ok(_) => "loaded".to_string(),
            Err(e) => e.to_string(),
        };
        let named = |key: &str| errors.contains(&format!("key `{key}`"));
        if !named(k.name) && !named(&format!("{place}.{}", k.name)) {
            silent.push(format!(
                "{place}: `{}` = {v} ({:?}): {errors}",
                k.name, k.ty
            ));
        }
    }
    silent
}

#[test]
fn a_value_of_the_wrong_type_is_refused_naming_the_key() {
    let fx = Fx::new();
    let mut silent = check(&fx, "entry (omni dialect)", |key, v| {
        tts_case("t", json!({ key: v }))
    });
    silent.extend(check(&fx, "native-duplex entry", |key, v| {
        let mut e = json!({"name": "c1", "workload": "native-duplex-audio", "sessions": 1,
                           "turns": 1, "warmups": 1, "repeats": 2});
        e[key] = v;
        json!({"test_name": "d", "benchmark_runner": "native-duplex",
               "server_params": {"model": "m"}, "benchmark_params": [e]})
    }));
    silent.extend(check(&fx, "contract entry", |key, v| {
        let mut e = json!({"name": "c"});
        e[key] = v;
        json!({"test_name": "k", "benchmark_runner": "contract",
               "server_params": {"model": "m"}, "benchmark_params": [e]})
    }));
    silent.extend(check(&fx, "case", |key, v| {
        let mut c = tts_case("t", json!({}));
        c[key] = v;
        c
    }));
    silent.extend(check(&fx, "server_params", |key, v| {
        let mut c = tts_case("t", json!({}));
        c["server_params"][key] = v;
        c
    }));
    silent.extend(check(&fx, "stability entry", |key, v| {
        tts_case("t", json!({"duration_sec": 60, key: v}))
    }));
    // A soak takes the omni entry's keys too (the key table says so).
    silent.extend(check(&fx, "entry (omni dialect)", |key, v| {
        let mut e = json!({"duration_sec": 60, "max_concurrency": 1});
        if key == "request_rate" {
            e["max_concurrency"] = Value::Null; // tts_case drops it
        }
        e[key] = v;
        tts_case("t", e)
    }));
    assert!(
        silent.is_empty(),
        "accepted silently:\n{}",
        silent.join("\n")
    );
}
