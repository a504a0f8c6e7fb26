//! The seed-tts family of datasets: where a `dataset_path` is found, how `meta.lst` is
//! read, and which rows a step sends (shuffled with the run seed, oversampled with
//! replacement).

use std::path::{Component, Path, PathBuf};

use crate::native::BenchError;
use crate::native::upstream_rng::PyRandom;

/// The datasets the native bench implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetKind {
    /// `seed-tts`: voice clone, a reference clip and its transcript per row.
    SeedTts,
    /// `seed-tts-text`: default voice, the text only.
    SeedTtsText,
    /// `seed-tts-design`: voice design, a voice description (5th field) per row.
    SeedTtsDesign,
}

impl DatasetKind {
    /// The kind named by a config's `dataset_name`.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        match name {
            "seed-tts" => Some(DatasetKind::SeedTts),
            "seed-tts-text" => Some(DatasetKind::SeedTtsText),
            "seed-tts-design" => Some(DatasetKind::SeedTtsDesign),
            _ => None,
        }
    }
}

/// One row of `meta.lst`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Line of `meta.lst` (1-based), for messages.
    pub line: usize,
    /// The utterance id (1st field).
    pub utt_id: String,
    /// Transcript of the reference clip (2nd field).
    pub ref_text: String,
    /// The reference clip, resolved against the locale folder.
    pub ref_wav: PathBuf,
    /// The text to synthesise.
    pub text: String,
    /// 5th field (voice description), if present.
    pub voice_description: Option<String>,
}

/// A loaded dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The `meta.lst` read.
    pub meta: PathBuf,
    /// The rows, in file order (blank and `#` lines skipped).
    pub rows: Vec<Row>,
}

/// Largest `meta.lst` read, bytes (a listing of text lines; the real seed-tts eval set is
/// well under 1 MiB).
pub(crate) const MAX_META_BYTES: u64 = 256 * 1024 * 1024;

/// Largest reference clip (WAV) of a voice-clone row read, bytes.
pub(crate) const MAX_CLIP_BYTES: u64 = 256 * 1024 * 1024;

/// A reference clip's bytes (a regular file of at most [`MAX_CLIP_BYTES`]).
pub(crate) fn read_clip(path: &Path) -> Result<Vec<u8>, BenchError> {
    dfx_core::fsutil::read_bounded(path, MAX_CLIP_BYTES).map_err(|e| BenchError::Clip {
        path: path.to_path_buf(),
        why: e.problem(),
    })
}

/// Reference clips named in an error before "… and N more".
const SHOWN_CLIPS: usize = 5;

/// Why a dataset could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The entry names no `dataset_path`.
    #[error(
        "the entry has no dataset_path; the native bench needs a folder holding <locale>/meta.lst or an HF dataset id"
    )]
    NoPath,
    /// No candidate folder holds `<locale>/meta.lst` (`Lookup::resolve`).
    #[error("dataset {path:?} not found: no {locale}/meta.lst in any of:\n  {}\n(give a local folder, map HF ids with --dataset-root / DFX_DATASET_ROOT, or fill the Hugging Face cache)", .looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join("\n  "))]
    NotFound {
        /// The entry's `dataset_path` (a folder or a Hugging Face dataset id).
        path: String,
        /// The locale folder looked for (`seed_tts_locale`).
        locale: String,
        /// Every folder tried, in lookup order.
        looked: Vec<PathBuf>,
    },
    /// `meta.lst` could not be opened or read.
    #[error("could not read {}: {source}", .file.display())]
    Io {
        /// The `meta.lst` path.
        file: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A `meta.lst` line is malformed: fewer than 4 fields, an empty text, or no voice
    /// description for `seed-tts-design`.
    #[error("{}:{line}: {msg}", .file.display())]
    Parse {
        /// The `meta.lst` path.
        file: PathBuf,
        /// The line number, 1-based.
        line: usize,
        /// What is wrong with it.
        msg: String,
    },
    /// `meta.lst` holds no row (only blank or `#` lines).
    #[error("{}: no rows", .file.display())]
    Empty {
        /// The `meta.lst` path.
        file: PathBuf,
    },
    /// `meta.lst` is larger than `MAX_META_BYTES`.
    #[error("{}: larger than {MAX_META_BYTES} bytes", .file.display())]
    TooLarge {
        /// The `meta.lst` path.
        file: PathBuf,
    },
    /// Some seed-tts (voice clone) reference clips are missing or not a usable WAV
    /// (`check_clip`).
    #[error("{}: {} of {total} voice-clone reference clip(s) missing or not a readable WAV:\n  {}", .file.display(), .bad.len(), list_clips(.bad))]
    BadClips {
        /// The `meta.lst` path.
        file: PathBuf,
        /// Rows parsed from the file.
        total: usize,
        /// `(line of meta.lst, clip, why)` of each bad clip.
        bad: Vec<(usize, PathBuf, String)>,
    },
}

