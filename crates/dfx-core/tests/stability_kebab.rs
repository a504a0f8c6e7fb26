//! Upstream's diffusion stability configs write their keys in kebab case
//! (`max-concurrency`, `num-prompts`, `warmup-requests`, `random-request-config`): such a
//! file loads (fixture `tests/fixtures/stability/test_diffusion_kebab_soak.json`, written
//! in upstream's form), its soaks are diffusion soaks (which no bench runs: they are
//! listed as ignored with that reason), and an unknown key is still an error with the
//! closest names.

mod common;

use common::{Fx, repo_root};
use dfx_core::config::load_plan;
use dfx_core::plan::{Dialect, StepKind};
use serde_json::{Value, json};

fn fixture() -> std::path::PathBuf {
    repo_root().join("tests/fixtures/stability/test_diffusion_kebab_soak.json")
}

fn fixture_value() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap()
}

#[test]
fn a_kebab_case_stability_file_loads_as_diffusion_soaks() {
    let fx = Fx::new();
    let plan = load_plan(&fx.opts(&[fixture()], "H100")).unwrap_or_else(|e| panic!("{e}"));
    let got: Vec<(String, StepKind, u64, bool)> = plan
        .trials
        .iter()
        .map(|t| {
            assert_eq!(t.entry.dialect, Dialect::Stability, "{}", t.name);
            (
                t.step.label.clone(),
                t.step.kind,
                t.step.num_prompts.get(),
                t.entry.is_diffusion_soak(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "c2".to_string(),
                StepKind::Concurrency {
                    max_concurrency: std::num::NonZeroU32::new(2).unwrap()
                },
                4,
                true
            ),
            (
                "qps0.5".to_string(),
                StepKind::RequestRate { request_rate: 0.5 },
                2,
                true
            ),
        ]
    );
}

#[test]
fn an_unknown_key_of_a_kebab_soak_is_still_refused_with_the_closest_names() {
    let fx = Fx::new();
    for (key, closest) in [
        ("max-concurency", "max-concurrency"),
        ("warmup_request", "accepted: warmup-requests"),
        ("frame_count", "unknown entry key"),
        ("random-request-confg", "random-request-config"),
    ] {
        let mut v = fixture_value();
        v[0]["benchmark_params"][0][key] = json!(1);
        let e = fx.errors(&v.to_string());
        assert!(
            e.contains(&format!(
                "test `test_wan22_t2v_stability`, benchmark_params[0], key `{key}`"
            )) && e.contains(closest),
            "{key}: {e}"
        );
    }
}

#[test]
fn both_spellings_or_neither_sweep_key_is_an_error() {
    let fx = Fx::new();
    let mut v = fixture_value();
    v[0]["benchmark_params"][0]["max_concurrency"] = json!(2);
    let e = fx.errors(&v.to_string());
    assert!(
        e.contains("key `max-concurrency`: `max-concurrency` and `max_concurrency` are the same key, given twice (accepted: one spelling)"),
        "{e}"
    );
    let mut v = fixture_value();
    v[0]["benchmark_params"][1]["max-concurrency"] = json!(1);
    let e = fx.errors(&v.to_string());
    assert!(
        e.contains("benchmark_params[1]")
            && e.contains("needs exactly one of `max_concurrency` and `request_rate`"),
        "{e}"
    );
    let mut v = fixture_value();
    v[0]["benchmark_params"][0]["max-concurrency"] = json!(0);
    let e = fx.errors(&v.to_string());
    assert!(e.contains("key `max-concurrency`: invalid value 0"), "{e}");
}
