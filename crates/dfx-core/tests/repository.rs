//! Checks of the repository itself, so that a fresh clone stands alone:
//!
//! - no file reads or mentions the folder that sat beside the first checkouts (the
//!   project's inputs now live in `tests/reference/` and `docs/`);
//! - every design-document reference resolves: a `*.md` path in code, scripts or
//!   manifests exists relative to the repository root, the file's folder or its crate, and
//!   every relative markdown link in a `.md` file exists relative to that file.
//!
//! `docs/research/` (notes on upstream's code, citing upstream paths) and the upstream
//! data in `tests/reference/` are exempt from the link check, not from the first one;
//! so are the names of files a run writes (`report.md`, `compare.md`, `history.md`) and this file's own
//! scanner examples.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root exists")
}

/// Every file of the work tree except build output and git's own folder.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if name != "target" && name != ".git" {
                    stack.push(path);
                }
            } else if kind.is_file() {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn rel<'a>(root: &Path, p: &'a Path) -> &'a Path {
    p.strip_prefix(root).unwrap_or(p)
}

#[test]
fn no_file_mentions_the_sibling_folder() {
    // Spelled in pieces so this file does not match itself.
    let needles = [
        concat!("..", "/shared"),
        concat!("shared", "/reference"),
        concat!("shared", "/spec"),
    ];
    let root = repo_root();
    let mut hits = Vec::new();
    for f in files(&root) {
        let Ok(text) = std::fs::read(&f) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        for (n, line) in text.lines().enumerate() {
            if needles.iter().any(|needle| line.contains(needle)) {
                hits.push(format!(
                    "{}:{}: {}",
                    rel(&root, &f).display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "files that mention the sibling folder (the repository must stand alone):\n{}",
        hits.join("\n")
    );
}

/// `*.md` path tokens in `text`: runs of `[A-Za-z0-9_./-]` ending in `.md` (not `.mdx`),
/// URLs left out.
fn md_tokens(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let path_char = |b: u8| b.is_ascii_alphanumeric() || b"_./-".contains(&b);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(".md") {
        let end = from + i + 3;
        from = end;
        if bytes
            .get(end)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            continue;
        }
        let mut start = end - 3;
        while start > 0 && path_char(bytes[start - 1]) {
            start -= 1;
        }
        let token = &text[start..end];
        let url = start >= 1 && bytes[start - 1] == b':' || token.starts_with("//");
        if token.len() > 3 && !url && !token.starts_with(".md") {
            out.push(token);
        }
    }
    out
}

/// Relative link targets of markdown links `](target)` in `text`, anchors cut.
fn md_links(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("](") {
        let start = from + i + 2;
        let Some(len) = text[start..].find(')') else {
            break;
        };
        from = start + len;
        let target = text[start..start + len].split('#').next().unwrap_or("");
        let target = target.split_whitespace().next().unwrap_or("");
        if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        out.push(target);
    }
    out
}

/// The nearest folder at or above `file` that holds a `Cargo.toml`.
fn crate_dir(file: &Path) -> Option<&Path> {
    file.ancestors()
        .skip(1)
        .find(|d| d.join("Cargo.toml").is_file())
}

/// Markdown files dfx-perf writes into run folders: named in docs, never in the tree.
const GENERATED: [&str; 3] = ["report.md", "compare.md", "history.md"];

#[test]
fn every_doc_reference_resolves() {
    let root = repo_root();
    let exempt = [
        root.join("docs/research"),
        root.join("tests/reference"),
        root.join(file!().trim_start_matches("crates/dfx-core/")),
        root.join(file!()),
    ];
    let mut broken = Vec::new();
    for f in files(&root) {
        if exempt.iter().any(|e| f.starts_with(e)) {
            continue;
        }
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        let is_md = ext == "md";
        if !(is_md || ["rs", "sh", "toml", "yml", "yaml"].contains(&ext) || ext.is_empty()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let dir = f.parent().unwrap_or(&root);
        let bases: Vec<&Path> = [Some(root.as_path()), Some(dir), crate_dir(&f)]
            .into_iter()
            .flatten()
            .collect();
        for (n, line) in text.lines().enumerate() {
            let at = || format!("{}:{}", rel(&root, &f).display(), n + 1);
            for t in md_tokens(line) {
                let name = t.rsplit('/').next().unwrap_or(t);
                if GENERATED.contains(&name) {
                    continue;
                }
                if !bases.iter().any(|b| b.join(t).exists()) {
                    broken.push(format!("{}: `{t}` does not exist", at()));
                }
            }
            if is_md {
                for t in md_links(line) {
                    if !dir.join(t).exists() {
                        broken.push(format!("{}: link ({t}) does not exist", at()));
                    }
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "doc references that point nowhere (code: a path from the repository root, the \
         file's folder or its crate; markdown links: relative to the file):\n{}",
        broken.join("\n")
    );
}

#[test]
fn token_and_link_scanners() {
    assert_eq!(
        md_tokens("see docs/simulator.md (\"API\") and SIM.md, not a.mdx or https://x.io/a.md"),
        ["docs/simulator.md", "SIM.md"]
    );
    assert_eq!(
        md_links("[a](../b.md#x) [c](https://e.org) [d](#top) [e](f/g.md \"t\")"),
        ["../b.md", "f/g.md"]
    );
}
