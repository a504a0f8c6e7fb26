//! Run comparison: a known injected slowdown is found with repeats, unchanged runs are
//! not flagged, a single pair is only ever "unconfirmed", and mismatched runs are refused
//! with a reason.

mod common;

use std::path::{Path, PathBuf};

use common::{Fault, RunBuilder};
use dfx_report::compare::{CompareOptions, Verdict, compare_dirs, render_text, write_comparison};
use serde_json::json;

fn runs(results: &Path, prefix: &str, seeds: &[u64], slowdown: f64) -> Vec<PathBuf> {
    seeds
        .iter()
        .map(|s| {
            RunBuilder::new(&format!("20260302-0{s}0000-{prefix}"))
                .seed(*s)
                .slowdown(slowdown)
                .write(results)
        })
        .collect()
}

const THRESHOLDED: [&str; 4] = [
    "median_audio_ttfp_ms",
    "median_audio_rtf",
    "audio_throughput",
    "mean_e2el_ms",
];

/// Every row says "no change": within noise or below the tolerance.
fn assert_no_change(c: &dfx_report::compare::Comparison) {
    for r in &c.rows {
        assert!(
            matches!(r.verdict, Verdict::WithinNoise | Verdict::BelowTolerance),
            "{} {}: {:?}",
            r.trial,
            r.metric,
            r.verdict
        );
    }
}

#[test]
fn injected_slowdown_is_a_regression_with_repeats() {
    let tmp = tempfile::tempdir().unwrap();
    let a = runs(tmp.path(), "SIM", &[1, 2, 3], 0.0);
    let b = runs(tmp.path(), "SIM", &[4, 5, 6], 0.15);
    let c = compare_dirs(&a, &b, &CompareOptions::default()).unwrap();
    // every metric is a confirmed regression (latencies up, throughput down)
    let known: Vec<_> = c.rows.iter().filter(|r| r.direction.is_some()).collect();
    assert_eq!(known.len(), c.rows.len());
    assert_eq!(known.len(), 24, "4 key metrics x 6 trials");
    for r in &known {
        assert_eq!(r.verdict, Verdict::Regression, "{} {}", r.trial, r.metric);
        let (lo, hi) = r.change_range.unwrap();
        assert!(
            lo > 0.05 && hi < 0.30,
            "{} {}: {lo}..{hi}",
            r.trial,
            r.metric
        );
    }
    for m in THRESHOLDED {
        assert!(known.iter().any(|r| r.metric == m), "{m} not compared");
    }
    assert!(c.rows.iter().all(|r| r.verdict != Verdict::Improvement));
    let ttfp = c
        .rows
        .iter()
        .find(|r| r.trial.ends_with("::c16") && r.metric == "median_audio_ttfp_ms")
        .unwrap();
    assert_eq!(ttfp.a.as_ref().unwrap().n(), 3);
    assert!(
        (ttfp.ratio.unwrap() - 1.15).abs() < 0.05,
        "{:?}",
        ttfp.ratio
    );
    let text = render_text(&c);
    assert!(text.contains("REGRESSION"), "{text}");
}

#[test]
fn unchanged_runs_are_not_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let a = runs(tmp.path(), "SIM", &[1, 2, 3], 0.0);
    let b = runs(tmp.path(), "SIM", &[4, 5, 6], 0.0);
    let c = compare_dirs(&a, &b, &CompareOptions::default()).unwrap();
    assert!(!c.rows.is_empty());
    assert_no_change(&c);
}

#[test]
fn a_single_pair_is_labelled_unconfirmed_even_for_a_big_change() {
    let tmp = tempfile::tempdir().unwrap();
    let a = runs(tmp.path(), "SIM", &[1], 0.0);
    let b = runs(tmp.path(), "SIM", &[2], 0.30);
    let c = compare_dirs(&a, &b, &CompareOptions::default()).unwrap();
    for r in &c.rows {
        assert_eq!(
            r.verdict.label(),
            "single pair: unconfirmed",
            "{} {}",
            r.trial,
            r.metric
        );
        assert!(r.ratio.is_some());
    }
    let text = render_text(&c);
    assert!(!text.contains("REGRESSION"));
    assert!(text.contains("run both sides again"), "{text}");
    // the ratio is still shown
    assert!(text.contains("1.3"), "{text}");
}

