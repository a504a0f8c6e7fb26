//! Writing thresholds back into upstream-format configs: only the intended spans change,
//! every other byte stays identical.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dfx_report::writeback::{EntryRef, StepRef, Sweep, jsonspan, write_back_file, write_back_text};

fn fixture(name: &str) -> (PathBuf, String) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/configs")
        .join(name);
    let text = std::fs::read_to_string(&p).unwrap();
    (p, text)
}

fn conc(test: &str, suffix: &str, cs: &[u32]) -> Vec<StepRef> {
    cs.iter()
        .enumerate()
        .map(|(i, c)| StepRef {
            trial: format!("{test}::{suffix}::c{c}"),
            sweep: Sweep::Concurrency,
            index: i,
            key: c.to_string(),
        })
        .collect()
}

const BASE: &str = "test_qwen3_tts_base";
const THR: &str = "voice_clone_throughput_seed-tts";

fn throughput_entry() -> EntryRef {
    EntryRef {
        test_name: BASE.into(),
        case_index: 0,
        raw_entry_index: 1,
        steps: conc(BASE, THR, &[8, 16, 64]),
    }
}

fn thresholds(items: &[(&str, &str, f64)]) -> BTreeMap<String, BTreeMap<String, f64>> {
    let mut m: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for (t, metric, v) in items {
        m.entry(t.to_string())
            .or_default()
            .insert(metric.to_string(), *v);
    }
    m
}

/// The span of `baseline.<hw>.<metric>` of entry (case, idx) in `text`.
fn span(text: &str, case: usize, idx: usize, path: &[&str]) -> (usize, usize) {
    let root = jsonspan::parse(text).unwrap();
    let mut node = root
        .at(case)
        .unwrap()
        .get("benchmark_params")
        .unwrap()
        .value
        .at(idx)
        .unwrap();
    for k in path {
        node = &node.get(k).unwrap().value;
    }
    (node.start, node.end)
}

#[test]
fn replacing_one_list_leaves_every_other_byte_identical() {
    let (p, old) = fixture("test_tts.json");
    let t = thresholds(&[
        (&format!("{BASE}::{THR}::c8"), "median_audio_ttfp_ms", 210.5),
        (
            &format!("{BASE}::{THR}::c16"),
            "median_audio_ttfp_ms",
            600.25,
        ),
        (
            &format!("{BASE}::{THR}::c64"),
            "median_audio_ttfp_ms",
            4500.0,
        ),
    ]);
    let wb = write_back_text(&p, &old, "H100", &[throughput_entry()], &t).unwrap();
    let (s, e) = span(&old, 0, 1, &["baseline", "H100", "median_audio_ttfp_ms"]);
    let (ns, ne) = span(
        &wb.text,
        0,
        1,
        &["baseline", "H100", "median_audio_ttfp_ms"],
    );
    assert_eq!(ns, s);
    assert_eq!(&wb.text[..ns], &old[..s], "bytes before the list changed");
    assert_eq!(&wb.text[ne..], &old[e..], "bytes after the list changed");
    // the list keeps the file's multi-line style and indentation
    let indent = " ".repeat(14);
    let close = " ".repeat(12);
    assert_eq!(
        &wb.text[ns..ne],
        format!("[\n{indent}210.5,\n{indent}600.25,\n{indent}4500.0\n{close}]")
    );
    assert_eq!(wb.written.len(), 1);
    assert!(
        wb.written[0].contains("baseline.H100.median_audio_ttfp_ms = [210.5, 600.25, 4500.0]"),
        "{:?}",
        wb.written
    );
}

