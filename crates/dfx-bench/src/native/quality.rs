//! Quality capture for entries with `seed_tts_wer_eval: true`: every measured request's
//! audio is kept as a 16-bit mono WAV at the stream's rate, under `quality/audio/` of the
//! trial folder, named as vllm-omni's `SEED_TTS_WER_SAVE_AUDIO_DIR` names them
//! (`<index:05>_<utterance>_<locale>.wav`), with one `quality/manifest.jsonl` line per
//! clip (text, reference text and audio, path, duration) for an evaluator to read. The
//! records writer thread writes them, so the request path only appends body bytes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use dfx_core::result::ResultDoc;

use crate::metrics::audio_duration;
use crate::native::BenchError;

/// Folder under the trial folder.
pub(crate) const DIR: &str = "quality";
/// The manifest's file name inside [`DIR`].
pub(crate) const MANIFEST: &str = "manifest.jsonl";

/// What the manifest says of a request besides its audio.
#[derive(Debug, Clone, PartialEq)]
pub struct QualityRow {
    /// The text synthesised.
    pub text: String,
    /// The reference clip's transcript (voice clone), if any.
    pub ref_text: Option<String>,
    /// The reference clip (voice clone), if any.
    pub ref_audio: Option<PathBuf>,
    /// `seed_tts_locale`.
    pub locale: Arc<str>,
}

/// Which request a kept clip belongs to (its record's identity and sample rate).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kept<'a> {
    /// The record's `index`.
    pub index: usize,
    /// The record's `request_id`.
    pub request_id: Option<&'a str>,
    /// The record's `sample_id` (the utterance id).
    pub sample_id: &'a str,
    /// The audio's sample rate, Hz.
    pub sample_rate: u32,
}

/// Counts of a step's capture, for the result.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct QualityStats {
    /// WAVs written.
    pub saved: u64,
    /// WAVs that could not be written (the reason of the first is in `problem`).
    pub failed: u64,
    /// The first write problem.
    pub problem: Option<String>,
    /// `<trial>/quality`.
    pub dir: PathBuf,
}

impl QualityStats {
    /// Upstream's keys for the kept audio (`seed_tts_saved_audio`,
    /// `seed_tts_save_audio_failed`, `seed_tts_save_audio_dir`) and the manifest's path.
    pub(crate) fn insert_into(&self, doc: &mut ResultDoc) {
        doc.insert("seed_tts_saved_audio".into(), json!(self.saved));
        doc.insert("seed_tts_save_audio_failed".into(), json!(self.failed));
        let audio = self.dir.join("audio");
        doc.insert(
            "seed_tts_save_audio_dir".into(),
            Value::from(audio.display().to_string()),
        );
        doc.insert(
            "quality_manifest".into(),
            Value::from(self.dir.join(MANIFEST).display().to_string()),
        );
        if let Some(p) = &self.problem {
            doc.insert("quality_capture_problem".into(), Value::from(p.as_str()));
        }
    }
}

/// Writes clips and manifest lines (owned by the records writer thread).
pub(crate) struct QualityWriter {
    stats: QualityStats,
    manifest: Option<std::io::BufWriter<std::fs::File>>,
}

/// vllm-omni's `_safe_filename_part`: alphanumerics, `-`, `_`, `.`; others become `_`;
/// leading/trailing `.`/`_` stripped; at most 96 characters.
fn safe_part(value: &str, default: &str) -> String {
    let text = value.trim();
    let safe: String = text
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = safe.trim_matches(|c| c == '.' || c == '_');
    let safe = if safe.is_empty() { default } else { safe };
    safe.chars().take(96).collect()
}

impl QualityWriter {
    /// Creates `<trial>/quality/audio/` and the manifest.
    pub(crate) fn create(trial_dir: &Path) -> Result<QualityWriter, BenchError> {
        let dir = trial_dir.join(DIR);
        let audio = dir.join("audio");
        std::fs::create_dir_all(&audio).map_err(|source| BenchError::Create {
            path: audio.clone(),
            source,
        })?;
        let path = dir.join(MANIFEST);
        let file = std::fs::File::create(&path).map_err(|source| BenchError::Create {
            path: path.clone(),
            source,
        })?;
        Ok(QualityWriter {
            stats: QualityStats {
                dir,
                ..QualityStats::default()
            },
            manifest: Some(std::io::BufWriter::new(file)),
        })
    }

    fn failed(&mut self, why: String) {
        self.stats.failed += 1;
        self.stats.problem.get_or_insert(why);
    }

    /// Keeps the audio of a successful measured request.
    pub(crate) fn keep(&mut self, rec: &Kept<'_>, row: &QualityRow, audio: &[u8]) {
        let name = format!(
            "{:05}_{}_{}.wav",
            rec.index,
            safe_part(rec.sample_id, "item"),
            safe_part(&row.locale, "item")
        );
        let path = self.stats.dir.join("audio").join(&name);
        if let Err(e) = write_wav(&path, audio, rec.sample_rate) {
            self.failed(format!("cannot write {}: {e}", path.display()));
            return;
        }
        let frames = audio_duration::frames(audio.len() as u64, 1);
        let line = json!({
            "index": rec.index, "request_id": rec.request_id, "utterance_id": rec.sample_id,
            "locale": &*row.locale, "text": row.text, "ref_text": row.ref_text,
            "ref_audio": row.ref_audio.as_ref().map(|p| p.display().to_string()),
            "audio": path.display().to_string(), "audio_file": format!("audio/{name}"),
            "sample_rate": rec.sample_rate,
            "audio_duration_s": audio_duration::duration_s(frames, rec.sample_rate),
        });
        let written = match self.manifest.as_mut() {
            Some(m) => writeln!(m, "{line}").and_then(|()| m.flush()),
            None => return,
        };
        match written {
            Ok(()) => self.stats.saved += 1,
            Err(e) => {
                self.manifest = None;
                self.failed(format!("cannot write the manifest: {e}"));
            }
        }
    }

    /// The counts, once every record is in.
    pub(crate) fn finish(self) -> QualityStats {
        self.stats
    }
}

/// A 16-bit mono WAV of little-endian PCM `audio` (an odd last byte is dropped), written
/// to a temporary name and renamed.
fn write_wav(path: &Path, audio: &[u8], sample_rate: u32) -> Result<(), hound::Error> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let tmp = path.with_extension("wav.part");
    let written = (|| {
        let mut w = hound::WavWriter::create(&tmp, spec)?;
        {
            let mut i16w = w.get_i16_writer((audio.len() / 2) as u32);
            for s in audio.chunks_exact(2) {
                i16w.write_sample(i16::from_le_bytes([s[0], s[1]]));
            }
            i16w.flush()?;
        }
        w.finalize()?;
        std::fs::rename(&tmp, path).map_err(hound::Error::IoError)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_upstream() {
        assert_eq!(safe_part("utt 01/..x", "item"), "utt_01_..x");
        assert_eq!(safe_part("..__", "item"), "item");
        assert_eq!(safe_part(&"a".repeat(200), "item").len(), 96);
    }

    #[test]
    fn wav_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.wav");
        let pcm: Vec<u8> = (0..480i16).flat_map(|s| (s * 10).to_le_bytes()).collect();
        write_wav(&path, &pcm, 24_000).unwrap();
        let r = hound::WavReader::open(&path).unwrap();
        assert_eq!(r.spec().sample_rate, 24_000);
        assert_eq!(r.duration(), 480);
        assert!(!dir.path().join("a.wav.part").exists());
    }
}