#[test]
fn different_hardware_is_refused_unless_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let a = vec![RunBuilder::new("20260302-010000-SIM").write(tmp.path())];
    let b = vec![
        RunBuilder::new("20260302-020000-H100")
            .hardware("H100")
            .write(tmp.path()),
    ];
    let err = compare_dirs(&a, &b, &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refusing to compare runs of different hardware"),
        "{err}"
    );
    assert!(
        err.contains("20260302-010000-SIM (SIM)") && err.contains("(H100)"),
        "{err}"
    );
    assert!(err.contains("--allow-different-hardware"), "{err}");
    let opts = CompareOptions {
        allow_different_hardware: true,
        ..CompareOptions::default()
    };
    let c = compare_dirs(&a, &b, &opts).unwrap();
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("different hardware compared as asked"))
    );
}

#[test]
fn different_simulator_speeds_count_as_different_hardware() {
    let tmp = tempfile::tempdir().unwrap();
    let mut fast = RunBuilder::new("20260302-030000-SIM");
    fast.sim_speed = Some(10.0);
    let a = vec![RunBuilder::new("20260302-010000-SIM").write(tmp.path())];
    let b = vec![fast.write(tmp.path())];
    let err = compare_dirs(&a, &b, &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("SIM (sim speed 10)"), "{err}");
}

#[test]
fn different_configs_or_trials_are_refused_unless_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let a = vec![RunBuilder::new("20260302-010000-SIM").write(tmp.path())];
    let other_config = vec![
        RunBuilder::new("20260302-020000-SIM")
            .configs(vec![
                json!("perf-configs/test_tts.json"),
                json!("perf-configs/test_omni.json"),
            ])
            .write(tmp.path()),
    ];
    let err = compare_dirs(&a, &other_config, &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("config files differ"), "{err}");
    assert!(err.contains("[test_omni.json, test_tts.json]"), "{err}");
    assert!(err.contains("--allow-different-configs"), "{err}");

    let dropped = "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c64";
    let fewer = vec![
        RunBuilder::new("20260302-030000-SIM")
            .without_step(dropped)
            .write(tmp.path()),
    ];
    let err = compare_dirs(&a, &fewer, &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("trial sets differ: 1 trial(s) only in 20260302-010000-SIM"),
        "{err}"
    );
    assert!(err.contains(dropped), "{err}");

    let opts = CompareOptions {
        allow_different_configs: true,
        ..CompareOptions::default()
    };
    let c = compare_dirs(&a, &fewer, &opts).unwrap();
    assert!(c.rows.iter().all(|r| r.trial != dropped));
    assert!(c.notes.iter().any(|n| n.contains("trial sets differ")));
}

#[test]
fn failed_and_fallback_trials_are_left_out_with_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let a = runs(tmp.path(), "SIM", &[1, 2], 0.0);
    let fallback = "test_qwen3_tts_customvoice::default_voice_stress_seed-tts-text::qps2.0";
    let b = vec![
        RunBuilder::new("20260302-050000-SIM")
            .seed(5)
            .fault(fallback, Fault::Fallback)
            .write(tmp.path()),
        RunBuilder::new("20260302-060000-SIM")
            .seed(6)
            .write(tmp.path()),
    ];
    let c = compare_dirs(&a, &b, &CompareOptions::default()).unwrap();
    assert!(
        c.notes.iter().any(|n| n.contains(fallback)
            && n.contains("20260302-050000-SIM")
            && n.contains("fallback")),
        "{:?}",
        c.notes
    );
    let r = c
        .rows
        .iter()
        .find(|r| r.trial == fallback && r.metric == "mean_e2el_ms")
        .unwrap();
    assert_eq!(
        r.b.as_ref().unwrap().n(),
        1,
        "the fallback's zeros must not count"
    );
    assert!(matches!(
        r.verdict,
        Verdict::Unconfirmed {
            runs_a: 2,
            runs_b: 1
        }
    ));
}