fn list_clips(bad: &[(usize, PathBuf, String)]) -> String {
    let mut lines: Vec<String> = bad
        .iter()
        .take(SHOWN_CLIPS)
        .map(|(line, clip, why)| format!("line {line}: {}: {why}", clip.display()))
        .collect();
    if bad.len() > SHOWN_CLIPS {
        lines.push(format!("… and {} more", bad.len() - SHOWN_CLIPS));
    }
    lines.join("\n  ")
}

/// Where to look for a dataset.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lookup {
    /// The current directory (relative paths are tried here first).
    pub cwd: PathBuf,
    /// The folder of the config file that names the dataset.
    pub config_dir: Option<PathBuf>,
    /// `--dataset-root` folders.
    pub roots: Vec<PathBuf>,
    /// Hugging Face hub caches (`$HF_HUB_CACHE`, `$HF_HOME/hub`, `~/.cache/huggingface/hub`).
    pub hf_caches: Vec<PathBuf>,
}

impl Lookup {
    /// The hub caches named by the environment, in Hugging Face's precedence order.
    pub(crate) fn hf_caches_from_env() -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Some(p) = std::env::var_os("HF_HUB_CACHE") {
            out.push(PathBuf::from(p));
        }
        if let Some(p) = std::env::var_os("HF_HOME") {
            out.push(PathBuf::from(p).join("hub"));
        }
        if let Some(home) = std::env::var_os("HOME") {
            out.push(PathBuf::from(home).join(".cache/huggingface/hub"));
        }
        out
    }

    /// Every folder tried for `dataset_path`, in order (duplicates removed).
    pub(crate) fn candidates(&self, dataset_path: &str) -> Vec<PathBuf> {
        let p = Path::new(dataset_path);
        let mut out: Vec<PathBuf> = Vec::new();
        if p.is_absolute() {
            out.push(p.to_path_buf());
            return out;
        }
        out.push(self.cwd.join(p));
        if let Some(dir) = &self.config_dir {
            out.push(dir.join(p));
        }
        let last = p.file_name().map(PathBuf::from);
        for root in &self.roots {
            out.push(root.join(p));
            if let Some(last) = &last {
                out.push(root.join(last));
            }
        }
        if let (Some(dir), Some(last)) = (&self.config_dir, &last) {
            out.push(dir.join("datasets").join(last));
        }
        if let Some((owner, name)) = hf_id(dataset_path) {
            for hub in &self.hf_caches {
                out.extend(hf_snapshots(
                    &hub.join(format!("datasets--{owner}--{name}")),
                ));
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|p| seen.insert(p.clone()));
        out
    }

    /// The first candidate holding `<locale>/meta.lst`.
    pub(crate) fn resolve(
        &self,
        dataset_path: &str,
        locale: &str,
    ) -> Result<PathBuf, DatasetError> {
        let looked = self.candidates(dataset_path);
        looked
            .iter()
            .find(|dir| dir.join(locale).join("meta.lst").is_file())
            .cloned()
            .ok_or_else(|| DatasetError::NotFound {
                path: dataset_path.to_string(),
                locale: locale.to_string(),
                looked,
            })
    }
}

/// `owner/name` when the path looks like a Hugging Face dataset id.
fn hf_id(path: &str) -> Option<(&str, &str)> {
    let (owner, name) = path.split_once('/')?;
    let ok = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (ok(owner) && ok(name)).then_some((owner, name))
}

/// Snapshot folders of one cached repo: the one `refs/main` names first, then the others
/// by name; the `snapshots/*` pattern itself when none exist, so the error shows it.
fn hf_snapshots(repo: &Path) -> Vec<PathBuf> {
    let snapshots = repo.join("snapshots");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&snapshots)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    found.sort();
    if let Ok(main) = std::fs::read_to_string(repo.join("refs/main")) {
        let main = snapshots.join(main.trim());
        if let Some(i) = found.iter().position(|p| *p == main) {
            let m = found.remove(i);
            found.insert(0, m);
        }
    }
    if found.is_empty() {
        found.push(snapshots.join("*"));
    }
    found
}

