//! At most [`LIMIT`] library signatures in the workspace return `Result<_, String>` (issue #36,
//! deliverable 7): errors are typed (thiserror) and carry their context and source. The few
//! that remain are the places where a string really is the domain.
//!
//! A source scan: every `fn` signature (multi-line aware, up to its body or `;`) whose return
//! type is `Result<.., String>` counts. Test code (`tests.rs`, `*_tests.rs`, and the item after
//! a `#[cfg(test)]`) does not; binaries (`src/cli`, `src/bin`, `src/main.rs`) do not either.

use std::path::{Path, PathBuf};

/// The most `Result<_, String>` signatures the library code may hold.
const LIMIT: usize = 8;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            let name = p.file_name().and_then(|s| s.to_str()).unwrap_or("");
            if !matches!(name, "bin" | "cli" | "tests") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") && !is_excluded_file(&p) {
            out.push(p);
        }
    }
}

fn is_excluded_file(file: &Path) -> bool {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    stem == "tests" || stem.ends_with("_tests") || stem == "main"
}

/// The text with comments, string and char literals blanked (newlines kept), so braces and
/// `fn` inside them do not count.
fn strip(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && raw_start(&b, i) {
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            // b[j] == '"'
            let mut k = j + 1;
            while k < b.len() {
                if b[k] == '"' && (0..hashes).all(|h| b.get(k + 1 + h) == Some(&'#')) {
                    k += 1 + hashes;
                    break;
                }
                k += 1;
            }
            for &ch in &b[i..k.min(b.len())] {
                blank(&mut out, ch);
            }
            i = k;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            if i < b.len() {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == '\'' && (next == Some('\\') || b.get(i + 2) == Some(&'\'')) {
            let mut k = i + 1;
            if b.get(k) == Some(&'\\') {
                k += 1;
            }
            k += 1;
            while k < b.len() && b[k] != '\'' {
                k += 1;
            }
            for &ch in &b[i..(k + 1).min(b.len())] {
                blank(&mut out, ch);
            }
            i = k + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `r"` / `r#"` starts a raw string only when `r` is not the tail of an identifier.
fn raw_start(b: &[char], i: usize) -> bool {
    let prev_ident = i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_');
    let mut j = i + 1;
    while b.get(j) == Some(&'#') {
        j += 1;
    }
    !prev_ident && b.get(j) == Some(&'"')
}

/// The stripped text with every item that follows a `#[cfg(test)]` blanked.
fn without_test_items(text: &str) -> String {
    let mut out: Vec<char> = text.chars().collect();
    let pat: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + pat.len() <= out.len() {
        if out[i..i + pat.len()] != pat[..] {
            i += 1;
            continue;
        }
        // Blank up to the end of the next item: a `;` at depth 0 or its closing brace.
        let mut depth = 0usize;
        let mut j = i;
        while j < out.len() {
            let c = out[j];
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        out[j] = ' ';
                        break;
                    }
                }
                ';' if depth == 0 && j > i + pat.len() => {
                    out[j] = ' ';
                    break;
                }
                _ => {}
            }
            if c != '\n' {
                out[j] = ' ';
            }
            j += 1;
        }
        i = j + 1;
    }
    out.into_iter().collect()
}

/// Every `fn` signature in `src` returning `Result<_, String>`, as (1-based line, signature).
fn string_error_signatures(src: &str) -> Vec<(usize, String)> {
    let text = without_test_items(&strip(src));
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i + 3 <= chars.len() {
        let is_fn = chars[i] == 'f'
            && chars[i + 1] == 'n'
            && chars[i + 2].is_whitespace()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'));
        if !is_fn {
            i += 1;
            continue;
        }
        let end = signature_end(&chars, i);
        let sig: String = chars[i..end].iter().collect();
        let sig = sig.split_whitespace().collect::<Vec<_>>().join(" ");
        if returns_string_error(&sig) {
            let line = chars[..i].iter().filter(|&&c| c == '\n').count() + 1;
            found.push((line, sig));
        }
        i = end;
    }
    found
}

/// Where the signature starting at `start` ends: its body's `{` or the `;` of a
/// declaration, outside parentheses and brackets (`[&str; 2]` is a parameter type).
fn signature_end(chars: &[char], start: usize) -> usize {
    let mut depth = 0usize;
    for (j, &c) in chars.iter().enumerate().skip(start) {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            '{' | ';' if depth == 0 => return j,
            _ => {}
        }
    }
    chars.len()
}

/// Whether the signature's return type is `Result<.., String>`.
fn returns_string_error(sig: &str) -> bool {
    let Some(pos) = sig.rfind("->") else {
        return false;
    };
    let ret = sig[pos + 2..].split(" where ").next().unwrap_or("").trim();
    let ret = ret.replace(' ', "").replace(",>", ">");
    (ret.starts_with("Result<") || ret.contains("::Result<"))
        && (ret.ends_with(",String>") || ret.ends_with(",std::string::String>"))
}

fn library_sources() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.expect("crates/ entry").path().join("src"))
        .collect();
    crates.sort();
    for src in crates {
        rust_files(&src, &mut files);
    }
    files.sort();
    files
}

#[test]
fn few_library_signatures_return_string_errors() {
    let root = workspace_root();
    let mut hits = Vec::new();
    for file in library_sources() {
        let src = std::fs::read_to_string(&file).expect("read source");
        for (line, sig) in string_error_signatures(&src) {
            let rel = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .display()
                .to_string();
            hits.push(format!("{rel}:{line}: {sig}"));
        }
    }
    if std::env::var_os("STRING_ERRORS_LIST").is_some() {
        eprintln!("{}", hits.join("\n"));
    }
    assert!(
        hits.len() <= LIMIT,
        "{} library signatures return Result<_, String> (at most {LIMIT}); type them:\n{}",
        hits.len(),
        hits.join("\n")
    );
}

/// The scanner sees multi-line signatures and nested generics, and skips comments, strings,
/// test items and other error types.
#[test]
fn the_scanner_counts_what_it_should() {
    let src = r##"
/// fn doc(x: u8) -> Result<(), String> {}
pub fn a(x: u8) -> Result<Vec<String>, String> { let s = "fn q() -> Result<(), String> {"; x }
pub(crate) fn b(
    path: &Path,
) -> Result<
    (u8, u8),
    String,
> {
    todo!()
}
fn c() -> Result<String, MyError> { todo!() }
fn d() -> std::result::Result<(), String>;
fn e<F: Fn() -> Result<(), String>>(f: F) -> u8 { 0 }
let raw = r#"fn r() -> Result<(), String> {"#;
#[cfg(test)]
mod tests {
    fn t() -> Result<(), String> { Ok(()) }
}
fn after_tests() -> Result<u8, String> { let c = '{'; Ok(1) }
fn array_param(keys: [&str; 2]) -> Result<u64, String> { Ok(0) }
"##;
    let found: Vec<usize> = string_error_signatures(src)
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    assert_eq!(
        found,
        vec![3, 4, 13, 20, 21],
        "{:?}",
        string_error_signatures(src)
    );
}

/// The workspace root (this test lives in crates/dfx-core and reads every crate). It is a
/// dfx-core test, not a root-package one, so that `cargo test -- --assert-baseline …`
/// (which passes suite flags to every root test target) never reaches libtest's parser here.
fn workspace_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}