#[test]
fn unknown_extra_metric_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let a = runs(tmp.path(), "SIM", &[1], 0.0);
    let b = runs(tmp.path(), "SIM", &[2], 0.0);
    let opts = CompareOptions {
        metrics: vec!["median_audio_ttpf_ms".into()],
        ..CompareOptions::default()
    };
    let err = compare_dirs(&a, &b, &opts).unwrap_err().to_string();
    assert!(
        err.contains("median_audio_ttpf_ms") && err.contains("no compared trial measured"),
        "{err}"
    );
    let opts = CompareOptions {
        metrics: vec!["p99_e2el_ms".into()],
        ..CompareOptions::default()
    };
    let c = compare_dirs(&a, &b, &opts).unwrap();
    assert!(c.rows.iter().any(|r| r.metric == "p99_e2el_ms"));
}

#[test]
fn comparison_files_are_written_with_charts() {
    let tmp = tempfile::tempdir().unwrap();
    let a = runs(tmp.path(), "SIM", &[1, 2, 3], 0.0);
    let b = runs(tmp.path(), "SIM", &[4, 5, 6], 0.15);
    let c = compare_dirs(&a, &b, &CompareOptions::default()).unwrap();
    let out = tmp.path().join("cmp");
    let paths = write_comparison(&c, &out).unwrap();
    let md = std::fs::read_to_string(&paths.markdown).unwrap();
    insta::assert_snapshot!("compare_slowdown_md", md);
    let html = std::fs::read_to_string(&paths.html).unwrap();
    assert!(
        html.contains("<figure class=\"chart\" data-chart=\"compare::median_audio_ttfp_ms\"><svg")
    );
    assert!(!html.contains("<script") && !html.contains("src="));
    assert_eq!(
        html.matches("<svg").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
}

/// Recorded comparisons: `tests/fixtures/compare/<case>/{a,b}/<run>/` with
/// `expect.json` = `{"regression": true|false}`.
#[test]
fn recorded_comparisons_match_their_expectation() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare");
    let Ok(cases) = std::fs::read_dir(&root) else {
        return;
    };
    for case in cases
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
    {
        let side = |s: &str| -> Vec<PathBuf> {
            let mut v: Vec<PathBuf> = std::fs::read_dir(case.join(s))
                .unwrap()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            v.sort();
            v
        };
        let expect: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("expect.json")).unwrap())
                .unwrap();
        let c = compare_dirs(&side("a"), &side("b"), &CompareOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        let found = c.regressions().next().is_some();
        assert_eq!(
            found,
            expect["regression"].as_bool().unwrap(),
            "{}\n{}",
            case.display(),
            render_text(&c)
        );
    }
}

/// One run folder standing for `dirs` run as in-run repeats: the first run's summary with
/// every metric's per-repeat values (`repeats.stats.<metric>.values`) taken from all of
/// them, as `--repeats` writes it.
fn as_repeats(dirs: &[PathBuf]) -> PathBuf {
    let read = |d: &PathBuf| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap()
    };
    let all: Vec<serde_json::Value> = dirs.iter().map(read).collect();
    let mut first = all[0].clone();
    for (i, trial) in first["trials"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        let mut stats = serde_json::Map::new();
        for (metric, _) in trial["metrics"].as_object().unwrap().clone() {
            let values: Vec<serde_json::Value> = all
                .iter()
                .map(|s| s["trials"][i]["metrics"][&metric].clone())
                .collect();
            stats.insert(metric, json!({"values": values}));
        }
        trial["repeats"] = json!({"count": dirs.len(), "stats": stats});
    }
    common::write_json(&dirs[0].join("summary.json"), &first);
    dirs[0].clone()
}

#[test]
fn in_run_repeats_give_one_run_per_side_a_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let a = as_repeats(&runs(tmp.path(), "SIM", &[1, 2, 3], 0.0));
    let b = as_repeats(&runs(tmp.path(), "SIM", &[4, 5, 6], 0.15));
    let c = compare_dirs(std::slice::from_ref(&a), &[b], &CompareOptions::default()).unwrap();
    let known: Vec<_> = c.rows.iter().filter(|r| r.direction.is_some()).collect();
    assert!(!known.is_empty());
    for r in &known {
        assert_eq!(r.verdict, Verdict::Regression, "{} {}", r.trial, r.metric);
        assert_eq!(r.a.as_ref().unwrap().n(), 3, "each repeat is a value");
    }
    let same = as_repeats(&runs(tmp.path(), "SIMB", &[4, 5, 6], 0.0));
    let c = compare_dirs(&[a], &[same], &CompareOptions::default()).unwrap();
    assert_no_change(&c);
}