/// Parses `meta.lst`: `utt_id|ref_text|ref_wav|text[|voice_description]`, blank and `#`
/// lines skipped, fields trimmed. `dir` is the locale folder clips are relative to.
pub(crate) fn parse_meta(
    text: &str,
    file: &Path,
    dir: &Path,
    kind: DatasetKind,
) -> Result<Vec<Row>, DatasetError> {
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |msg: String| DatasetError::Parse {
            file: file.to_path_buf(),
            line: i + 1,
            msg,
        };
        let f: Vec<&str> = line.split('|').map(str::trim).collect();
        if f.len() < 4 {
            return Err(err(format!(
                "expected utt_id|ref_text|ref_wav|text[|voice_description], got {} field(s)",
                f.len()
            )));
        }
        if f[3].is_empty() {
            return Err(err("the text to synthesise (4th field) is empty".into()));
        }
        let voice_description = f.get(4).filter(|s| !s.is_empty()).map(|s| s.to_string());
        if kind == DatasetKind::SeedTtsDesign && voice_description.is_none() {
            return Err(err(
                "seed-tts-design needs a voice description in the 5th field".into(),
            ));
        }
        rows.push(Row {
            line: i + 1,
            utt_id: f[0].to_string(),
            ref_text: f[1].to_string(),
            ref_wav: safe_join(dir, f[2]),
            text: f[3].to_string(),
            voice_description,
        });
    }
    Ok(rows)
}

/// Joins a clip path that must stay inside the dataset (`..` components are dropped).
fn safe_join(dir: &Path, rel: &str) -> PathBuf {
    let mut out = dir.to_path_buf();
    for c in Path::new(rel).components() {
        if let Component::Normal(part) = c {
            out.push(part);
        }
    }
    out
}

