//! Test doubles stay out of the product (issue #36): no package of the workspace lists
//! dfx-testkit outside its dev-dependencies, so no shipped executable links a fake.

use std::path::{Path, PathBuf};

/// The tables in which a manifest may name dfx-testkit: dev-dependencies (also per
/// target) and the workspace's declaration of its path.
fn allowed(table: &str) -> bool {
    table == "dev-dependencies"
        || table.ends_with(".dev-dependencies")
        || table == "workspace.dependencies"
}

/// Every line of `manifest` that makes dfx-testkit a dependency outside [`allowed`]
/// tables (`dependencies`, `build-dependencies`, per-target ones, or a
/// `[dependencies.dfx-testkit]` table), as `line N: text`.
fn testkit_outside_dev(manifest: &str) -> Vec<String> {
    let mut table = String::new();
    let mut hits = Vec::new();
    for (i, raw) in manifest.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        let offends = if let Some(header) = line.strip_prefix('[') {
            table = header
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
            table
                .strip_suffix(".dfx-testkit")
                .is_some_and(|deps| deps.ends_with("dependencies") && !allowed(deps))
        } else {
            table.ends_with("dependencies") && !allowed(&table) && line.contains("dfx-testkit")
        };
        if offends {
            hits.push(format!("line {}: {}", i + 1, raw.trim()));
        }
    }
    hits
}

/// The root manifest and every member's.
fn manifests() -> Vec<PathBuf> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut all: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.expect("crates/ entry").path().join("Cargo.toml"))
        .filter(|p| p.is_file())
        .collect();
    all.sort();
    all.insert(0, root.join("Cargo.toml"));
    all
}

#[test]
fn no_package_depends_on_the_testkit_outside_its_dev_dependencies() {
    let mut report = String::new();
    for manifest in manifests() {
        let text = std::fs::read_to_string(&manifest).expect("read manifest");
        for hit in testkit_outside_dev(&text) {
            report.push_str(&format!("{}: {hit}\n", manifest.display()));
        }
    }
    assert!(
        report.is_empty(),
        "dfx-testkit (test doubles) may only be a dev-dependency:\n{report}"
    );
    let kit = std::fs::read_to_string(
        manifests()
            .iter()
            .find(|p| p.ends_with("dfx-testkit/Cargo.toml"))
            .expect("crates/dfx-testkit/Cargo.toml"),
    )
    .expect("read the testkit's manifest");
    assert!(
        kit.lines().any(|l| l.trim() == "publish = false"),
        "dfx-testkit is never published"
    );
}

/// The check sees each way a manifest can make the testkit a normal dependency, and
/// nothing in dev-dependencies or comments.
#[test]
fn the_check_sees_a_normal_dependency_on_the_testkit() {
    let manifest = "\
[workspace.dependencies]
dfx-testkit = { path = \"crates/dfx-testkit\" }

[dependencies]
dfx-core.workspace = true
# dfx-testkit is only for tests
dfx-testkit.workspace = true
kit = { package = \"dfx-testkit\", path = \"../dfx-testkit\" }

[build-dependencies]
dfx-testkit = { workspace = true }

[target.'cfg(unix)'.dependencies]
dfx-testkit.workspace = true

[dev-dependencies]
dfx-testkit.workspace = true

[target.'cfg(unix)'.dev-dependencies]
dfx-testkit.workspace = true

[dependencies.dfx-testkit]
workspace = true

[dev-dependencies.dfx-testkit]
workspace = true
";
    let lines: Vec<String> = testkit_outside_dev(manifest)
        .iter()
        .map(|h| h.split(':').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        lines,
        ["line 7", "line 8", "line 11", "line 14", "line 22"],
        "{manifest}"
    );
}
