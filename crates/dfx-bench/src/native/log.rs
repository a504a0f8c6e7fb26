//! `bench.log`: what the native bench printed, appended with one `write` per call (no
//! user-space buffer) so a crash keeps it, with the tail kept in memory for the failure
//! message.

use std::collections::VecDeque;
use std::io::Write;
use std::path::Path;

const TAIL_LINES: usize = 60;

/// The bench's log file and its recent lines.
#[derive(Debug)]
pub struct BenchLog {
    file: Option<std::fs::File>,
    tail: VecDeque<String>,
}

impl BenchLog {
    /// Creates (truncates) the log; without a writable file it only keeps the tail.
    pub fn create(path: &Path) -> Self {
        let file = path
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .ok()
            .and_then(|_| std::fs::File::create(path).ok());
        BenchLog {
            file,
            tail: VecDeque::new(),
        }
    }

    /// Logs a measured step's request errors and, when the load could not be offered,
    /// why (`request error: …`, `invalid load: …`).
    pub(crate) fn step_problems(&mut self, errors: &[String], invalid_load: Option<&str>) {
        for e in errors {
            self.write(&format!("request error: {e}"));
        }
        if let Some(why) = invalid_load {
            self.write(&format!("invalid load: {why}"));
        }
    }

    /// Appends `text` (one or more lines) in one `write`, so a crash keeps whole lines.
    pub fn write(&mut self, text: &str) {
        let mut block = String::with_capacity(text.len() + 1);
        for line in text.lines() {
            block.push_str(line);
            block.push('\n');
            if self.tail.len() == TAIL_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(line.to_string());
        }
        if let Some(f) = self.file.as_mut() {
            let _ = f.write_all(block.as_bytes());
        }
    }

    /// The last lines written.
    pub fn tail(&self) -> String {
        let mut s = self.tail.iter().cloned().collect::<Vec<_>>().join("\n");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_lands_whole_and_the_tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/bench.log");
        let mut log = BenchLog::create(&path);
        log.write("first\nsecond");
        // Readable at once, without a flush or a drop: nothing waits in a buffer.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first\nsecond\n");
        for i in 0..TAIL_LINES {
            log.write(&format!("line {i}"));
        }
        let tail = log.tail();
        assert!(!tail.contains("second"), "{tail}");
        assert!(
            tail.starts_with("line 0\n") && tail.ends_with("line 59\n"),
            "{tail}"
        );
        drop(log);
        let all = std::fs::read_to_string(&path).unwrap();
        assert_eq!(all.lines().count(), TAIL_LINES + 2);
    }
}