#[test]
fn several_metrics_and_a_new_metric_in_an_existing_bucket() {
    let (p, old) = fixture("test_tts.json");
    let mut items = Vec::new();
    for (c, ttfp, tput) in [(8, 200.0, 30.0), (16, 590.0, 45.5), (64, 4400.0, 48.0)] {
        let trial = format!("{BASE}::{THR}::c{c}");
        items.push((trial.clone(), "median_audio_ttfp_ms", ttfp));
        items.push((trial.clone(), "audio_throughput", tput));
        items.push((trial, "p99_e2el_ms", 9000.0 + c as f64));
    }
    let items: Vec<(&str, &str, f64)> =
        items.iter().map(|(t, m, v)| (t.as_str(), *m, *v)).collect();
    let wb = write_back_text(&p, &old, "H100", &[throughput_entry()], &thresholds(&items)).unwrap();
    // the A3 bucket, the other entries and cases are byte-identical: the only changed
    // region is inside the H100 bucket of this entry
    let (bs, be) = span(&old, 0, 1, &["baseline", "H100"]);
    let (nbs, nbe) = span(&wb.text, 0, 1, &["baseline", "H100"]);
    assert_eq!(&wb.text[..nbs], &old[..bs]);
    assert_eq!(&wb.text[nbe..], &old[be..]);
    // inside the bucket, median_audio_rtf (not recalibrated) is untouched
    let (rs, re) = span(&old, 0, 1, &["baseline", "H100", "median_audio_rtf"]);
    let (nrs, nre) = span(&wb.text, 0, 1, &["baseline", "H100", "median_audio_rtf"]);
    assert_eq!(&wb.text[nrs..nre], &old[rs..re]);
    let doc: serde_json::Value = serde_json::from_str(&wb.text).unwrap();
    let h100 = &doc[0]["benchmark_params"][1]["baseline"]["H100"];
    assert_eq!(
        h100["p99_e2el_ms"],
        serde_json::json!([9008.0, 9016.0, 9064.0])
    );
    assert_eq!(
        h100["audio_throughput"],
        serde_json::json!([30.0, 45.5, 48.0])
    );
    insta::assert_snapshot!("h100_bucket_after", &wb.text[nbs..nbe]);
}

#[test]
fn a_new_hardware_bucket_is_added_after_the_others() {
    let (p, old) = fixture("test_tts.json");
    let t = thresholds(&[(
        &format!("{BASE}::voice_clone_latency_seed-tts::c1"),
        "median_audio_rtf",
        0.21,
    )]);
    let entry = EntryRef {
        test_name: BASE.into(),
        case_index: 0,
        raw_entry_index: 0,
        steps: conc(BASE, "voice_clone_latency_seed-tts", &[1]),
    };
    let wb = write_back_text(&p, &old, "L40S", &[entry], &t).unwrap();
    let (s, e) = span(&old, 0, 0, &["baseline", "A3"]);
    let (ns, ne) = span(&wb.text, 0, 0, &["baseline", "A3"]);
    assert_eq!(
        &wb.text[..ne],
        &old[..e],
        "everything up to the last bucket is unchanged"
    );
    assert_eq!(ns, s);
    let (ls, le) = span(&wb.text, 0, 0, &["baseline", "L40S"]);
    let inserted = &wb.text[e..le + 1];
    assert_eq!(
        &wb.text[le..],
        &old[e..],
        "everything after the insertion is unchanged"
    );
    let key_indent = " ".repeat(10);
    assert!(
        inserted.starts_with(&format!(",\n{key_indent}\"L40S\": {{\n")),
        "{inserted:?}"
    );
    assert_eq!(
        &wb.text[ls..le],
        format!(
            "{{\n{key_indent}  \"median_audio_rtf\": [\n{key_indent}    0.21\n{key_indent}  ]\n{key_indent}}}"
        )
    );
}

