//! Uploaded voices: `POST /v1/audio/voices` (multipart `name`, `consent`, `ref_text`,
//! `speaker_description`, file `audio_sample`), `GET /v1/audio/voices`,
//! `DELETE /v1/audio/voices/{name}` — vllm-omni's shapes, kept in memory.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::ApiError;

/// Largest accepted `audio_sample`, bytes (vllm-omni: 10 MB).
pub(crate) const MAX_SAMPLE_BYTES: usize = 10 * 1024 * 1024;
/// Most uploaded voices kept (vllm-omni's `SPEAKER_MAX_UPLOADED` default).
pub(crate) const MAX_VOICES: usize = 1000;

/// One uploaded voice (the audio itself is not kept: only its size matters here).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Voice {
    pub name: String,
    pub consent: String,
    pub created_at: u64,
    pub file_size: usize,
    pub mime_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ref_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speaker_description: Option<String>,
}

/// The fields of an upload, as received.
#[derive(Debug, Default)]
pub(crate) struct Upload {
    pub name: Option<String>,
    pub consent: Option<String>,
    pub ref_text: Option<String>,
    pub speaker_description: Option<String>,
    pub audio: Option<(Vec<u8>, Option<String>)>,
}

/// In-memory registry, keyed by lower-cased name.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    voices: Mutex<BTreeMap<String, Voice>>,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

impl Registry {
    /// `Some(has_ref_text)` when `name` is uploaded.
    pub(crate) fn lookup(&self, name: &str) -> Option<bool> {
        let v = self.voices.lock().expect("voices lock");
        v.get(&name.to_ascii_lowercase())
            .map(|v| v.ref_text.is_some())
    }

    /// Registers (or overwrites) a voice; `presets` are the model's built-in names.
    pub(crate) fn register(&self, up: Upload, presets: &[&str]) -> Result<Voice, ApiError> {
        let text = |v: Option<String>, field: &str| -> Result<String, ApiError> {
            v.map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .ok_or_else(|| ApiError::bad(format!("`{field}` is required"), Some(field)))
        };
        let name = text(up.name, "name")?;
        if !valid_name(&name) {
            return Err(ApiError::bad(
                format!(
                    "voice name '{name}' must be 1–64 characters of letters, digits, '_', '-', '.'"
                ),
                Some("name"),
            ));
        }
        if presets.iter().any(|p| p.eq_ignore_ascii_case(&name)) {
            return Err(ApiError::bad(
                format!("voice name '{name}' is a built-in voice"),
                Some("name"),
            ));
        }
        let consent = text(up.consent, "consent")?;
        let (audio, mime) = up.audio.ok_or_else(|| {
            ApiError::bad("`audio_sample` file is required", Some("audio_sample"))
        })?;
        if audio.is_empty() {
            return Err(ApiError::bad(
                "`audio_sample` is empty",
                Some("audio_sample"),
            ));
        }
        if audio.len() > MAX_SAMPLE_BYTES {
            return Err(ApiError::bad(
                format!(
                    "`audio_sample` is {} bytes; the limit is {MAX_SAMPLE_BYTES}",
                    audio.len()
                ),
                Some("audio_sample"),
            ));
        }
        let voice = Voice {
            name: name.clone(),
            consent,
            created_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            file_size: audio.len(),
            mime_type: mime.unwrap_or_else(|| "audio/wav".into()),
            ref_text: up
                .ref_text
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty()),
            speaker_description: up
                .speaker_description
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty()),
        };
        let mut map = self.voices.lock().expect("voices lock");
        let key = name.to_ascii_lowercase();
        if !map.contains_key(&key) && map.len() >= MAX_VOICES {
            return Err(ApiError::bad(
                format!("at most {MAX_VOICES} uploaded voices are kept"),
                Some("name"),
            ));
        }
        if map.insert(key, voice.clone()).is_some() {
            tracing::warn!("voice '{name}' overwritten");
        }
        Ok(voice)
    }

    /// Removes a voice; `false` when it did not exist.
    pub(crate) fn delete(&self, name: &str) -> bool {
        let mut map = self.voices.lock().expect("voices lock");
        map.remove(&name.to_ascii_lowercase()).is_some()
    }

    /// `GET /v1/audio/voices` body: presets and uploaded names, then the uploaded entries.
    pub(crate) fn list(&self, presets: &[&str]) -> Value {
        let map = self.voices.lock().expect("voices lock");
        let mut names: Vec<String> = presets.iter().map(|s| s.to_string()).collect();
        names.extend(map.values().map(|v| v.name.clone()));
        names.sort();
        json!({"voices": names, "uploaded_voices": map.values().collect::<Vec<_>>()})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(name: &str) -> Upload {
        Upload {
            name: Some(name.into()),
            consent: Some("c1".into()),
            ref_text: Some("hello".into()),
            speaker_description: None,
            audio: Some((b"RIFF....WAVE".to_vec(), Some("audio/wav".into()))),
        }
    }

    #[test]
    fn lifecycle() {
        let r = Registry::default();
        assert_eq!(r.lookup("alice"), None);
        r.register(upload("Alice"), &["vivian"]).unwrap();
        assert_eq!(r.lookup("alice"), Some(true));
        let list = r.list(&["vivian"]);
        assert_eq!(list["voices"], json!(["Alice", "vivian"]));
        assert_eq!(list["uploaded_voices"][0]["file_size"], 12);
        assert!(
            list["uploaded_voices"][0]
                .get("speaker_description")
                .is_none()
        );
        assert!(r.delete("ALICE"));
        assert!(!r.delete("alice"));
    }

    #[test]
    fn bad_uploads() {
        let r = Registry::default();
        let mut u = upload("bob");
        u.consent = None;
        assert_eq!(
            r.register(u, &[]).unwrap_err().param.as_deref(),
            Some("consent")
        );
        let mut u = upload("bob");
        u.audio = None;
        assert_eq!(
            r.register(u, &[]).unwrap_err().param.as_deref(),
            Some("audio_sample")
        );
        assert!(r.register(upload("bad name!"), &[]).is_err());
        assert!(r.register(upload("Vivian"), &["vivian"]).is_err());
    }
}
