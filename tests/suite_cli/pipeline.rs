//! `dfx-perf pipeline buildkite`: the generated YAML against a snapshot, the committed
//! `.buildkite/nightly.yml`, and buildkite/pipeline-schema's step rules.

use std::collections::HashSet;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::dfx_perf_cli::dfx_perf;
use crate::support::root;

/// The committed example's arguments.
const EXAMPLE: &[&str] = &[
    "pipeline",
    "buildkite",
    "--hardware",
    "H20",
    "--hardware",
    "H100",
    "--shards",
    "2",
];

/// A small fixture: three server groups, two labels, a filter, an agent tag.
const FIXTURE: &[&str] = &[
    "pipeline",
    "buildkite",
    "--hardware",
    "H100",
    "--hardware",
    "A3",
    "--shards",
    "2",
    "--test-config-file",
    "tests/fixtures/suite_cli/sim_shards.json",
    "--filter",
    "test_shard",
    "--agent",
    "queue=perf",
];

fn generate(args: &[&str]) -> Result<String, Failed> {
    let out = dfx_perf(args)?;
    if !out.status.success() {
        return Err(format!(
            "dfx-perf {}: {}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string().into())
}

/// Compares `got` with the committed file `rel`; the message says how to refresh it.
fn same_as_file(got: &str, rel: &str, args: &[&str]) -> Result<(), Failed> {
    let want = std::fs::read_to_string(root().join(rel)).map_err(|e| format!("{rel}: {e}"))?;
    if got == want {
        return Ok(());
    }
    let line = got
        .lines()
        .zip(want.lines())
        .position(|(a, b)| a != b)
        .map_or_else(|| "length".to_string(), |i| format!("line {}", i + 1));
    Err(format!(
        "{rel} differs from the generator's output ({line}); refresh it with\n  cargo run --bin dfx-perf -- {} > {rel}",
        args.join(" ")
    )
    .into())
}

/// The committed `.buildkite/nightly.yml` is what the generator writes for the shipped
/// plan, and a fixture's pipeline equals its snapshot.
pub fn buildkite_pipeline_files_are_current() -> Result<(), Failed> {
    same_as_file(&generate(EXAMPLE)?, ".buildkite/nightly.yml", EXAMPLE)?;
    same_as_file(
        &generate(FIXTURE)?,
        "tests/fixtures/buildkite/sim_shards.yml",
        FIXTURE,
    )
}

/// Every step of both pipelines is valid under the schema subset; keys are unique,
/// `depends_on` names existing keys, every shard of every label appears once, and each
/// label's merge step waits for all of its shards. Broken variants are refused (the
/// check can fail).
pub fn buildkite_pipeline_follows_the_schema() -> Result<(), Failed> {
    let schema: Value = read_json("tests/fixtures/buildkite/pipeline-schema-subset.json")?;
    let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
    for (args, labels) in [(EXAMPLE, ["H20", "H100"]), (FIXTURE, ["H100", "A3"])] {
        let yaml = generate(args)?;
        let doc: Value = yaml_serde::from_str(&yaml).map_err(|e| e.to_string())?;
        if let Some(e) = validator.iter_errors(&doc).next() {
            return Err(format!("{}: {e} at {}", args.join(" "), e.instance_path()).into());
        }
        structure(&doc, &labels, 2)?;
        for (what, broken) in broken_variants(&doc) {
            let refused = !validator.is_valid(&broken) || structure(&broken, &labels, 2).is_err();
            if !refused {
                return Err(format!("a pipeline with {what} passed the checks").into());
            }
        }
    }
    Ok(())
}

/// Bad flags exit 1 with the flag named on stderr and nothing on stdout.
pub fn buildkite_pipeline_refuses_bad_input() -> Result<(), Failed> {
    let cases: &[(&[&str], &str)] = &[
        (&["--hardware", "H10"], "closest: H100"),
        (&["--hardware", "H100", "--shards", "64"], "--shards 64"),
        (
            &["--hardware", "H100", "--results-dir", "/tmp/x"],
            "--results-dir",
        ),
        (&["--hardware", "H100", "--agent", "queue"], "--agent"),
        (
            &["--hardware", "H100", "--filter", "no such trial"],
            "--filter",
        ),
        (&["--hardware", "H100", "--hardware", "H100"], "given twice"),
        (
            &[
                "--hardware",
                "H100",
                "--test-config-file",
                "tests/fixtures/suite_cli/broken.json",
            ],
            "broken.json",
        ),
    ];
    for (flags, needle) in cases {
        let args: Vec<&str> = ["pipeline", "buildkite"]
            .iter()
            .chain(*flags)
            .copied()
            .collect();
        let out = dfx_perf(&args)?;
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(1) || !out.stdout.is_empty() || !err.contains(needle) {
            return Err(format!(
                "{flags:?}: expected exit 1, no stdout, {needle:?} on stderr; got {} {err}",
                out.status
            )
            .into());
        }
    }
    Ok(())
}

fn read_json(rel: &str) -> Result<Value, Failed> {
    let text = std::fs::read_to_string(root().join(rel)).map_err(|e| format!("{rel}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{rel}: {e}").into())
}

/// The checks beyond the schema: groups only at the top, one per label in order, shard
/// steps `perf-<label>-<K>` for K = 1..=N once each, then a merge step depending on them.
fn structure(doc: &Value, labels: &[&str], total: u32) -> Result<(), String> {
    let groups = doc["steps"].as_array().ok_or("no steps")?;
    if groups.len() != labels.len() {
        return Err(format!(
            "{} groups for {} labels",
            groups.len(),
            labels.len()
        ));
    }
    let mut keys = HashSet::new();
    let mut depends = Vec::new();
    for (group, label) in groups.iter().zip(labels) {
        let steps = group["steps"]
            .as_array()
            .ok_or("a top-level step is not a group")?;
        let slug = label.to_ascii_lowercase();
        let mut want: Vec<String> = (1..=total).map(|k| format!("perf-{slug}-{k}")).collect();
        let shards = want.clone();
        want.push(format!("perf-{slug}-merge"));
        let got: Vec<&str> = steps
            .iter()
            .map(|s| s["key"].as_str().unwrap_or(""))
            .collect();
        if got != want {
            return Err(format!("{label}: step keys {got:?}, expected {want:?}"));
        }
        for s in steps {
            if !keys.insert(s["key"].as_str().unwrap_or("").to_string()) {
                return Err(format!("key {} twice", s["key"]));
            }
            for d in s["depends_on"].as_array().into_iter().flatten() {
                depends.push(d.as_str().unwrap_or("").to_string());
            }
        }
        for (s, k) in steps.iter().zip(1..=total) {
            let env = &s["env"];
            if env["DFX_PARTITION"] != format!("count:{k}/{total}").as_str()
                || env["DFX_HARDWARE"] != *label
            {
                return Err(format!("{label} shard {k}: env {env}"));
            }
            let minutes = s["timeout_in_minutes"].as_u64().unwrap_or(0);
            if !(30..=24 * 60).contains(&minutes) {
                return Err(format!("{label} shard {k}: timeout {minutes} min"));
            }
        }
        let merge = &steps[steps.len() - 1];
        let on: Vec<&str> = merge["depends_on"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if on != shards || merge["allow_dependency_failure"] != true {
            return Err(format!("{label}: merge waits for {on:?}, not every shard"));
        }
    }
    match depends.iter().find(|d| !keys.contains(*d)) {
        Some(d) => Err(format!("depends_on {d}: no such key")),
        None => Ok(()),
    }
}

/// Variants the checks must refuse.
fn broken_variants(doc: &Value) -> Vec<(&'static str, Value)> {
    let mut unknown_key = doc.clone();
    unknown_key["steps"][0]["steps"][0]["mirror_hardwares"] = "h100_2".into();
    let mut nested = doc.clone();
    let inner = nested["steps"][1].clone();
    if let Some(s) = nested["steps"][0]["steps"].as_array_mut() {
        s.push(inner);
    }
    let mut zero_timeout = doc.clone();
    zero_timeout["steps"][0]["steps"][0]["timeout_in_minutes"] = 0.into();
    let mut dropped_shard = doc.clone();
    if let Some(s) = dropped_shard["steps"][0]["steps"].as_array_mut() {
        s.remove(1);
    }
    let mut bad_key = doc.clone();
    bad_key["steps"][0]["steps"][0]["key"] = "perf h100".into();
    vec![
        ("a key outside commandStep", unknown_key),
        ("a nested group", nested),
        ("timeout_in_minutes 0", zero_timeout),
        ("a shard missing", dropped_shard),
        ("a key with a space", bad_key),
    ]
}

/// A shard's timeout comes from its trials: the whole fixture on one shard gets longer
/// than one of its tests alone, and two shards each less than the one.
pub fn buildkite_timeouts_follow_the_plan() -> Result<(), Failed> {
    let minutes = |extra: &[&str]| -> Result<Vec<u64>, Failed> {
        let mut args = vec![
            "pipeline",
            "buildkite",
            "--hardware",
            "H100",
            "--test-config-file",
            "tests/fixtures/suite_cli/sim_shards.json",
        ];
        args.extend_from_slice(extra);
        let doc: Value = yaml_serde::from_str(&generate(&args)?).map_err(|e| e.to_string())?;
        let steps = doc["steps"][0]["steps"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // The shard steps, without the merge step.
        Ok(steps[..steps.len().saturating_sub(1)]
            .iter()
            .filter_map(|s| s["timeout_in_minutes"].as_u64())
            .collect())
    };
    let all = minutes(&[])?;
    let one_test = minutes(&["--filter", "test_shard_a"])?;
    let halves = minutes(&["--shards", "2"])?;
    let ok = all.len() == 1
        && one_test.len() == 1
        && halves.len() == 2
        && one_test[0] < all[0]
        && halves.iter().all(|&m| m < all[0]);
    if !ok {
        return Err(
            format!("timeouts: all {all:?}, one test {one_test:?}, two shards {halves:?}").into(),
        );
    }
    Ok(())
}
