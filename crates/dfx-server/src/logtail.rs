//! The last lines of a (possibly large) log file.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Bytes read from the end of the file; enough for 40 long lines.
const WINDOW: u64 = 256 * 1024;

/// The last `lines` lines of `path` ("" when it cannot be read).
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(WINDOW);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    if f.take(WINDOW).read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    // When the window cut a line in half, drop that partial first line.
    let skip_partial = usize::from(start > 0 && all.len() > lines);
    let from = all.len().saturating_sub(lines).max(skip_partial);
    all[from..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let t = tail(&p, 3);
        assert_eq!(t, "line 98\nline 99\nline 100");
        assert_eq!(tail(&dir.path().join("missing"), 3), "");
    }
}
