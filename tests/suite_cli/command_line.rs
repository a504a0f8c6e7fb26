//! The suite's command line: the literal `cargo test -- …` command, listing, filters,
//! ignored trials, config and flag errors, the fallback result, warnings without
//! `--assert-baseline`, `--format json` and hostile test names.

use std::path::PathBuf;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{cargo_test, check, fixture, perf, perf_in, run_dirs};

pub const BASE_TRIALS: [&str; 3] = [
    "test_qwen3_tts_base::voice_clone_latency_seed-tts::c1",
    "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c2",
    "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c4",
];
const CUSTOM_TRIAL: &str = "test_qwen3_tts_customvoice::default_voice_seed-tts-text::qps2.0";

fn passed(names: &[&str]) -> Vec<(String, String)> {
    names
        .iter()
        .map(|n| (n.to_string(), "passed".to_string()))
        .collect()
}

pub fn literal_command_passes() -> Result<(), Failed> {
    let run = cargo_test(&["--assert-baseline", "test_qwen3_tts_base::"], &[])?;
    check(run.code() == Some(0), "expected exit status 0", &run)?;
    check(
        run.outcomes()? == passed(&BASE_TRIALS),
        "summary must hold exactly the filtered trials, passed",
        &run,
    )?;
    // Both root test targets accepted the suite flag.
    check(
        run.stdout().matches("test result: ok.").count() >= 2,
        "every root target must run",
        &run,
    )?;
    check(
        run.summary()?["filtered_out"] == 1,
        "one trial filtered out",
        &run,
    )
}

pub fn literal_command_fails_on_slowdown() -> Result<(), Failed> {
    let run = cargo_test(
        &["--assert-baseline", "test_qwen3_tts_base::"],
        &[("DFX_FAKE_SLOWDOWN", "2")],
    )?;
    check(run.code() == Some(101), "expected exit status 101", &run)?;
    let out = run.stdout();
    for line in [
        "median_audio_ttfp_ms 101 > 60 (+68.3 %)",
        "median_audio_ttfp_ms 202 > 150 (+34.7 %)",
        "audio_throughput 6.284 < 10 (-37.2 %)",
    ] {
        check(
            out.contains(line),
            &format!("missing breach line `{line}`"),
            &run,
        )?;
    }
    let outcomes = run.outcomes()?;
    check(
        outcomes.iter().all(|(_, o)| o == "failed") && outcomes.len() == 3,
        "all three trials failed and were summarised",
        &run,
    )
}

pub fn list_is_libtest_compatible() -> Result<(), Failed> {
    let run = perf(&fixture("tts_small.json"), &["--list"], &[])?;
    check(run.code() == Some(0), "exit 0", &run)?;
    let mut expected: Vec<String> = BASE_TRIALS.iter().map(|n| format!("{n}: test")).collect();
    expected.push(format!("{CUSTOM_TRIAL}: test"));
    let lines: Vec<String> = run.stdout().lines().map(String::from).collect();
    check(
        lines == expected,
        "`--list` must print exactly `<name>: test` lines in plan order",
        &run,
    )?;
    check(
        run_dirs(run.results.path()).is_empty(),
        "listing must not create a run folder",
        &run,
    )
}

pub fn list_verbose_details() -> Result<(), Failed> {
    let config = format!(
        "{},{}",
        fixture("tts_small.json"),
        fixture("diffusion.json")
    );
    let run = perf(&config, &["--list-verbose", "c1"], &[])?;
    check(run.code() == Some(0), "exit 0", &run)?;
    let out = run.stdout();
    for needle in [
        "test_qwen3_tts_base::voice_clone_latency_seed-tts::c1: test",
        "    bench      fake",
        "    threshold  median_audio_ttfp_ms <= 60 (inline)",
        "    ignored    unsupported: diffusion dialect",
    ] {
        check(out.contains(needle), &format!("missing `{needle}`"), &run)?;
    }
    check(
        !out.contains("::c2: test"),
        "the filter applies to the listing",
        &run,
    )?;
    let again = perf(&config, &["--list", "--verbose", "c1"], &[])?;
    check(
        again.stdout() == out,
        "`--list --verbose` is the same listing",
        &again,
    )?;
    check(
        run_dirs(run.results.path()).is_empty(),
        "listing creates nothing",
        &run,
    )
}

