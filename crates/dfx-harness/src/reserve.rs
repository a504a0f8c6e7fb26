//! File descriptors held back from the trials for the end of a run. A step that exhausts
//! the process's descriptors (or one that leaks them) must not also cost the run its
//! teardown and its final writes: `summary.json`, `run.json`, the reports and reading
//! `/proc` to check that every server group is gone. [`hold`] opens spare descriptors
//! when the run starts; [`release`] closes them just before teardown and the final writes.

use std::fs::File;
use std::sync::Mutex;

/// Spare descriptors held: the final writes open a handful of files at a time (a
/// temporary file and its rename, the reports' inputs), teardown reads `/proc`.
pub(crate) const SPARE: usize = 32;

static HELD: Mutex<Vec<File>> = Mutex::new(Vec::new());

/// Opens [`SPARE`] descriptors on `/dev/null` (fewer if the limit is already tight);
/// returns how many are held.
pub(crate) fn hold() -> usize {
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    while held.len() < SPARE {
        match File::open("/dev/null") {
            Ok(f) => held.push(f),
            Err(_) => break,
        }
    }
    held.len()
}

/// Closes the spare descriptors (idempotent), so what follows can open files.
pub(crate) fn release() {
    HELD.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

#[cfg(test)]
mod tests {
    fn held() -> usize {
        super::HELD.lock().unwrap().len()
    }

    #[test]
    fn hold_and_release() {
        assert_eq!(super::hold(), super::SPARE);
        assert_eq!(super::hold(), super::SPARE, "holding twice holds no more");
        assert_eq!(held(), super::SPARE);
        super::release();
        assert_eq!(held(), 0);
    }
}