/// Rewrites a run's `run.json` with `f`.
fn edit_run(dir: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let p = dir.join("run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    f(&mut v);
    common::write_json(&p, &v);
}

/// Every difference of setup between the sides is listed above the verdict, in the
/// terminal text, compare.md and compare.html: simulator faults and speed, connection
/// mode, server versions and command line, host; the shared setup is not listed, and
/// output-only flags (`--results-dir`) never count.
#[test]
fn setup_differences_are_listed_above_the_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let a = runs(tmp.path(), "SIM", &[1, 2], 0.0);
    let b = runs(tmp.path(), "SIM", &[4, 5], 0.0);
    let command = |port: u16, extra: &str| {
        format!(
            "/bin/dfx-perf-sim serve m --host 127.0.0.1 --port {port}{extra}\n# environment added to the caller's:\n#   DFX_SIM_SPEED=10\n"
        )
    };
    for (i, d) in a.iter().enumerate() {
        edit_run(d, |r| {
            r["flags"][1]["value"] = json!(format!("/results/a{i}"));
            r["server_versions"] = json!({"dfx-perf-sim": "0.1.0"});
        });
        std::fs::write(
            d.join("servers/01-qwen3-tts/command.txt"),
            command(4000 + i as u16, ""),
        )
        .unwrap();
    }
    for (i, d) in b.iter().enumerate() {
        edit_run(d, |r| {
            let flags = r["flags"].as_array_mut().unwrap();
            flags.push(json!({"flag": "--sim-faults", "value": "error500@0.1", "source": "cli"}));
            flags.push(json!({"flag": "--connection", "value": "pooled", "source": "env"}));
            flags[1]["value"] = json!(format!("/results/b{i}"));
            r["server_versions"] = json!({"dfx-perf-sim": "0.2.0"});
            r["hostname"] = json!("ci-runner-9");
            r["git_sha"] = json!("0123456789abcdef");
        });
        std::fs::write(
            d.join("servers/01-qwen3-tts/command.txt"),
            command(5000 + i as u16, " --omni"),
        )
        .unwrap();
    }
    let c = compare_dirs(&a, &b, &CompareOptions::default()).unwrap();
    let aspects: Vec<&str> = c.setup.iter().map(|d| d.aspect.as_str()).collect();
    assert_eq!(
        aspects,
        [
            "dfx-perf",
            "host",
            "server command 01-qwen3-tts",
            "server version dfx-perf-sim",
            "flag --connection",
            "flag --sim-faults",
        ],
        "{:#?}",
        c.setup
    );
    assert_eq!(c.setup[0].b, ["0.1.0 (git 0123456789)"]);
    let faults = &c.setup[5];
    assert_eq!(
        (faults.a.as_slice(), faults.b.as_slice()),
        (
            &["(not set)".to_string()][..],
            &["error500@0.1".to_string()][..]
        )
    );
    // the port picked per run is not a difference, the added flag is
    assert_eq!(
        c.setup[2].b,
        ["/bin/dfx-perf-sim serve m --host 127.0.0.1 --port N --omni DFX_SIM_SPEED=10"]
    );
    let text = render_text(&c);
    let setup_at = text.find("Setup differences (6)").expect(&text);
    let verdict_at = text.find("\ntrial ").unwrap();
    assert!(setup_at < verdict_at, "{text}");
    assert!(
        text.contains("  flag --sim-faults: A (not set) | B error500@0.1"),
        "{text}"
    );
    let paths = write_comparison(&c, &tmp.path().join("cmp")).unwrap();
    let md = std::fs::read_to_string(&paths.markdown).unwrap();
    assert!(
        md.contains("- flag --sim-faults: A (not set) \\| B error500@0.1"),
        "{md}"
    );
    assert!(md.find("Setup differences").unwrap() < md.find("| trial | metric").unwrap());
    let html = std::fs::read_to_string(&paths.html).unwrap();
    assert!(
        html.contains("<tr><td>flag --connection</td><td>(not set)</td><td>pooled</td></tr>"),
        "{html}"
    );
    // a side against its own kind: nothing differs but the host-free facts
    let same = compare_dirs(&a[..1], &a[1..], &CompareOptions::default()).unwrap();
    assert!(same.setup.is_empty(), "{:#?}", same.setup);
    assert!(render_text(&same).contains("Setup: the same on both sides"));
}
