//! `bench.log`: what the native bench printed, appended and flushed line by line so a
//! crash keeps it, with the tail kept in memory for the failure message.

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

    /// Appends `text` (one or more lines).
    pub fn write(&mut self, text: &str) {
        for line in text.lines() {
            if let Some(f) = self.file.as_mut() {
                let _ = writeln!(f, "{line}");
            }
            if self.tail.len() == TAIL_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(line.to_string());
        }
        if let Some(f) = self.file.as_mut() {
            let _ = f.flush();
        }
    }

    /// The last lines written.
    pub fn tail(&self) -> String {
        let mut s = self.tail.iter().cloned().collect::<Vec<_>>().join("\n");
        s.push('\n');
        s
    }
}
