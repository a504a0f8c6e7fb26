//! Everything a realtime step decides before its first session: rows grouped into
//! requests of `seed_tts_turns_per_session` turns, each turn's `session.update`, the URL.

use std::sync::Arc;

use serde_json::{Map, Value};

use dfx_core::bench::BenchContext;
use dfx_core::plan::BenchEntry;

use super::protocol;
use crate::native::BenchError;
use crate::native::NativeSettings;
use crate::native::dataset::{self, DatasetKind, Row};
use crate::native::driver::Load;
use crate::native::prepare::{dataset_kind, load_dataset, load_shape, request_id_prefix};
use crate::native::record::Sample;
use crate::native::request::{BodyTemplate, wav_data_url};

/// Most turns a request may have.
pub(crate) const MAX_TURNS: u64 = 64;

/// `instructions` when the entry sets no `seed_tts_system_prompt` (dfx-perf's wording,
/// see `docs/bench.md` ("Realtime")).
pub(crate) const DEFAULT_INSTRUCTIONS: &str = "Read the user text aloud exactly as written. \
Do not answer or transcribe the accompanying audio. Output only the supplied text and its spoken audio.";

/// One turn of a request.
#[derive(Debug, Clone)]
pub(crate) struct TurnSpec {
    pub utterance_id: String,
    /// `session.update` without its event id (serialized here, once per turn).
    pub update: protocol::EventText,
}

/// One benchmark request: its turns, run one after the other, each in its own session.
#[derive(Debug, Clone)]
pub(crate) struct RtJob {
    pub turns: Arc<Vec<TurnSpec>>,
    pub sample: Sample,
    /// `seed-tts-<request id>`.
    pub label: String,
}

/// A realtime step ready to run.
pub(crate) struct RtPrepared {
    pub url: String,
    pub warmups: Vec<RtJob>,
    pub measured: Vec<RtJob>,
    pub load: Load,
    pub notes: Vec<String>,
}

/// `seed_tts_turns_per_session` of an entry (default 1), or why it is refused.
pub(crate) fn turns_per_session(entry: &BenchEntry) -> Result<u64, BenchError> {
    let v = ["seed_tts_turns_per_session", "seed-tts-turns-per-session"]
        .iter()
        .find_map(|k| entry.raw.get(*k));
    match v {
        None | Some(Value::Null) => Ok(1),
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=MAX_TURNS).contains(n))
            .ok_or_else(|| {
                BenchError::Input(format!(
                    "seed_tts_turns_per_session must be an integer from 1 to {MAX_TURNS}; got {v}"
                ))
            }),
    }
}

/// Whether any of `keys` is the JSON `true` (not mere truthiness: the spelling upstream's
/// `store_true` flags take in a config).
fn any_true(entry: &BenchEntry, keys: &[&str]) -> bool {
    keys.iter()
        .any(|k| matches!(entry.raw.get(*k), Some(Value::Bool(true))))
}

/// `ws://host:port/v1/realtime?duplex=1&model=<model>&autostart=0`.
pub(crate) fn ws_url(base_url: &str, endpoint: &str, model: &str) -> String {
    let base = base_url.trim_end_matches('/');
    let base = base
        .strip_prefix("https://")
        .map(|r| format!("wss://{r}"))
        .or_else(|| base.strip_prefix("http://").map(|r| format!("ws://{r}")))
        .unwrap_or_else(|| base.to_string());
    let mut m = String::new();
    for b in model.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            m.push(b as char);
        } else {
            m.push_str(&format!("%{b:02X}"));
        }
    }
    format!("{base}{endpoint}?duplex=1&model={m}&autostart=0")
}

/// The speech fields of `extra_body` for a request whose first row is `first`.
fn speech_fields(t: &BodyTemplate, first: &Row, ref_audio: Option<&str>) -> Map<String, Value> {
    let mut e = Map::new();
    e.insert("auto_response".into(), Value::Bool(true));
    let lang = Value::from(t.language.as_str());
    match t.kind {
        DatasetKind::SeedTts => {
            e.insert(
                "ref_audio".into(),
                Value::from(ref_audio.unwrap_or_default()),
            );
            e.insert("ref_text".into(), Value::from(first.ref_text.as_str()));
            e.insert("task_type".into(), Value::from("Base"));
            e.insert("language".into(), lang);
            e.insert("max_new_tokens".into(), Value::from(t.max_new_tokens));
        }
        DatasetKind::SeedTtsText => {}
        DatasetKind::SeedTtsDesign => {
            let desc = first.voice_description.as_deref().unwrap_or_default();
            e.insert("instructions".into(), Value::from(desc));
            e.insert("task_type".into(), Value::from("VoiceDesign"));
            e.insert("language".into(), lang);
            e.insert("max_new_tokens".into(), Value::from(t.max_new_tokens));
        }
    }
    e
}