pub fn exact_selects_one_step() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &["--bench", "fake", "--exact", BASE_TRIALS[1]],
        &[],
    )?;
    check(run.code() == Some(0), "exit 0", &run)?;
    check(
        run.outcomes()? == passed(&[BASE_TRIALS[1]]),
        "exactly one trial",
        &run,
    )?;
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(run.run_dir()?.join("run.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let bench = serde_json::json!({"flag": "--bench", "value": "fake", "source": "cli"});
    check(
        info["flags"].as_array().is_some_and(|f| f.contains(&bench)),
        "`--bench fake` given on the command line is recorded as such in run.json",
        &run,
    )
}

pub fn skip_starts_only_needed_servers() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &["--skip", "test_qwen3_tts_base"],
        &[],
    )?;
    check(run.code() == Some(0), "exit 0", &run)?;
    check(
        run.outcomes()? == passed(&[CUSTOM_TRIAL]),
        "only the custom-voice trial",
        &run,
    )?;
    let servers: Vec<String> = std::fs::read_dir(run.run_dir()?.join("servers"))
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    check(
        servers == ["01-test_qwen3_tts_customvoice"],
        "one server start, for the selected trial",
        &run,
    )?;
    // Whole run: consecutive trials share one server.
    let run = perf(&fixture("tts_small.json"), &[], &[])?;
    let s = run.summary()?;
    let used: Vec<&str> = s["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["server"].as_str().unwrap_or(""))
        .collect();
    check(
        used == ["servers/01-test_qwen3_tts_base"; 3]
            .iter()
            .copied()
            .chain(["servers/02-test_qwen3_tts_customvoice"])
            .collect::<Vec<_>>(),
        "server reuse across consecutive trials",
        &run,
    )?;
    check(s["server_starts"] == 2, "two server starts", &run)
}

pub fn ignored_trials() -> Result<(), Failed> {
    let config = format!(
        "{},{}",
        fixture("tts_small.json"),
        fixture("diffusion.json")
    );
    let run = perf(&config, &[], &[])?;
    check(
        run.code() == Some(0),
        "ignored trials do not fail a plain run",
        &run,
    )?;
    let outcomes = run.outcomes()?;
    let ignored: Vec<_> = outcomes.iter().filter(|(_, o)| o == "ignored").collect();
    check(
        ignored.len() == 1 && ignored[0].0 == "test_image_gen::t2i::c1",
        "the diffusion trial is ignored",
        &run,
    )?;
    check(
        run.stderr()
            .contains("1 trial(s) ignored: unsupported: diffusion dialect"),
        "reason on stderr",
        &run,
    )?;
    let reason = &run.summary()?["trials"][4]["ignored_reason"];
    check(
        reason.as_str().is_some_and(|r| r.contains("diffusion")),
        "reason in summary.json",
        &run,
    )?;

    let only = perf(&config, &["--ignored"], &[])?;
    check(only.code() == Some(0), "exit 0", &only)?;
    let names: Vec<String> = only.outcomes()?.into_iter().map(|(n, _)| n).collect();
    check(
        names == ["test_image_gen::t2i::c1"],
        "--ignored selects only the ignored trial",
        &only,
    )?;
    check(
        only.stdout()
            .contains("ignored (unsupported: diffusion dialect"),
        "the reason shows when it is run",
        &only,
    )?;

    let all = perf(&config, &["--include-ignored"], &[])?;
    check(
        all.outcomes()?.len() == 5,
        "--include-ignored runs everything",
        &all,
    )
}

