//! The module import graph of one crate, read from its source files, and its cycles.
//!
//! A module is a file (`src/a/b.rs` or `src/a/b/mod.rs` is `a::b`; `lib.rs` and `main.rs`
//! are the root). An import is any `crate::…`, `super::…` or `self::…` path in code (in
//! `use` items, braces expanded, or inline), resolved to the longest known module prefix.
//! Test code (`tests.rs`, `*_tests.rs`, and everything after a `#[cfg(test)]` line) does not
//! count: a test may reach anywhere.
//!
//! A parent and its descendants may use each other (a `mod.rs` re-exports, a child uses
//! `super::`): that is one unit. What must not happen is a cycle between siblings. So an
//! edge `a::b::c → a::d::e` is lifted to the children of the lowest common ancestor
//! (`a::b → a::d`), and every strongly connected component of more than one sibling is a
//! cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path segments; the root is empty.
pub(crate) type Module = Vec<String>;

/// Every module of a crate with the modules its code names.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    /// module → (module it imports → the first file:line that does).
    pub(crate) edges: BTreeMap<Module, BTreeMap<Module, String>>,
}

/// Reads every `.rs` file under `src` (a crate's source root).
pub(crate) fn read_crate(src: &Path) -> std::io::Result<Graph> {
    let mut files = Vec::new();
    collect(src, &mut files)?;
    let mut modules: BTreeMap<Module, PathBuf> = BTreeMap::new();
    for f in &files {
        if let Some(m) = module_of(src, f) {
            modules.insert(m, f.clone());
        }
    }
    let known: BTreeSet<Module> = modules.keys().cloned().collect();
    let mut graph = Graph::default();
    for (module, file) in &modules {
        if is_test_file(file) {
            continue;
        }
        let text = std::fs::read_to_string(file)?;
        let edges = graph.edges.entry(module.clone()).or_default();
        for (line_no, path) in paths_in(&text) {
            let Some(target) = resolve(module, &path, &known) else {
                continue;
            };
            if &target != module {
                let shown = file.strip_prefix(src).unwrap_or(file);
                let at = format!("{}:{}", shown.display(), line_no);
                edges.entry(target).or_insert(at);
            }
        }
    }
    Ok(graph)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            // `src/bin/*` are separate crates.
            if path.file_name().is_some_and(|n| n == "bin") && path.parent() == Some(dir) {
                continue;
            }
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn module_of(src: &Path, file: &Path) -> Option<Module> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return Some(Vec::new());
    }
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    Some(parts)
}

fn is_test_file(file: &Path) -> bool {
    file.file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s == "tests" || s.ends_with("_tests"))
}

/// Every `crate::`/`super::`/`self::` path in the code of `text` (before its first
/// `#[cfg(test)]`), with its 1-based line, as segments (`["crate", "a", "b"]`).
pub(crate) fn paths_in(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut use_item = String::new();
    let mut use_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = strip_comment(raw);
        let trimmed = line.trim();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if use_item.is_empty() {
            if let Some(rest) = use_start(trimmed) {
                use_item.push_str(rest);
                use_line = i + 1;
            } else {
                inline_paths(&line, i + 1, &mut out);
                continue;
            }
        } else {
            use_item.push(' ');
            use_item.push_str(trimmed);
        }
        if let Some(end) = use_item.find(';') {
            for path in expand(&use_item[..end]) {
                out.push((use_line, path));
            }
            use_item.clear();
        }
    }
    out
}

fn use_start(trimmed: &str) -> Option<&str> {
    let rest = trimmed
        .strip_prefix("pub(crate) use ")
        .or_else(|| trimmed.strip_prefix("pub(super) use "))
        .or_else(|| trimmed.strip_prefix("pub use "))
        .or_else(|| trimmed.strip_prefix("use "))?;
    let first = rest.trim_start_matches("::");
    (first.starts_with("crate") || first.starts_with("super") || first.starts_with("self"))
        .then_some(rest)
}

fn strip_comment(line: &str) -> String {
    // Good enough for this code base: `//` inside a string literal on an import line is
    // not a pattern it uses.
    match line.find("//") {
        Some(at) => line[..at].to_string(),
        None => line.to_string(),
    }
}

