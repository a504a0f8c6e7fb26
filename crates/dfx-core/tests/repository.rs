//! Checks of the repository itself, so that a fresh clone stands alone:
//!
//! - no file reads or mentions the folder that sat beside the first checkouts (the
//!   project's inputs now live in `tests/reference/` and `docs/`);
//! - every design-document reference resolves: a `*.md` path in code, scripts or
//!   manifests exists relative to the repository root, the file's folder or its crate, and
//!   every relative markdown link in a `.md` file exists relative to that file;
//! - every `#anchor` of a relative markdown link names a heading of its target;
//! - every row of `docs/reference/where-is.md` names files that exist and a symbol that
//!   occurs in its source file.
//!
//! `docs/research/` (notes on upstream's code, citing upstream paths) and the upstream
//! data in `tests/reference/` are exempt from the link check, not from the first one;
//! so are the reference generators (their links are relative to `docs/reference/`),
//! the names of files a run writes (`report.md`, `compare.md`, `history.md`) and this file's own
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

/// The destination of every markdown link `](destination "title")` in `text`, title cut.
fn link_destinations(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("](") {
        let start = from + i + 2;
        let Some(len) = text[start..].find(')') else {
            break;
        };
        from = start + len;
        out.push(
            text[start..start + len]
                .split_whitespace()
                .next()
                .unwrap_or(""),
        );
    }
    out
}

/// Relative link targets of markdown links `](target)` in `text`, anchors cut.
fn md_links(text: &str) -> Vec<&str> {
    link_destinations(text)
        .into_iter()
        .map(|d| d.split('#').next().unwrap_or(""))
        .filter(|t| !(t.is_empty() || t.contains("://") || t.starts_with("mailto:")))
        .collect()
}

/// The nearest folder at or above `file` that holds a `Cargo.toml`.
fn crate_dir(file: &Path) -> Option<&Path> {
    file.ancestors()
        .skip(1)
        .find(|d| d.join("Cargo.toml").is_file())
}

/// Markdown files dfx-perf writes into run folders (and the parity harness into its
/// output folder): named in docs, never in the tree.
const GENERATED: [&str; 4] = ["report.md", "compare.md", "history.md", "table.md"];

#[test]
fn every_doc_reference_resolves() {
    let root = repo_root();
    let exempt = [
        root.join("docs/research"),
        root.join("tests/reference"),
        root.join(file!().trim_start_matches("crates/dfx-core/")),
        root.join(file!()),
        // The reference generators: their links are relative to `docs/reference/`, and
        // the pages they write are checked as markdown below.
        root.join("crates/dfx-harness/src/reference.rs"),
        root.join("src/cli/reference.rs"),
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

/// `(target, anchor)` of every markdown link `](target#anchor)` in `text` that is not a
/// URL; `target` is empty for a link into the same file.
fn md_anchors(text: &str) -> Vec<(&str, &str)> {
    link_destinations(text)
        .into_iter()
        .filter(|d| !d.contains("://"))
        .filter_map(|d| d.split_once('#'))
        .collect()
}

/// The anchors a markdown renderer (GitHub, mdBook) gives the headings of `text`:
/// lowercased, punctuation dropped, spaces as `-`, repeats numbered `-1`, `-2`.
fn heading_anchors(text: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        }
        let Some(title) = line.strip_prefix('#').filter(|_| !fence) else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen
            .iter()
            .filter(|s| {
                s.as_str() == slug
                    || s.strip_prefix(&format!("{slug}-"))
                        .is_some_and(|r| r.parse::<u32>().is_ok())
            })
            .count();
        seen.push(if n == 0 { slug } else { format!("{slug}-{n}") });
    }
    seen
}

