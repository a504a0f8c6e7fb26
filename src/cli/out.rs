//! The commands' standard output. A reader that goes away (`dfx-perf deploy | head -1`)
//! is not an error: from the first broken-pipe write on, output is discarded and the
//! command finishes its work and exits with its own status, without a panic or a message
//! (like ripgrep, whose status is then 0 too). Any other write error is reported once on
//! stderr and makes the command exit with status 1.

use std::fmt;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static BROKEN: AtomicBool = AtomicBool::new(false);
static FAILED: Mutex<Option<String>> = Mutex::new(None);

/// Writes to stdout, see the module docs. Use through [`outln!`] / [`out!`].
pub fn write(args: fmt::Arguments<'_>) {
    if BROKEN.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        note(e);
    }
}

fn note(e: std::io::Error) {
    BROKEN.store(true, Ordering::Relaxed);
    if e.kind() != std::io::ErrorKind::BrokenPipe {
        let mut failed = FAILED.lock().unwrap_or_else(|p| p.into_inner());
        failed.get_or_insert_with(|| e.to_string());
    }
}

/// The write error other than a broken pipe, if one happened.
pub fn failure() -> Option<String> {
    FAILED.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// `print!` to [`write()`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::out::write(format_args!($($arg)*)) };
}

/// `println!` to [`write()`].
macro_rules! outln {
    () => { $crate::cli::out::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::out::write(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {out, outln};