/// Expands `a::{b, c::{d, e}}` into `a::b`, `a::c::d`, `a::c::e` (aliases dropped).
pub(crate) fn expand(tree_src: &str) -> Vec<Vec<String>> {
    let mut tree = String::new();
    let mut tokens = tree_src.split_whitespace();
    while let Some(tok) = tokens.next() {
        if tok == "as" {
            // `X as Y`: keep what follows the alias (`,` or `}`), drop the alias.
            if let Some(alias) = tokens.next() {
                tree.extend(
                    alias
                        .chars()
                        .filter(|c| !(c.is_alphanumeric() || *c == '_')),
                );
            }
        } else {
            tree.push_str(tok);
        }
    }
    let mut out = Vec::new();
    expand_into(&tree, &mut Vec::new(), &mut out);
    out
}

fn expand_into(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    for item in split_top(tree) {
        let (head, group) = match item.find('{') {
            Some(at) if item.ends_with('}') => (&item[..at], Some(&item[at + 1..item.len() - 1])),
            _ => (item, None),
        };
        let segs: Vec<String> = head
            .split("::")
            .filter(|s| !s.is_empty() && *s != "*")
            .map(str::to_string)
            .collect();
        let depth = prefix.len();
        prefix.extend(segs);
        match group {
            Some(g) => expand_into(g, prefix, out),
            None => out.push(prefix.clone()),
        }
        prefix.truncate(depth);
    }
}

fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

fn inline_paths(line: &str, line_no: usize, out: &mut Vec<(usize, Vec<String>)>) {
    let bytes = line.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(at) = line[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let boundary = at == 0
                || !(bytes[at - 1].is_ascii_alphanumeric()
                    || bytes[at - 1] == b'_'
                    || bytes[at - 1] == b':');
            if !boundary {
                continue;
            }
            let end = line[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(line.len(), |e| at + e);
            let segs: Vec<String> = line[at..end]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            out.push((line_no, segs));
        }
    }
}

/// The known module a path names from `module` (`super` is always its parent module).
fn resolve(module: &Module, path: &[String], known: &BTreeSet<Module>) -> Option<Module> {
    let mut base: Module;
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &rest[1..];
        }
        Some("self") => {
            base = module.clone();
            rest = &rest[1..];
        }
        Some("super") => {
            base = module.clone();
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    for seg in rest {
        base.push(seg.clone());
        if !known.contains(&base) {
            base.pop();
            break;
        }
    }
    Some(base)
}

/// Cycles between siblings: each is the sorted list of modules (as `a::b`) in one strongly
/// connected component, with one edge of it as evidence.
pub(crate) fn sibling_cycles(graph: &Graph) -> Vec<(Vec<String>, Vec<String>)> {
    // parent → lifted edges between its children.
    let mut lifted: BTreeMap<Module, BTreeMap<String, BTreeMap<String, String>>> = BTreeMap::new();
    for (from, targets) in &graph.edges {
        for (to, at) in targets {
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // ancestor and descendant
            }
            let parent = from[..common].to_vec();
            let (a, b) = (from[common].clone(), to[common].clone());
            let evidence = format!("{} -> {} ({at})", join(from), join(to));
            lifted
                .entry(parent)
                .or_default()
                .entry(a)
                .or_default()
                .entry(b)
                .or_insert(evidence);
        }
    }
    let mut cycles = Vec::new();
    for (parent, edges) in &lifted {
        for scc in components(edges) {
            if scc.len() < 2 {
                continue;
            }
            let names = scc
                .iter()
                .map(|c| join(&[parent.clone(), vec![c.clone()]].concat()))
                .collect();
            let evidence = scc
                .iter()
                .flat_map(|a| {
                    edges.get(a).into_iter().flat_map(|t| {
                        t.iter()
                            .filter(|(b, _)| scc.contains(*b))
                            .map(|(_, e)| e.clone())
                    })
                })
                .collect();
            cycles.push((names, evidence));
        }
    }
    cycles
}

fn join(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// Strongly connected components (Kosaraju; the graphs are tiny).
fn components(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<BTreeSet<String>> {
    let mut nodes: BTreeSet<&String> = edges.keys().collect();
    nodes.extend(edges.values().flat_map(|t| t.keys()));
    let reach = |start: &String, forward: bool| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(n) = stack.pop() {
            if !seen.insert(n.clone()) {
                continue;
            }
            for (a, targets) in edges {
                for b in targets.keys() {
                    let (from, to) = if forward { (a, b) } else { (b, a) };
                    if *from == n && !seen.contains(to) {
                        stack.push(to.clone());
                    }
                }
            }
        }
        seen
    };
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for n in nodes {
        if done.contains(n) {
            continue;
        }
        let fwd = reach(n, true);
        let back = reach(n, false);
        let scc: BTreeSet<String> = fwd.intersection(&back).cloned().collect();
        done.extend(scc.iter().cloned());
        out.push(scc);
    }
    out
}