/// Every `#anchor` of a relative markdown link (into a `.md` file, or the same file)
/// names a heading of its target.
#[test]
fn every_markdown_anchor_resolves() {
    let root = repo_root();
    let exempt = [root.join("docs/research"), root.join("tests/reference")];
    let mut broken = Vec::new();
    for f in files(&root) {
        if exempt.iter().any(|e| f.starts_with(e)) || f.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for (target, anchor) in md_anchors(line) {
                let path = if target.is_empty() {
                    f.clone()
                } else {
                    f.parent().unwrap_or(&root).join(target)
                };
                if !target.is_empty() && !target.ends_with(".md") {
                    continue;
                }
                let Ok(body) = std::fs::read_to_string(&path) else {
                    continue; // a missing file is every_doc_reference_resolves' finding
                };
                if !heading_anchors(&body).iter().any(|a| a == anchor) {
                    broken.push(format!(
                        "{}:{}: ({target}#{anchor}) names no heading of {}",
                        rel(&root, &f).display(),
                        n + 1,
                        rel(&root, &path).display()
                    ));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "markdown anchors that point nowhere:\n{}",
        broken.join("\n")
    );
}

#[test]
fn anchor_scanners() {
    assert_eq!(
        md_anchors("[a](b.md#x-y) [c](https://e.org/#z) [d](#top) [e](f.md)"),
        [("b.md", "x-y"), ("", "top")]
    );
    assert_eq!(
        heading_anchors(
            "# Why did a trial fail?\n```\n# not a heading\n```\n## `dfx-perf run`\n## Why did a trial fail?"
        ),
        [
            "why-did-a-trial-fail",
            "dfx-perf-run",
            "why-did-a-trial-fail-1"
        ]
    );
}

/// The text of a table cell that is one backticked span.
fn unquote(c: &str) -> Option<&str> {
    let c = c.trim();
    c.strip_prefix('`')
        .and_then(|c| c.strip_suffix('`'))
        .filter(|c| !c.contains('`'))
}

/// The rows of `docs/reference/where-is.md`: (line, paths, symbol). A row's paths are its
/// cells holding one backticked path (with a `/`); its symbol is its last cell.
fn where_is_rows(text: &str) -> Vec<(usize, Vec<&str>, &str)> {
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(inner) = line
            .trim()
            .strip_prefix('|')
            .and_then(|l| l.strip_suffix('|'))
        else {
            continue;
        };
        let cells: Vec<&str> = inner.split('|').collect();
        let paths: Vec<&str> = cells
            .iter()
            .filter_map(|c| unquote(c))
            .filter(|c| c.contains('/') && !c.contains(' '))
            .collect();
        if let (false, Some(symbol)) = (paths.is_empty(), cells.last().and_then(|c| unquote(c))) {
            rows.push((n + 1, paths, symbol));
        }
    }
    rows
}

/// Every path of the "where is" page exists and its last (source) path holds the symbol.
#[test]
fn where_is_rows_resolve() {
    let root = repo_root();
    let page = "docs/reference/where-is.md";
    let text = std::fs::read_to_string(root.join(page)).expect("the where-is page exists");
    let rows = where_is_rows(&text);
    assert!(rows.len() >= 30, "{page}: only {} rows found", rows.len());
    let mut broken = Vec::new();
    for (line, paths, symbol) in rows {
        for p in &paths {
            if !root.join(p).exists() {
                broken.push(format!("{page}:{line}: `{p}` does not exist"));
            }
        }
        let source = paths.last().expect("a row has a path");
        let holds = std::fs::read_to_string(root.join(source)).is_ok_and(|t| t.contains(symbol));
        if !holds {
            broken.push(format!(
                "{page}:{line}: `{symbol}` does not occur in `{source}`"
            ));
        }
    }
    assert!(
        broken.is_empty(),
        "stale rows (the code moved?):\n{}",
        broken.join("\n")
    );
}

#[test]
fn where_is_scanner() {
    let rows = where_is_rows("| a | `x/y.rs` | `fn f` |\n|---|---|---|\n| b | c | `d` |");
    assert_eq!(rows, [(1, vec!["x/y.rs"], "fn f")]);
}
