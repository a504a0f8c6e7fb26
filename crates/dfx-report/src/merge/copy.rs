//! Copying a shard's files into the merged folder: hard links where the filesystem allows
//! (a run's files are never modified after it closed, and every later write replaces a
//! file by renaming), else a copy.

use std::path::Path;

use super::MergeError;

/// Copies the tree `src` to `dst` (which must not exist), hard-linking files.
pub(crate) fn tree(src: &Path, dst: &Path) -> Result<(), MergeError> {
    let meta = std::fs::symlink_metadata(src).map_err(|e| MergeError::io(src, e))?;
    if meta.file_type().is_symlink() {
        return link(src, dst);
    }
    if !meta.is_dir() {
        return file(src, dst);
    }
    std::fs::create_dir_all(dst).map_err(|e| MergeError::io(dst, e))?;
    let listing = std::fs::read_dir(src).map_err(|e| MergeError::io(src, e))?;
    for entry in listing {
        let entry = entry.map_err(|e| MergeError::io(src, e))?;
        tree(&entry.path(), &dst.join(entry.file_name()))?;
    }
    Ok(())
}

/// One file: a hard link, else a copy.
pub(crate) fn file(src: &Path, dst: &Path) -> Result<(), MergeError> {
    if std::fs::hard_link(src, dst).is_ok() {
        return Ok(());
    }
    std::fs::copy(src, dst)
        .map(|_| ())
        .map_err(|e| MergeError::io(dst, e))
}

#[cfg(unix)]
fn link(src: &Path, dst: &Path) -> Result<(), MergeError> {
    let target = std::fs::read_link(src).map_err(|e| MergeError::io(src, e))?;
    std::os::unix::fs::symlink(target, dst).map_err(|e| MergeError::io(dst, e))
}

#[cfg(not(unix))]
fn link(_src: &Path, _dst: &Path) -> Result<(), MergeError> {
    Ok(())
}