#[test]
fn an_entry_without_baseline_gets_one() {
    let (p, old) = fixture("test_qwen3_tts_sglang.json");
    let test = "test_sglang_qwen3_tts_base";
    let entry = EntryRef {
        test_name: test.into(),
        case_index: 0,
        raw_entry_index: 0,
        steps: conc(test, "voice_clone_latency_seed-tts", &[1]),
    };
    let t = thresholds(&[(
        &format!("{test}::voice_clone_latency_seed-tts::c1"),
        "median_audio_ttfp_ms",
        180.0,
    )]);
    let wb = write_back_text(&p, &old, "H100", &[entry], &t).unwrap();
    let anchor = "\"percentile-metrics\": \"ttft,e2el,audio_rtf,audio_ttfp,audio_duration\"";
    let at = old.find(anchor).unwrap() + anchor.len();
    assert_eq!(&wb.text[..at], &old[..at]);
    let added = ",\n        \"baseline\": {\n          \"H100\": {\n            \"median_audio_ttfp_ms\": [\n              180.0\n            ]\n          }\n        }";
    assert_eq!(&wb.text[at..at + added.len()], added);
    assert_eq!(&wb.text[at + added.len()..], &old[at..]);
}

#[test]
fn flat_baselines_and_missing_steps_are_not_written_and_say_why() {
    let p = Path::new("flat.json");
    let old = "[{\"test_name\": \"t\", \"benchmark_params\": [{\"max_concurrency\": [1, 4], \"baseline\": {\"median_e2el_ms\": 100}}, {\"max_concurrency\": [1, 4]}]}]";
    let entry = |idx: usize| EntryRef {
        test_name: "t".into(),
        case_index: 0,
        raw_entry_index: idx,
        steps: conc("t", &format!("e{idx}"), &[1, 4]),
    };
    let t = thresholds(&[
        ("t::e0::c1", "median_e2el_ms", 90.0),
        ("t::e0::c4", "median_e2el_ms", 95.0),
        ("t::e1::c1", "median_e2el_ms", 80.0),
    ]);
    let wb = write_back_text(p, old, "H100", &[entry(0), entry(1)], &t).unwrap();
    assert_eq!(wb.text, old, "nothing may change");
    assert!(
        wb.notes[0].contains("benchmark_params[0]: not written: its baseline is flat"),
        "{:?}",
        wb.notes
    );
    assert!(
        wb.notes[1].contains(
            "benchmark_params[1]: median_e2el_ms not written: no threshold for step t::e1::c4"
        ),
        "{:?}",
        wb.notes
    );
}

#[test]
fn compact_files_stay_compact_and_dicts_stay_dicts() {
    let p = Path::new("compact.json");
    let old = "[{\"test_name\":\"t\",\"benchmark_params\":[{\"max_concurrency\":[1,4],\"baseline\":{\"H100\":{\"median_e2el_ms\":{\"1\":100,\"4\":200}},\"A3\":{\"median_e2el_ms\":[1,2]}}}]}]";
    let entry = EntryRef {
        test_name: "t".into(),
        case_index: 0,
        raw_entry_index: 0,
        steps: conc("t", "e", &[1, 4]),
    };
    let t = thresholds(&[("t::e::c4", "median_e2el_ms", 150.5)]);
    let wb = write_back_text(p, old, "H100", &[entry], &t).unwrap();
    assert_eq!(
        wb.text,
        "[{\"test_name\":\"t\",\"benchmark_params\":[{\"max_concurrency\":[1,4],\"baseline\":{\"H100\":{\"median_e2el_ms\":{\"1\": 100, \"4\": 150.5}},\"A3\":{\"median_e2el_ms\":[1,2]}}}]}]"
    );
}

#[test]
fn write_back_file_is_atomic_and_untouched_when_nothing_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, old) = fixture("test_tts.json");
    let p = tmp.path().join("test_tts.json");
    std::fs::write(&p, &old).unwrap();
    let wb = write_back_file(&p, "H100", &[throughput_entry()], &BTreeMap::new()).unwrap();
    assert!(wb.written.is_empty());
    assert_eq!(std::fs::read_to_string(&p).unwrap(), old);
    let t = thresholds(&[
        (&format!("{BASE}::{THR}::c8"), "median_audio_rtf", 0.3),
        (&format!("{BASE}::{THR}::c16"), "median_audio_rtf", 0.35),
        (&format!("{BASE}::{THR}::c64"), "median_audio_rtf", 1.2),
    ]);
    write_back_file(&p, "H100", &[throughput_entry()], &t).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(
        doc[0]["benchmark_params"][1]["baseline"]["H100"]["median_audio_rtf"],
        serde_json::json!([0.3, 0.35, 1.2])
    );
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "no temp files left"
    );
}

