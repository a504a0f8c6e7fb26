//! Filesystem helpers: atomic writes, the bounded reader of every input file, and
//! path-safe names.

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

/// Why [`read_bounded`] refused or failed to read a file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A FIFO, a device, a socket or a folder: reading it could block or never end.
    #[error("{}: not a regular file ({kind})", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// Larger than the cap for its kind of file.
    #[error("{}: larger than {max} bytes", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The cap, bytes.
        max: u64,
    },
    /// Text was expected.
    #[error("{}: not UTF-8 text", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
}

impl ReadError {
    /// What is wrong, without the path (for errors that name the file themselves).
    pub fn problem(&self) -> String {
        match self {
            ReadError::Io { source, .. } => format!("cannot read: {source}"),
            ReadError::NotRegular { kind, .. } => format!("not a regular file ({kind})"),
            ReadError::TooLarge { max, .. } => format!("larger than {max} bytes"),
            ReadError::NotUtf8 { .. } => "not UTF-8 text".into(),
        }
    }

    /// The error as an `io::Error` (kind `NotFound` kept), for callers with I/O errors.
    pub fn into_io(self) -> std::io::Error {
        match self {
            ReadError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => source,
            other => std::io::Error::other(other.problem()),
        }
    }
}

/// The one reader of files the suite and `dfx-perf` are given (configs, `$ref` files,
/// baselines, deploy files, datasets, run folders): a regular file (links followed) of at
/// most `max` bytes, never more read, so a FIFO cannot block and `/dev/zero` cannot fill
/// memory.
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let len = check_regular(path, max)?;
    let too_large = || ReadError::TooLarge {
        path: path.to_path_buf(),
        max,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    f.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The checks of [`read_bounded`] without the read, for files another library opens (a
/// WAV decoder): a regular file of at most `max` bytes; its size.
pub fn check_regular(path: &Path, max: u64) -> Result<u64, ReadError> {
    let meta = std::fs::metadata(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let kind = file_kind(&meta);
    if kind != "file" {
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            kind,
        });
    }
    if meta.len() > max {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            max,
        });
    }
    Ok(meta.len())
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_text_bounded(path: &Path, max: u64) -> Result<String, ReadError> {
    String::from_utf8(read_bounded(path, max)?).map_err(|_| ReadError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        "file"
    } else if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
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

/// Bytes [`log_tail`] reads from the end of a log to find its lines.
const LOG_TAIL_BYTES: u64 = 64 * 1024;

/// The last `lines` lines of a log, with progress-bar redraws (`\r`) collapsed to their
/// final state. Empty when the log cannot be read.
pub fn log_tail(path: &Path, lines: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(LOG_TAIL_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    if f.take(LOG_TAIL_BYTES).read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut all: Vec<&str> = text
        .split('\n')
        .map(|l| l.trim_end_matches('\r'))
        .map(|l| l.rsplit('\r').next().unwrap_or(l))
        .collect();
    if start > 0 && !all.is_empty() {
        all.remove(0); // a partial first line
    }
    while all.last().is_some_and(|l| l.is_empty()) {
        all.pop();
    }
    let from = all.len().saturating_sub(lines);
    all[from..].join("\n")
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
    fn the_bounded_reader_refuses_what_could_hang_or_fill_memory() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("baseline.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo");
        let e = read_bounded(&fifo, 1024).unwrap_err();
        assert!(e.to_string().contains("not a regular file (a FIFO)"), "{e}");
        let e = read_bounded(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(e.to_string().contains("(a device)"), "{e}");
        let link = dir.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(matches!(
            read_bounded(&link, 1024),
            Err(ReadError::NotRegular { .. })
        ));
        let e = read_bounded(dir.path(), 1024).unwrap_err();
        assert!(e.problem().contains("a folder"), "{e}");
        let big = dir.path().join("big.json");
        std::fs::write(&big, vec![b'x'; 2048]).unwrap();
        assert!(matches!(
            read_bounded(&big, 2047),
            Err(ReadError::TooLarge { max: 2047, .. })
        ));
        assert_eq!(read_bounded(&big, 2048).unwrap().len(), 2048);
        std::fs::write(&big, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_text_bounded(&big, 10),
            Err(ReadError::NotUtf8 { .. })
        ));
        let missing = read_bounded(&dir.path().join("nope"), 10).unwrap_err();
        assert_eq!(missing.into_io().kind(), std::io::ErrorKind::NotFound);
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

    #[test]
    fn tail_keeps_last_lines_and_final_progress_state() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bench.log");
        let mut text = String::new();
        for i in 0..50 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str(" 10%|#\r 50%|#####\r100%|##########\n\n");
        std::fs::write(&p, text).unwrap();
        let tail = log_tail(&p, 3);
        assert_eq!(tail, "line 48\nline 49\n100%|##########");
        assert_eq!(log_tail(&dir.path().join("none.log"), 3), "");
    }
}