fn job(
    t: &BodyTemplate,
    instructions: &str,
    rows: &[&Row],
    request_id: Option<String>,
    label: String,
) -> Result<RtJob, BenchError> {
    let first = rows[0];
    let ref_audio = if t.kind == DatasetKind::SeedTts {
        let wav = crate::native::dataset::read_clip(&first.ref_wav)?;
        Some(wav_data_url(&wav))
    } else {
        None
    };
    let speech = speech_fields(t, first, ref_audio.as_deref());
    let turns = rows
        .iter()
        .map(|r| {
            let mut extra = speech.clone();
            extra.insert("return_stage_metrics".into(), Value::Bool(true));
            extra.insert(
                "duplex_initial_user_text".into(),
                Value::from(r.text.as_str()),
            );
            extra.insert("force_listen_count".into(), Value::from(0));
            let session = protocol::session_object(&t.model, instructions, extra);
            TurnSpec {
                utterance_id: r.utt_id.clone(),
                update: protocol::EventText::new(protocol::session_update(&session)),
            }
        })
        .collect();
    Ok(RtJob {
        turns: Arc::new(turns),
        sample: Sample {
            request_id,
            sample_id: first.utt_id.clone(),
            text_len: rows.iter().map(|r| r.text.chars().count()).sum(),
            quality: None,
        },
        label,
    })
}

/// Prepares one realtime step of `ctx.trial`.
pub(crate) fn prepare(
    settings: &NativeSettings,
    ctx: &BenchContext<'_>,
) -> Result<RtPrepared, BenchError> {
    let (trial, entry) = (ctx.trial, &ctx.trial.entry);
    let mut notes = Vec::new();
    let kind = dataset_kind(entry)?;
    let turns = turns_per_session(entry)? as usize;
    let locale = entry.seed_tts_locale.as_deref().unwrap_or("en");
    let ds = load_dataset(settings, trial, kind, locale, &mut notes)?;
    let seed = entry.seed.unwrap_or(settings.seed);
    let mut n = trial.step.num_prompts.get() as usize;
    if any_true(entry, &["no_oversample", "no-oversample"]) && ds.rows.len() < n * turns {
        n = ds.rows.len() / turns;
        notes.push(format!(
            "no_oversample: {} rows give {n} request(s) of {turns} turn(s)",
            ds.rows.len()
        ));
    }
    let w = entry.warmups(&trial.step) as usize;
    let model = trial.server.model.as_str();
    let template = BodyTemplate::new(model, kind, locale, &entry.raw, entry.extra_body.as_ref());
    let instructions = entry
        .raw
        .get("seed_tts_system_prompt")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_INSTRUCTIONS)
        .to_string();
    let prefix = request_id_prefix(entry);
    let pick = |count: usize, seed: u64, measured: bool| -> Result<Vec<RtJob>, BenchError> {
        let idx = dataset::select(ds.rows.len(), count * turns, seed);
        idx.chunks(turns)
            .filter(|c| c.len() == turns)
            .enumerate()
            .map(|(i, c)| {
                let rows: Vec<&Row> = c.iter().map(|&r| &ds.rows[r]).collect();
                let (id, label) = if measured {
                    let id = format!("{prefix}{i}");
                    (Some(id.clone()), format!("seed-tts-{id}"))
                } else {
                    (None, format!("seed-tts-warmup-{i}"))
                };
                job(&template, &instructions, &rows, id, label)
            })
            .collect()
    };
    let measured = pick(n, seed, true)?;
    let warmups = pick(w, seed ^ 0x7761_726d, false)?;
    let (load, shape) = load_shape(ctx, measured.len(), seed, settings.time_lapse)?;
    let endpoint = entry.endpoint.as_deref().unwrap_or(super::ENDPOINT);
    let url = ws_url(&ctx.base_url, endpoint, model);
    notes.push(format!(
        "load: {} measured request(s) of {turns} turn(s) after {} warmup(s), {shape}; seed {seed}; WebSocket {url}",
        measured.len(),
        warmups.len()
    ));
    Ok(RtPrepared {
        url,
        warmups,
        measured,
        load,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_from_base() {
        assert_eq!(
            ws_url("http://127.0.0.1:8000/", "/v1/realtime", "Qwen/Qwen3 Omni"),
            "ws://127.0.0.1:8000/v1/realtime?duplex=1&model=Qwen/Qwen3%20Omni&autostart=0"
        );
    }
}