/// Reads `<folder>/<locale>/meta.lst` (at most `MAX_META_BYTES`); for seed-tts every
/// row's reference clip must exist and decode as a WAV (`check_clip`).
pub fn load(kind: DatasetKind, folder: &Path, locale: &str) -> Result<Dataset, DatasetError> {
    let dir = folder.join(locale);
    let meta = dir.join("meta.lst");
    let bytes = match dfx_core::fsutil::read_bounded(&meta, MAX_META_BYTES) {
        Ok(b) => b,
        Err(dfx_core::fsutil::ReadError::TooLarge { .. }) => {
            return Err(DatasetError::TooLarge { file: meta });
        }
        Err(e) => {
            return Err(DatasetError::Io {
                file: meta,
                source: e.into_io(),
            });
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let rows = parse_meta(&text, &meta, &dir, kind)?;
    if rows.is_empty() {
        return Err(DatasetError::Empty { file: meta });
    }
    if kind == DatasetKind::SeedTts {
        let bad: Vec<(usize, PathBuf, String)> = rows
            .iter()
            .filter_map(|r| {
                check_clip(&r.ref_wav)
                    .err()
                    .map(|why| (r.line, r.ref_wav.clone(), why))
            })
            .collect();
        if !bad.is_empty() {
            return Err(DatasetError::BadClips {
                file: meta,
                total: rows.len(),
                bad,
            });
        }
    }
    Ok(Dataset { meta, rows })
}

/// Whether `path` is a WAV a server can use as reference audio: a readable RIFF/WAVE file
/// with a PCM or float format, 1–8 channels, a usable sample rate and at least one sample.
/// The error is the short reason (`missing`, `holds no audio`) the dataset's `BadClips` error
/// lists per clip: a string is the domain.
pub(crate) fn check_clip(path: &Path) -> Result<(), String> {
    match dfx_core::fsutil::check_regular(path, MAX_CLIP_BYTES) {
        Err(dfx_core::fsutil::ReadError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Err("missing".into());
        }
        Err(e) => return Err(e.problem()),
        Ok(_) => {}
    }
    let reader = hound::WavReader::open(path).map_err(|e| match e {
        hound::Error::IoError(e) if e.kind() == std::io::ErrorKind::NotFound => {
            "missing".to_string()
        }
        e => format!("not a readable WAV ({e})"),
    })?;
    let spec = reader.spec();
    let rate = u64::from(spec.sample_rate);
    if !(dfx_core::bounds::MIN_SAMPLE_RATE..=dfx_core::bounds::MAX_SAMPLE_RATE).contains(&rate) {
        return Err(format!("sample rate {} Hz is not usable", spec.sample_rate));
    }
    if !(1..=8).contains(&spec.channels) {
        return Err(format!("{} channels", spec.channels));
    }
    if reader.duration() == 0 {
        return Err("holds no audio".into());
    }
    Ok(())
}

/// Row indices for `n` requests, as `vllm bench serve` picks them for the seed-tts
/// datasets: the rows shuffled with Python's `random.Random(seed)`, the first `n` taken
/// in that order; when `n` exceeds the rows, the rest drawn with `random.choice` from
/// them after `random.seed(seed)` (`maybe_oversample_requests`).
pub fn select(rows: usize, n: usize, seed: u64) -> Vec<usize> {
    if rows == 0 {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..rows).collect();
    PyRandom::new(seed).shuffle(&mut order);
    order.truncate(n);
    let mut again = PyRandom::new(seed);
    let base = order.len();
    while order.len() < n {
        let pick = order[again.choice(base)];
        order.push(pick);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_lst_fields_comments_and_design_column() {
        let text = "# comment\n\n a1 | ref one | wavs/a1.wav | Hello there. \nb2|r|../../etc/x.wav|Second.|Warm low voice\n";
        let rows = parse_meta(
            text,
            Path::new("m"),
            Path::new("/d/en"),
            DatasetKind::SeedTts,
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].utt_id, "a1");
        assert_eq!(rows[0].ref_text, "ref one");
        assert_eq!(rows[0].ref_wav, PathBuf::from("/d/en/wavs/a1.wav"));
        assert_eq!(rows[0].text, "Hello there.");
        assert_eq!(rows[0].voice_description, None);
        assert_eq!(rows[1].ref_wav, PathBuf::from("/d/en/etc/x.wav"));
        assert_eq!(rows[1].voice_description.as_deref(), Some("Warm low voice"));
        let e = parse_meta(
            "a|b|c|d\nx|y|z|w\n",
            Path::new("m.lst"),
            Path::new("."),
            DatasetKind::SeedTtsDesign,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("m.lst:1: seed-tts-design needs"), "{e}");
        let e = parse_meta(
            "ok|b|c|d\nbad|line\n",
            Path::new("m.lst"),
            Path::new("."),
            DatasetKind::SeedTtsText,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("m.lst:2") && e.contains("2 field(s)"), "{e}");
    }

    #[test]
    fn selection_is_seeded_and_oversamples() {
        let a = select(10, 10, 7);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        assert_eq!(a, select(10, 10, 7));
        assert_ne!(a, select(10, 10, 8));
        // vllm bench's draw for 13 rows, 20 requests, seed 0 (CPython 3.11: the shuffle,
        // then `random.seed(0)` and seven `random.choice`s of the first 13).
        assert_eq!(
            select(13, 20, 0),
            [
                1, 10, 9, 5, 11, 2, 3, 7, 8, 4, 0, 12, 6, 3, 6, 3, 1, 11, 8, 7
            ]
        );
        let b = select(3, 8, 1);
        assert_eq!(b.len(), 8);
        assert!(b.iter().all(|&i| i < 3));
        let mut first3 = b[..3].to_vec();
        first3.sort();
        assert_eq!(first3, vec![0, 1, 2]);
        assert_eq!(select(5, 2, 1).len(), 2);
    }

    #[test]
    fn resolution_order_and_error_lists_every_place() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let hub = tmp.path().join("hub");
        let snap = hub.join("datasets--linyueqian--seed-tts-eval-subset/snapshots/abc");
        std::fs::create_dir_all(snap.join("en")).unwrap();
        std::fs::write(snap.join("en/meta.lst"), "a|b|c|d\n").unwrap();
        let lookup = Lookup {
            cwd: tmp.path().join("cwd"),
            config_dir: Some(tmp.path().join("cfg")),
            roots: vec![root.clone()],
            hf_caches: vec![hub.clone()],
        };
        let id = "linyueqian/seed-tts-eval-subset";
        assert_eq!(lookup.resolve(id, "en").unwrap(), snap);
        // A --dataset-root mapping wins over the cache: <root>/<name>.
        std::fs::create_dir_all(root.join("seed-tts-eval-subset/en")).unwrap();
        std::fs::write(root.join("seed-tts-eval-subset/en/meta.lst"), "a|b|c|d\n").unwrap();
        assert_eq!(
            lookup.resolve(id, "en").unwrap(),
            root.join("seed-tts-eval-subset")
        );
        let err = lookup.resolve(id, "zh").unwrap_err().to_string();
        for place in [
            "cwd/linyueqian/seed-tts-eval-subset",
            "cfg/linyueqian/seed-tts-eval-subset",
            "root/linyueqian/seed-tts-eval-subset",
            "root/seed-tts-eval-subset",
            "cfg/datasets/seed-tts-eval-subset",
            "snapshots/abc",
        ] {
            assert!(err.contains(place), "{place} missing from: {err}");
        }
        assert!(err.contains("zh/meta.lst"), "{err}");
        // Not an HF id: no cache lookup; an absolute path is the only candidate.
        assert_eq!(lookup.candidates("/abs/x"), vec![PathBuf::from("/abs/x")]);
        let c = lookup.candidates("benchmarks/build_dataset/seed_tts_smoke");
        assert!(c.contains(&root.join("seed_tts_smoke")));
        assert!(!c.iter().any(|p| p.starts_with(&hub)));
    }
}
