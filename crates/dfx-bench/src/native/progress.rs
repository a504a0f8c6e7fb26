//! The progress line of a long step (`done/total, failed, elapsed`), drawn on stderr only
//! when stderr is a terminal, at most five times a second.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Progress of the measured requests of one step.
#[derive(Debug)]
pub(crate) struct Progress {
    label: String,
    total: usize,
    done: usize,
    failed: usize,
    start: Instant,
    last_draw: Option<Instant>,
    enabled: bool,
}

impl Progress {
    /// A progress line for `total` requests; drawn only if `wanted` and stderr is a TTY.
    pub(crate) fn new(label: &str, total: usize, wanted: bool) -> Self {
        Progress {
            label: label.to_string(),
            total,
            done: 0,
            failed: 0,
            start: Instant::now(),
            last_draw: None,
            enabled: wanted && std::io::stderr().is_terminal(),
        }
    }

    /// Counts one finished request and redraws if due.
    pub(crate) fn request_done(&mut self, ok: bool) {
        self.done += 1;
        if !ok {
            self.failed += 1;
        }
        let due = self
            .last_draw
            .is_none_or(|t| t.elapsed() >= Duration::from_millis(200));
        if self.enabled && (due || self.done == self.total) {
            self.draw();
        }
    }

    /// `label: 37/128 done, 1 failed, 12.3 s`.
    pub(crate) fn line(&self) -> String {
        format!(
            "{}: {}/{} done, {} failed, {:.1} s",
            self.label,
            self.done,
            self.total,
            self.failed,
            self.start.elapsed().as_secs_f64()
        )
    }

    fn draw(&mut self) {
        self.last_draw = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{}", self.line());
        let _ = err.flush();
    }

    /// Ends the line (terminal only).
    pub(crate) fn finish(&mut self) {
        if self.enabled && self.last_draw.is_some() {
            let _ = writeln!(std::io::stderr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_counts_done_and_failed() {
        let mut p = Progress::new("test_x::c4", 3, false);
        p.request_done(true);
        p.request_done(false);
        let line = p.line();
        assert!(
            line.starts_with("test_x::c4: 2/3 done, 1 failed, "),
            "{line}"
        );
        assert!(line.ends_with(" s"));
        // Not a terminal (or not wanted): nothing is drawn.
        assert!(!p.enabled);
    }
}
