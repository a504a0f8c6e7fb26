//! The API token reaches the bench only through its environment: never on argv, never in
//! bench.log, never in `VllmBench::command`. (Its own test binary: it sets process
//! environment variables, which must not race with other tests.)

mod external_support;

use dfx_bench::external::VllmBench;
use dfx_core::bench::Bench;
use external_support::*;

const VAR: &str = "DFX_EXTBENCH_TEST_TOKEN";
const TOKEN: &str = "sk-test-4f1d9c-not-a-real-token";

#[test]
fn token_travels_in_the_environment_only_and_missing_token_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("argv.jsonl");
    let mut settings = fake_settings("ok", Some("result-rate20-burstiness0.5.json"), &record);
    settings.auth_token_env = Some(VAR.into());
    let bench = VllmBench::new(settings);
    let trial = tts_trial();

    // Unset: the run does not start, and the message names the variable.
    let outcome = bench.run(&context(&trial, &dir.path().join("unset"), "H100"));
    assert!(outcome.result.is_none());
    let exit = outcome.exit.unwrap().to_string();
    assert!(exit.contains(VAR), "{exit}");
    assert!(recorded(&record).is_empty(), "the bench must not have run");

    // SAFETY: this test binary has a single test, so no other thread reads the environment.
    unsafe { std::env::set_var(VAR, TOKEN) };
    let out = dir.path().join("set");
    let ctx = context(&trial, &out, "H100");
    let outcome = bench.run(&ctx);
    assert!(outcome.result.is_some(), "{:?}", outcome.exit);
    let calls = recorded(&record);
    let (argv, env) = &calls[0];
    assert_eq!(env.get("OPENAI_API_KEY").map(String::as_str), Some(TOKEN));
    assert!(!argv.iter().any(|a| a.contains(TOKEN)), "token on argv");
    let log = std::fs::read_to_string(out.join("bench.log")).unwrap();
    assert!(!log.contains(TOKEN), "token in bench.log:\n{log}");
    assert!(
        log.contains(&format!("OPENAI_API_KEY=<value of ${VAR}, not logged>")),
        "{log}"
    );
    let (_, args, env) = bench.command(&ctx);
    assert!(!env.contains_key("OPENAI_API_KEY") && !env.values().any(|v| v.contains(TOKEN)));
    assert!(!args.iter().any(|a| a.contains(TOKEN)));
    assert!(!outcome.log_tail.contains(TOKEN));
}
