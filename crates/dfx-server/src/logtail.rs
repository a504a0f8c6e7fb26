//! The last lines of a (possibly large) log file.

use std::path::Path;

/// The last `lines` lines of `path` ("" when it cannot be read): dfx-core's
/// [`dfx_core::fsutil::log_tail`], the one reader of log tails (progress-bar redraws
/// collapsed to their final state).
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    dfx_core::fsutil::log_tail(path, lines)
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