/// A filter that selects only ignored trials prints them with the reason and libtest's
/// summary line, but creates no run folder and leaves `latest` pointing at the last real
/// run.
pub fn only_ignored_writes_nothing() -> Result<(), Failed> {
    let config = format!(
        "{},{}",
        fixture("tts_small.json"),
        fixture("diffusion.json")
    );
    let real = perf(&config, &["--exact", BASE_TRIALS[0]], &[])?;
    check(real.code() == Some(0), "the real run passes", &real)?;
    let before = run_dirs(real.results.path());
    let latest = |p: &std::path::Path| std::fs::read_link(p.join("latest")).ok();
    let link = latest(real.results.path());
    check(
        before.len() == 1 && link.is_some(),
        "one run folder and `latest`",
        &real,
    )?;
    let out = perf_in(real.results.path(), &config, &["test_image_gen"])?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let both = format!("--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    let ok = out.status.code() == Some(0)
        && stderr.contains("1 trial(s) ignored: unsupported: diffusion dialect")
        && stdout.contains("test_image_gen::t2i::c1 ... ignored")
        && stdout.contains("0 passed; 0 failed; 1 ignored")
        && stderr.contains("no run folder was written");
    if !ok {
        return Err(format!("exit 0, the ignored trial and its reason printed\n{both}").into());
    }
    if run_dirs(real.results.path()) != before || latest(real.results.path()) != link {
        return Err(format!("the results folder changed\n{both}").into());
    }
    // Under --assert-baseline the same selection fails (and so does run).
    let strict = perf(&config, &["--assert-baseline", "test_image_gen"], &[])?;
    check(
        strict.code() == Some(101),
        "fails under --assert-baseline",
        &strict,
    )
}

pub fn assert_baseline_fails_unrunnable() -> Result<(), Failed> {
    let run = perf(&fixture("diffusion.json"), &["--assert-baseline"], &[])?;
    check(run.code() == Some(101), "exit 101", &run)?;
    check(
        run.stdout()
            .contains("--assert-baseline forbids ignoring it"),
        "says why",
        &run,
    )?;
    check(
        run.outcomes()? == [("test_image_gen::t2i::c1".to_string(), "failed".to_string())],
        "failed in summary",
        &run,
    )
}

pub fn config_errors_stop_everything() -> Result<(), Failed> {
    let config = format!(
        "{},{},{}",
        fixture("tts_small.json"),
        fixture("bad_sweep.json"),
        fixture("broken.json")
    );
    let run = perf(&config, &["--assert-baseline"], &[])?;
    check(run.code() == Some(2), "exit status 2", &run)?;
    let err = run.stderr();
    check(
        err.contains("bad_sweep.json") && err.contains("test_bad_sweep"),
        "names the file and test",
        &run,
    )?;
    check(
        err.contains("broken.json") && err.contains("line 4"),
        "invalid JSON with its line",
        &run,
    )?;
    check(
        err.contains("nothing was started"),
        "says nothing started",
        &run,
    )?;
    check(
        run_dirs(run.results.path()).is_empty(),
        "no run folder, no servers/",
        &run,
    )
}

pub fn fallback_when_no_result() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &["--exact", BASE_TRIALS[0]],
        &[("DFX_FAKE_NO_RESULT", "1")],
    )?;
    check(run.code() == Some(101), "exit 101", &run)?;
    check(
        run.stdout().contains("left no result (exit status 1)"),
        "names the bench exit status",
        &run,
    )?;
    check(
        run.stdout().contains("DFX_FAKE_NO_RESULT"),
        "shows the bench log tail",
        &run,
    )?;
    let result = run
        .run_dir()?
        .join("trials/test_qwen3_tts_base__voice_clone_latency_seed-tts__c1/result.json");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&result).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    check(
        doc["result_source"] == "template" && doc["completed"] == 0,
        "template fallback written",
        &run,
    )?;
    check(
        doc["baseline"]
            == serde_json::json!({
                "H100": {"median_audio_ttfp_ms": 60.0, "median_audio_rtf": 0.2},
                "A3": {"median_audio_ttfp_ms": 30.0}
            })
            && doc["thresholds"][0]["value"] == 60.0,
        "every hardware bucket narrowed to the step in the result (upstream's baseline), \
         the H100 thresholds beside it",
        &run,
    )?;
    check(
        run.outcomes()?[0].1 == "failed",
        "summary written after a failure",
        &run,
    )
}

pub fn breaches_warn_without_assert() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &[BASE_TRIALS[0]],
        &[("DFX_FAKE_SLOWDOWN", "2")],
    )?;
    check(
        run.code() == Some(0),
        "breaches alone do not fail without --assert-baseline",
        &run,
    )?;
    check(
        run.stderr()
            .contains("median_audio_ttfp_ms 101 > 60 (+68.3 %)"),
        "warning printed",
        &run,
    )?;
    let s = run.summary()?;
    check(
        s["trials"][0]["breaches"]
            .as_array()
            .is_some_and(|b| b.len() == 2),
        "breaches recorded",
        &run,
    )
}

