//! Nothing panics on any input: fixed garbage shapes, and random mutations of the real
//! configs (seeded, so a failure reproduces).

mod common;

use common::{Fx, json_files, upstream_dir};
use dfx_core::config::load_plan;
use dfx_core::describe::describe_plan;
use serde_json::{Map, Value, json};

/// Loads `text`; panics only if loading panics. Checks every error renders. Returns
/// whether it loaded.
fn survive(fx: &Fx, text: &str) -> bool {
    let f = fx.write("g.json", text);
    match load_plan(&fx.opts(&[f], "H100")) {
        Ok(plan) => {
            let _ = describe_plan(&plan);
            true
        }
        Err(e) => {
            assert!(!e.0.is_empty());
            for err in &e.0 {
                assert!(!err.problem.is_empty(), "{err:?}");
            }
            false
        }
    }
}

#[test]
fn fixed_garbage_shapes() {
    let fx = Fx::new();
    let texts = [
        "",
        " ",
        "null",
        "1",
        "\"x\"",
        "{}",
        "[null]",
        "[1]",
        "[[]]",
        "[{}]",
        "[[{}]]",
        "[{\"test_name\": 1}]",
        "[1e400]",
        "[-0]",
        "{\"a\":",
        "[\"\\ud800\"]",
        r#"[{"test_name":"t","server_params":[],"benchmark_params":{}}]"#,
        r#"[{"test_name":"t","server_params":{"model":{}},"benchmark_params":[null,1,"x",[],{}]}]"#,
        r#"[{"test_name":"t","server_params":{"model":"m"},"benchmark_params":[{"max_concurrency":4294967296,"num_prompts":18446744073709551615}]}]"#,
        r#"[{"test_name":"t","server_params":{"model":"m"},"benchmark_params":[{"max_concurrency":1e10,"request_rate":1e308,"num_prompts":[1.0]}]}]"#,
        r#"[{"test_name":"t","server_params":{"model":"m"},"benchmark_params":[{"max_concurrency":[],"request_rate":[],"num_prompts":[]}]}]"#,
        r#"[{"test_name":"t","server_params":{"model":"m"},"benchmark_params":[{"max_concurrency":1,"num_prompts":1,"baseline":{"H100":{"H100":{"mean_e2el_ms":1}}}}]}]"#,
        r#"[{"test_name":"t","server_params":{"model":"m"},"benchmark_params":[{"max_concurrency":1,"num_prompts":1,"baseline":{"H100":[]}}]}]"#,
        r#"[{"test_name":"t","mark":{"tts":1},"server_type":null,"server_params":{"model":"m","env":[],"serve_args":[[]],"stage_config_name":"../../etc/passwd"},"benchmark_params":[{"num-prompts":"x","max-concurrency":{},"task":[]}]}]"#,
    ];
    for t in texts {
        assert!(!survive(&fx, t), "{t:?} should be refused");
    }
    assert!(survive(&fx, "[]"), "an empty config is an empty plan");
    let odd_names = r#"[{"test_name":"t::x","server_params":{"model":"m"},"benchmark_params":[{"name":"::","max_concurrency":1,"num_prompts":1}]}]"#;
    assert_eq!(fx.load(odd_names).unwrap().trials[0].name, "t::x::__::c1");
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    assert!(!survive(&fx, &deep));
}

/// xorshift64*: tiny, seeded, portable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn palette(rng: &mut Rng) -> Value {
    let all = [
        Value::Null,
        json!(true),
        json!(false),
        json!(0),
        json!(-1),
        json!(1),
        json!(2.5),
        json!(-0.5),
        json!(1e300),
        json!(u64::MAX),
        json!(""),
        json!("x"),
        json!("H100"),
        json!([]),
        json!({}),
        json!([0]),
        json!([1, 2, 3]),
        json!([null]),
        json!({"H100": 1}),
        json!({"8": 1}),
        json!({"mean_e2el_ms": [1]}),
        json!({"H100": {"mean_e2el_ms": {"1": 2}}}),
        json!([[1]]),
        json!({"hardware_marks": {"res": {"cuda": 1}}}),
        json!(["tts", {"hardware_marks": []}]),
    ];
    all[rng.below(all.len())].clone()
}

