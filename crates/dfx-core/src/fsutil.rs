//! Filesystem helpers: atomic writes and path-safe names.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename.
/// Readers see either the old content or the new, never a partial file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp: PathBuf = dir.join(format!(".{file_name}.tmp.{}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    // A full disk must not keep the partial temp file: it would hold the space and break
    // every later write of the same file.
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes pretty JSON atomically, with a trailing newline.
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Turns any string (a test name, a trial name) into one safe path component: characters
/// outside `[A-Za-z0-9._-]` become `_`, leading dots are replaced, and the result is never
/// empty, `.` or `..`, so a `test_name` of `../../x` cannot leave the results folder.
pub fn sanitize_component(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    while out.starts_with('.') {
        out.replace_range(0..1, "_");
    }
    if out.is_empty() {
        out.push('_');
    }
    out.truncate(200);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_never_escapes() {
        assert_eq!(sanitize_component("../../x"), "_._.._x");
        assert_eq!(sanitize_component(".."), "_.");
        assert_eq!(sanitize_component(""), "_");
        assert_eq!(
            sanitize_component("test_a::voice_clone::c16"),
            "test_a__voice_clone__c16"
        );
        assert!(!sanitize_component("a/b\\c").contains(['/', '\\']));
    }

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/result.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let leftovers: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    }

    #[test]
    fn a_failed_atomic_write_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        // A non-empty folder where the file should go: the final rename fails.
        let p = dir.path().join("report.html");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("keep"), b"x").unwrap();
        assert!(write_atomic(&p, b"<html>").is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["report.html"], "temp file left behind");
    }
}
