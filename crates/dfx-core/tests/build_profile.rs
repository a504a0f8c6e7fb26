//! The dev profile's exceptions stay true to the dependency graph. Dependencies are
//! optimised in test builds (`[profile.dev.package."*"]`), which also catches the proc
//! macros and what only they use, so the root manifest names each of those with
//! `opt-level = 0` (cargo's own default for them). A proc macro added later without its
//! line would only build slower; one removed would leave a stale line: both are reported
//! here, from `cargo metadata` of this platform.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Dependencies the tests run only lightly, unoptimised on purpose (not proc macros).
const LIGHT_AT_RUN_TIME: [&str; 3] = ["jsonschema", "tokenizers", "insta"];

/// Build scripts' own small dependencies, left as they are: cheap to build at any
/// opt-level.
const BUILD_SCRIPT_HELPERS: [&str; 8] = [
    "autocfg",
    "cc",
    "cfg_aliases",
    "find-msvc-tools",
    "pkg-config",
    "shlex",
    "vcpkg",
    "version_check",
];

/// The packages the root manifest builds at `opt-level = 0` in the dev profile.
fn unoptimised(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut current: Option<&str> = None;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            current = line
                .strip_prefix("[profile.dev.package.")
                .and_then(|s| s.strip_suffix(']'))
                .filter(|name| !name.starts_with('"'));
        } else if let Some(name) = current
            && line.replace(' ', "") == "opt-level=0"
        {
            out.insert(name.to_string());
        }
    }
    out
}

/// The host triple, as rustc prints it.
fn host() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().expect("rustc -vV");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("a host line")
        .to_string()
}

/// Names of the packages built only to run at build time on this platform: proc macros,
/// build scripts' dependencies and what only those use.
fn build_time_only(root: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", &host()])
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let name: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let proc_macro: BTreeSet<&str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            p["targets"].as_array().unwrap().iter().any(|t| {
                t["kind"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k == "proc-macro")
            })
        })
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    let nodes: HashMap<&str, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let (mut run_time, mut build_time) = (BTreeSet::new(), BTreeSet::new());
    let mut stack: Vec<(&str, bool)> = members.iter().map(|m| (*m, false)).collect();
    while let Some((id, at_build)) = stack.pop() {
        let seen = if at_build {
            &mut build_time
        } else {
            &mut run_time
        };
        if !seen.insert(id) {
            continue;
        }
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let child = dep["pkg"].as_str().unwrap();
            for kind in dep["dep_kinds"].as_array().unwrap() {
                match kind["kind"].as_str() {
                    Some("build") => stack.push((child, true)),
                    Some("dev") if !members.contains(id) => {}
                    _ => stack.push((child, at_build || proc_macro.contains(child))),
                }
            }
        }
    }
    let names = |ids: &BTreeSet<&str>| -> BTreeSet<String> {
        ids.iter().map(|id| name[id].to_string()).collect()
    };
    let all: BTreeSet<String> = names(&run_time)
        .union(&names(&build_time))
        .cloned()
        .collect();
    let only: BTreeSet<&str> = build_time.difference(&run_time).copied().collect();
    (names(&only), all)
}

#[test]
fn every_build_time_only_package_is_unoptimised_and_every_exception_exists() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let listed = unoptimised(&manifest);
    let (build_only, all) = build_time_only(root);
    let missing: Vec<&String> = build_only
        .iter()
        .filter(|n| !listed.contains(*n) && !BUILD_SCRIPT_HELPERS.contains(&n.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "proc macros (or their own dependencies) without `[profile.dev.package.NAME]` \
         `opt-level = 0` in Cargo.toml: {missing:?}"
    );
    let stale: Vec<&String> = listed.iter().filter(|n| !all.contains(*n)).collect();
    assert!(stale.is_empty(), "not in the dependency graph: {stale:?}");
    let odd: Vec<&String> = listed
        .iter()
        .filter(|n| !build_only.contains(*n) && !LIGHT_AT_RUN_TIME.contains(&n.as_str()))
        .collect();
    assert!(
        odd.is_empty(),
        "unoptimised but run by the tests, and not among LIGHT_AT_RUN_TIME: {odd:?}"
    );
}

#[test]
fn the_manifest_scanner_reads_package_sections_only() {
    let text = "[profile.dev.package.\"*\"]\nopt-level = 2\n[profile.dev.package.syn]\n\
                opt-level = 0\n[profile.dev.package.tokio]\nopt-level = 2\n[dependencies]\n\
                opt-level = 0\n";
    assert_eq!(unoptimised(text), BTreeSet::from(["syn".to_string()]));
}