const KEYS: &[&str] = &[
    "test_name",
    "server_params",
    "benchmark_params",
    "mark",
    "server_type",
    "model",
    "serve_args",
    "extra_cli_args",
    "stage_overrides",
    "use_omni",
    "env",
    "ready_timeout_s",
    "stage_config_name",
    "update",
    "delete",
    "num_prompts",
    "max_concurrency",
    "request_rate",
    "baseline",
    "enabled",
    "name",
    "task",
    "dataset_name",
    "num-prompts",
    "max-concurrency",
    "width",
    "percentile-metrics",
    "extra_body",
    "num_warmups",
    "burstiness",
    "seed",
];

/// Applies one random edit somewhere inside `v`.
fn mutate(v: &mut Value, rng: &mut Rng, depth: usize) {
    let descend = depth < 6 && rng.below(3) != 0;
    match v {
        Value::Array(items) if !items.is_empty() && descend => {
            let i = rng.below(items.len());
            mutate(&mut items[i], rng, depth + 1);
        }
        Value::Object(map) if !map.is_empty() && descend => {
            let k = map.keys().nth(rng.below(map.len())).unwrap().clone();
            mutate(map.get_mut(&k).unwrap(), rng, depth + 1);
        }
        Value::Object(map) => match rng.below(3) {
            0 if !map.is_empty() => {
                let k = map.keys().nth(rng.below(map.len())).unwrap().clone();
                map.remove(&k);
            }
            _ => {
                map.insert(KEYS[rng.below(KEYS.len())].to_string(), palette(rng));
            }
        },
        _ => *v = palette(rng),
    }
}

#[test]
fn random_mutations_of_real_configs_never_panic() {
    let fx = Fx::new();
    let mut seeds: Vec<Value> = json_files(&upstream_dir())
        .iter()
        .chain(std::iter::once(&std::path::PathBuf::from(
            "tests/fixtures/diffusion_dialect.json",
        )))
        .map(|f| serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap())
        .collect();
    seeds.push(Value::Array(vec![Value::Object(Map::new())]));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut loaded, mut refused) = (0, 0);
    for round in 0..400 {
        let mut v = seeds[round % seeds.len()].clone();
        for _ in 0..=rng.below(4) {
            mutate(&mut v, &mut rng, 0);
        }
        let text = v.to_string();
        match std::panic::catch_unwind(|| survive(&fx, &text)) {
            Ok(true) => loaded += 1,
            Ok(false) => refused += 1,
            Err(_) => panic!("round {round} panicked on:\n{text}"),
        }
    }
    // the mutations exercise both paths (a palette key inserted where it is not a known
    // key is refused, so most mutants are)
    assert!(
        loaded > 10 && refused > 100,
        "loaded {loaded}, refused {refused}"
    );
}

#[test]
fn garbage_baseline_stores_never_panic() {
    let fx = Fx::new();
    let f = fx.write(
        "cfg.json",
        &json!([common::tts_case("t", json!({}))]).to_string(),
    );
    for text in [
        "",
        "[]",
        "null",
        "{\"a\": null}",
        "{\"a\": {\"mean_e2el_ms\": null}}",
        "{\"a\": {\"\": 1}}",
        "{",
    ] {
        fx.write("baselines/H100.json", text);
        let r = load_plan(&fx.opts(std::slice::from_ref(&f), "H100"));
        assert!(r.is_err(), "{text:?} should be refused");
    }
    for hw in ["../../x", "", ".", "H100/../../y", "\u{0}"] {
        let _ = load_plan(&fx.opts(std::slice::from_ref(&f), hw));
    }
}
