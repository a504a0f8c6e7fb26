//! `manifest.json`: the last file of a run folder, listing every other file in it with its
//! size and sha256, so that a later reader (`merge`, `report`, `compare`, `history add`)
//! can prove the folder is what dfx-perf wrote: an edited, truncated, missing or extra
//! file is a [`Discrepancy`]. Written atomically, after everything else; a later rewrite
//! by dfx-perf inside the folder ([`update`]) keeps it current.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fsutil::write_json_atomic;

/// The manifest's file name, at the run folder's root.
pub const MANIFEST_FILE: &str = "manifest.json";

/// The format version written.
const VERSION: u32 = 1;

/// Largest manifest read (a run of thousands of trials writes a few MiB).
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// Discrepancies named in one error; the rest are counted.
const SHOWN: usize = 10;

/// `manifest.json` of a run folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Format version (1).
    pub manifest_version: u32,
    /// Every file of the run folder but `manifest.json` itself, sorted by path.
    pub files: Vec<ManifestEntry>,
}

/// One file of a run folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    /// Path relative to the run folder, `/`-separated.
    pub path: String,
    /// Size in bytes (of the link target's text for a symbolic link).
    pub size: u64,
    /// sha256 of the content (of the link target's text for a symbolic link), lower-case hex.
    pub sha256: String,
    /// The entry is a symbolic link (not followed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symlink: bool,
    /// A log that may still grow after the run closed (`servers/*/server.log`: a server
    /// group's guard process, which outlives an interrupted suite by design, appends its
    /// last words there): longer is accepted when the listed bytes are unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub appendable: bool,
}

/// Whether the file at `rel` is an appendable log (see [`ManifestEntry::appendable`]).
fn appendable(rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    matches!(parts.as_slice(), ["servers", _, "server.log"])
}

/// How a run folder differs from its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discrepancy {
    /// Listed, not on disk.
    Missing(String),
    /// On disk, not listed.
    Extra(String),
    /// Shorter than listed.
    Truncated {
        /// Relative path.
        path: String,
        /// Size on disk.
        size: u64,
        /// Size listed.
        listed: u64,
    },
    /// Same path, other content (or a longer file, or a file turned link).
    Edited(String),
}

impl std::fmt::Display for Discrepancy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Discrepancy::Missing(p) => write!(f, "{p}: missing"),
            Discrepancy::Extra(p) => write!(f, "{p}: not in the manifest (extra file)"),
            Discrepancy::Truncated { path, size, listed } => {
                write!(f, "{path}: truncated ({size} of {listed} bytes)")
            }
            Discrepancy::Edited(p) => write!(f, "{p}: edited (sha256 differs)"),
        }
    }
}

