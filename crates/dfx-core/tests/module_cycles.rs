//! No import cycle between sibling modules inside any crate of the workspace, and one
//! module style (issue #36). The graph and the rule are in `module_cycles/graph.rs`.

#[path = "module_cycles/graph.rs"]
mod graph;

use std::path::Path;

fn crate_sources() -> Vec<std::path::PathBuf> {
    let root = workspace_root();
    let mut srcs = vec![root.join("src")];
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.expect("crates/ entry").path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    srcs.extend(crates);
    srcs
}

#[test]
fn no_import_cycle_inside_any_crate() {
    let mut report = String::new();
    for src in crate_sources() {
        let graph = graph::read_crate(&src).expect("read crate sources");
        for (modules, evidence) in graph::sibling_cycles(&graph) {
            report.push_str(&format!(
                "{}: cycle between {}\n",
                src.strip_prefix(workspace_root()).unwrap_or(&src).display(),
                modules.join(" ↔ ")
            ));
            for e in evidence {
                report.push_str(&format!("    {e}\n"));
            }
        }
    }
    assert!(report.is_empty(), "import cycles inside crates:\n{report}");
}

/// A module with children is `foo/mod.rs`, never `foo.rs` beside a `foo/` folder.
#[test]
fn one_module_style() {
    fn walk(dir: &Path, pairs: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.with_extension("rs").is_file() {
                    let root = workspace_root();
                    let shown = p.strip_prefix(root).unwrap_or(&p).display().to_string();
                    pairs.push(format!(
                        "{shown}.rs beside {shown}/ (make it {shown}/mod.rs)"
                    ));
                }
                walk(&p, pairs);
            }
        }
    }
    let mut pairs = Vec::new();
    for src in crate_sources() {
        walk(&src, &mut pairs);
    }
    assert!(pairs.is_empty(), "two module styles:\n{}", pairs.join("\n"));
}

/// The checker itself finds a cycle it is shown, ignores parent/child use and test code,
/// and expands grouped imports.
#[test]
fn the_checker_sees_a_sibling_cycle_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::A;\n");
    write(
        "a/mod.rs",
        "mod inner;\nuse crate::{b::B, c};\npub struct A;\n",
    );
    write("a/inner.rs", "use super::A;\n");
    write("b.rs", "use crate::a::inner::{self as i};\npub struct B;\n");
    write(
        "c.rs",
        "pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n",
    );
    write("c_tests.rs", "use crate::a::A;\n");
    let graph = graph::read_crate(src).expect("read");
    let cycles = graph::sibling_cycles(&graph);
    let names: Vec<_> = cycles.iter().map(|(m, _)| m.join(" ↔ ")).collect();
    assert_eq!(names, vec!["a ↔ b".to_string()], "{cycles:?}");

    // Without b's import there is none: `c`'s test code and `a::inner`'s `super` do not count.
    write("b.rs", "pub struct B;\n");
    let graph = graph::read_crate(src).expect("read");
    assert!(graph::sibling_cycles(&graph).is_empty());
}

#[test]
fn grouped_imports_expand() {
    let paths = graph::expand("crate::a::{b, c::{d as e, f}, self}");
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        joined,
        [
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c::f",
            "crate::a::self"
        ]
    );
}

/// The workspace root (this test lives in crates/dfx-core and reads every crate). It is a
/// dfx-core test, not a root-package one, so that `cargo test -- --assert-baseline …`
/// (which passes suite flags to every root test target) never reaches libtest's parser here.
fn workspace_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}