#[test]
fn a_file_that_does_not_match_the_plan_is_an_error() {
    let (p, old) = fixture("test_qwen3_tts_sglang.json");
    let entry = EntryRef {
        test_name: "x".into(),
        case_index: 3,
        raw_entry_index: 0,
        steps: conc("x", "e", &[1]),
    };
    let t = thresholds(&[("x::e::c1", "median_e2el_ms", 1.0)]);
    let err = write_back_text(&p, &old, "H100", &[entry], &t)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("test_qwen3_tts_sglang.json") && err.contains("does not match the plan"),
        "{err}"
    );
}

/// End to end: recalibrate fixture runs, write the thresholds into a copy of the
/// upstream config through the real loader's trial naming.
#[test]
fn recalibrated_thresholds_go_into_the_config_through_the_plan() {
    use dfx_report::recalibrate::{RecalibrateOptions, plan_from_dirs};
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (1..=3)
        .map(|s| {
            common::RunBuilder::new(&format!("20260310-0{s}0000-H100"))
                .hardware("H100")
                .seed(s)
                .write(tmp.path())
        })
        .collect();
    let baselines = tmp.path().join("baselines");
    let o = RecalibrateOptions {
        baselines_dir: baselines.clone(),
        margin: 0.0,
        ..RecalibrateOptions::default()
    };
    let r = plan_from_dirs(&dirs, &o).unwrap();
    let (_, old) = fixture("test_tts.json");
    let cfg = tmp.path().join("test_tts.json");
    std::fs::write(&cfg, &old).unwrap();
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
    let wb = dfx_report::writeback::write_config(
        &cfg,
        &deploy,
        &baselines,
        "H100",
        &r.final_thresholds(),
        true,
    )
    .unwrap();
    let new = std::fs::read_to_string(&cfg).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&new).unwrap();
    let h100 = &doc[0]["benchmark_params"][1]["baseline"]["H100"];
    let expect: Vec<f64> = [8, 16, 64]
        .iter()
        .map(|c| {
            r.changes
                .iter()
                .find(|ch| {
                    ch.trial == format!("{BASE}::{THR}::c{c}")
                        && ch.metric == "median_audio_ttfp_ms"
                })
                .unwrap()
                .result
        })
        .collect();
    assert_eq!(h100["median_audio_ttfp_ms"], serde_json::json!(expect));
    // A3 buckets and the other cases are byte-identical
    let (s, e) = span(&old, 0, 1, &["baseline", "A3"]);
    assert!(new.contains(&old[s..e]));
    // test_voxtral_tts (no trial in the runs) is byte-identical
    let case2_old = {
        let root = jsonspan::parse(&old).unwrap();
        let n = root.at(2).unwrap();
        old[n.start..n.end].to_string()
    };
    assert!(new.contains(&case2_old));
    // the customvoice stress entry (qps2.0, in the runs) got the calibrated metric added
    // next to the ones it had
    let stress = &doc[1]["benchmark_params"][3]["baseline"]["H100"];
    let qps2 = r
        .changes
        .iter()
        .find(|c| c.trial.ends_with("::qps2.0") && c.metric == "mean_e2el_ms")
        .unwrap();
    assert_eq!(stress["mean_e2el_ms"], serde_json::json!([qps2.result]));
    assert_eq!(stress["median_audio_ttfp_ms"], serde_json::json!([56.746]));
    assert_eq!(wb.written.len(), 6, "{:#?}", wb.written);
}