/// Why a run folder could not be verified, or its manifest not written.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The folder has no `manifest.json`.
    #[error(
        "{}: no {MANIFEST_FILE}, so its files cannot be verified (written by a dfx-perf before manifests, or the run was killed before it closed)",
        dir.display()
    )]
    NoManifest {
        /// The run folder.
        dir: PathBuf,
    },
    /// `manifest.json` is not a manifest.
    #[error("{}: not a valid manifest: {problem}", path.display())]
    Invalid {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The folder's files differ from the manifest.
    #[error("{}: does not match its {MANIFEST_FILE}: {}", dir.display(), list(problems))]
    Mismatch {
        /// The run folder.
        dir: PathBuf,
        /// Every difference, sorted by path.
        problems: Vec<Discrepancy>,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

fn list(problems: &[Discrepancy]) -> String {
    let mut s = problems
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if problems.len() > SHOWN {
        s.push_str(&format!("; and {} more", problems.len() - SHOWN));
    }
    s
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ManifestError + '_ {
    move |source| ManifestError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Lists every file under `dir` (but the root `manifest.json`), hashed, sorted by path.
pub fn scan(dir: &Path) -> Result<Vec<ManifestEntry>, ManifestError> {
    let mut out = Vec::new();
    walk(dir, "", &mut out)?;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<ManifestEntry>) -> Result<(), ManifestError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{prefix}{name}");
        if rel == MANIFEST_FILE {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(io(&path))?;
        if kind.is_dir() {
            walk(&path, &format!("{rel}/"), out)?;
        } else {
            out.push(entry_of(&path, rel, kind.is_symlink())?);
        }
    }
    Ok(())
}

fn entry_of(path: &Path, rel: String, symlink: bool) -> Result<ManifestEntry, ManifestError> {
    let (size, sha256) = if symlink {
        let target = std::fs::read_link(path).map_err(io(path))?;
        let bytes = target.to_string_lossy().into_owned().into_bytes();
        (bytes.len() as u64, sha256_hex(&bytes))
    } else {
        hash_file(path)?
    };
    Ok(ManifestEntry {
        appendable: !symlink && appendable(&rel),
        path: rel,
        size,
        sha256,
        symlink,
    })
}

fn hash_file(path: &Path) -> Result<(u64, String), ManifestError> {
    hash_prefix(path, u64::MAX)
}

/// Size and sha256 of the first `limit` bytes of the file at `path`.
fn hash_prefix(path: &Path, limit: u64) -> Result<(u64, String), ManifestError> {
    // A FIFO or a device put in the folder must not block or never end the hashing.
    crate::fsutil::check_regular(path, u64::MAX).map_err(|e| ManifestError::Io {
        path: path.to_path_buf(),
        source: e.into_io(),
    })?;
    let mut f = std::fs::File::open(path).map_err(io(path))?.take(limit);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((size, hex(&hasher.finalize())))
}

/// sha256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `dir/manifest.json` listing every file now in `dir`: call it after the last
/// other write into the folder.
pub fn write(dir: &Path) -> Result<Manifest, ManifestError> {
    let manifest = Manifest {
        manifest_version: VERSION,
        files: scan(dir)?,
    };
    let path = dir.join(MANIFEST_FILE);
    write_json_atomic(&path, &manifest).map_err(io(&path))?;
    Ok(manifest)
}

/// Reads and checks `dir/manifest.json` (size bound, shape, relative paths inside the
/// folder, no path twice).
pub fn read(dir: &Path) -> Result<Manifest, ManifestError> {
    let path = dir.join(MANIFEST_FILE);
    let invalid = |problem: String| ManifestError::Invalid {
        path: path.clone(),
        problem,
    };
    let text = match crate::fsutil::read_bounded(&path, MAX_MANIFEST_BYTES) {
        Ok(t) => t,
        Err(crate::fsutil::ReadError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Err(ManifestError::NoManifest {
                dir: dir.to_path_buf(),
            });
        }
        Err(crate::fsutil::ReadError::TooLarge { .. }) => {
            return Err(invalid(format!(
                "larger than {} MiB",
                MAX_MANIFEST_BYTES >> 20
            )));
        }
        Err(e) => return Err(invalid(e.problem())),
    };
    let manifest: Manifest = serde_json::from_slice(&text).map_err(|e| invalid(e.to_string()))?;
    if manifest.manifest_version != VERSION {
        return Err(invalid(format!(
            "manifest_version {} (accepted: {VERSION})",
            manifest.manifest_version
        )));
    }
    let mut seen = std::collections::BTreeSet::new();
    for e in &manifest.files {
        if !inside(&e.path) || e.path == MANIFEST_FILE {
            return Err(invalid(format!(
                "path {:?} (accepted: a relative path inside the run folder, not {MANIFEST_FILE})",
                e.path
            )));
        }
        if !seen.insert(e.path.as_str()) {
            return Err(invalid(format!("path {:?} listed twice", e.path)));
        }
    }
    Ok(manifest)
}

/// A relative path of plain components only (no `..`, no root, no `.`).
fn inside(rel: &str) -> bool {
    !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// Checks the run folder `dir` against its manifest: every listed file present with its
/// size and sha256, nothing else. The number of files verified.
pub fn verify(dir: &Path) -> Result<usize, ManifestError> {
    let manifest = read(dir)?;
    let on_disk = scan(dir)?;
    let mut problems = compare(&manifest.files, &on_disk);
    // A grown appendable log is fine when its listed bytes are intact.
    let listed: std::collections::BTreeMap<&str, &ManifestEntry> = manifest
        .files
        .iter()
        .map(|e| (e.path.as_str(), e))
        .collect();
    let mut kept = Vec::new();
    for p in problems.drain(..) {
        let grown_log = match &p {
            Discrepancy::Edited(rel) => listed
                .get(rel.as_str())
                .filter(|e| e.appendable && appendable(&e.path)),
            _ => None,
        };
        let intact = match grown_log {
            Some(e) => hash_prefix(&dir.join(&e.path), e.size)? == (e.size, e.sha256.clone()),
            None => false,
        };
        if !intact {
            kept.push(p);
        }
    }
    let problems = kept;
    if problems.is_empty() {
        Ok(on_disk.len())
    } else {
        Err(ManifestError::Mismatch {
            dir: dir.to_path_buf(),
            problems,
        })
    }
}

/// The differences between the listed and the found entries (both sorted by path).
fn compare(listed: &[ManifestEntry], found: &[ManifestEntry]) -> Vec<Discrepancy> {
    let found: std::collections::BTreeMap<&str, &ManifestEntry> =
        found.iter().map(|e| (e.path.as_str(), e)).collect();
    let mut problems = Vec::new();
    for want in listed {
        match found.get(want.path.as_str()) {
            None => problems.push(Discrepancy::Missing(want.path.clone())),
            Some(got) if got.size < want.size && got.symlink == want.symlink => {
                problems.push(Discrepancy::Truncated {
                    path: want.path.clone(),
                    size: got.size,
                    listed: want.size,
                })
            }
            Some(got) if *got != want => problems.push(Discrepancy::Edited(want.path.clone())),
            Some(_) => {}
        }
    }
    let listed: std::collections::BTreeSet<&str> = listed.iter().map(|e| e.path.as_str()).collect();
    for path in found.keys().filter(|p| !listed.contains(*p)) {
        problems.push(Discrepancy::Extra(path.to_string()));
    }
    problems.sort_by(|a, b| path_of(a).cmp(path_of(b)));
    problems
}

fn path_of(d: &Discrepancy) -> &str {
    match d {
        Discrepancy::Missing(p) | Discrepancy::Extra(p) | Discrepancy::Edited(p) => p,
        Discrepancy::Truncated { path, .. } => path,
    }
}

/// After dfx-perf rewrote the files `rels` (relative paths) of a run folder: their entries
/// of an existing manifest are replaced by the files as they are now (removed when gone);
/// every other entry stays as it was, so a rewrite never blesses a tampered file. A
/// folder without a manifest keeps having none. Whether a manifest was updated.
pub fn update(dir: &Path, rels: &[&str]) -> Result<bool, ManifestError> {
    let mut manifest = match read(dir) {
        Err(ManifestError::NoManifest { .. }) => return Ok(false),
        other => other?,
    };
    manifest.files.retain(|e| !rels.contains(&e.path.as_str()));
    for rel in rels {
        let path = dir.join(rel);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) => manifest.files.push(entry_of(
                &path,
                (*rel).to_string(),
                meta.file_type().is_symlink(),
            )?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&path)(e)),
        }
    }
    manifest.files.sort_by(|a, b| a.path.cmp(&b.path));
    let path = dir.join(MANIFEST_FILE);
    write_json_atomic(&path, &manifest).map_err(io(&path))?;
    Ok(true)
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