pub fn env_booleans_are_lenient() -> Result<(), Failed> {
    let slow = ("DFX_FAKE_SLOWDOWN", "2");
    for (value, expected) in [
        ("yes", 101),
        ("ON", 101),
        ("1", 101),
        ("off", 0),
        ("0", 0),
        ("no", 0),
    ] {
        let run = perf(
            &fixture("tts_small.json"),
            &[BASE_TRIALS[0]],
            &[slow, ("DFX_ASSERT_BASELINE", value)],
        )?;
        check(
            run.code() == Some(expected),
            &format!("DFX_ASSERT_BASELINE={value}"),
            &run,
        )?;
    }
    let run = perf(
        &fixture("tts_small.json"),
        &[],
        &[("DFX_ASSERT_BASELINE", "maybe")],
    )?;
    check(
        run.code() == Some(2) && run.stderr().contains("--assert-baseline"),
        "nonsense is refused",
        &run,
    )?;
    let run = perf(
        &fixture("tts_small.json"),
        &["--list"],
        &[(
            "DFX_TEST_CONFIG_FILE",
            &format!(
                "{}:{}",
                fixture("tts_small.json"),
                fixture("diffusion.json")
            ),
        )],
    )?;
    check(
        run.stdout().lines().count() == 5,
        "colon separated config list from the environment",
        &run,
    )
}

pub fn format_json() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &["--format", "json", "test_qwen3_tts_base"],
        &[],
    )?;
    check(run.code() == Some(0), "exit 0", &run)?;
    let out = run.stdout();
    let bad: Vec<&str> = out
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_err())
        .collect();
    check(
        bad.is_empty(),
        &format!("non-JSON stdout lines: {bad:?}"),
        &run,
    )?;
    let ok = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "test" && v["event"] == "ok")
        .count();
    check(ok == 3, "three ok test events", &run)
}

pub fn bad_flags() -> Result<(), Failed> {
    let run = perf(&fixture("tts_small.json"), &["--server", "gpu"], &[])?;
    check(run.code() == Some(2), "exit 2", &run)?;
    let err = run.stderr();
    check(
        err.contains("--server") && err.contains("auto") && err.contains("sim"),
        "flag and accepted values",
        &run,
    )?;
    // libtest's boolean `--bench` is the load-generator choice here: it needs a value.
    let run = perf(&fixture("tts_small.json"), &["--bench"], &[])?;
    check(
        run.code() == Some(2)
            && run.stderr().contains("--bench")
            && run.stderr().contains("native"),
        "`--bench` without a value names the flag and the accepted values",
        &run,
    )?;
    let run = perf(
        &fixture("tts_small.json"),
        &["--sim-speed=-3", "--server", "sim"],
        &[],
    )?;
    check(
        run.code() == Some(2) && run.stderr().contains("--sim-speed"),
        "validated value",
        &run,
    )?;
    check(
        run_dirs(run.results.path()).is_empty(),
        "nothing created",
        &run,
    )
}

pub fn hostile_names() -> Result<(), Failed> {
    let run = perf(&fixture("evil_name.json"), &[], &[])?;
    check(run.code() == Some(0), "exit 0", &run)?;
    let run_dir = run.run_dir()?;
    let trials: Vec<PathBuf> = std::fs::read_dir(run_dir.join("trials"))
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .collect();
    check(
        trials.len() == 1 && trials[0].join("result.json").is_file(),
        "one trial folder",
        &run,
    )?;
    let escaped = run.results.path().parent().map(|p| p.join("escaped"));
    check(
        escaped.is_none_or(|p| !p.exists()),
        "nothing written outside",
        &run,
    )?;
    let servers = std::fs::read_dir(run_dir.join("servers"))
        .map_err(|e| e.to_string())?
        .count();
    check(servers == 1, "server folder inside the run folder", &run)
}

pub fn assert_baseline_nothing_selected() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &["--assert-baseline", "no_such_trial"],
        &[],
    )?;
    check(
        run.code() == Some(2),
        "a baseline run that selects nothing must not go green",
        &run,
    )?;
    check(run.stderr().contains("no trial selected"), "says so", &run)
}
