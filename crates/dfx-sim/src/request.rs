//! `POST /v1/audio/speech` bodies: raw JSON → a validated [`SpeechRequest`], with a 400
//! (OpenAI envelope) for every invalid request `docs/simulator.md` ("API") lists.
//!
//! Task inference when `task_type` is absent (vllm-omni's documented rule): `ref_audio` or
//! `ref_text` → Base; a `voice` naming an uploaded voice → Base (also over an explicit
//! task, as upstream does); otherwise CustomVoice — except on a Base checkpoint (Base)
//! and a VoiceDesign checkpoint (VoiceDesign), a simulator choice: the request could not
//! be served otherwise, and the error then names the missing field.

use base64::Engine as _;
use dfx_core::diag::json_type_name;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::profile::{Family, Profile};

/// Longest accepted `input`, in characters (OpenAI's limit).
pub(crate) const MAX_INPUT_CHARS: usize = 4096;
/// `speed` bounds (OpenAI).
pub(crate) const SPEED_RANGE: (f64, f64) = (0.25, 4.0);
/// Default `max_new_tokens` (codec frames).
pub(crate) const DEFAULT_MAX_NEW_TOKENS: u32 = 2048;

/// The three Qwen3-TTS task types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Task {
    /// Voice clone from a reference (or an uploaded voice).
    Base,
    /// A preset speaker.
    CustomVoice,
    /// A voice from a description (`instructions`).
    VoiceDesign,
}

impl Task {
    fn parse(s: &str) -> Option<Task> {
        match s {
            "Base" => Some(Task::Base),
            "CustomVoice" => Some(Task::CustomVoice),
            "VoiceDesign" => Some(Task::VoiceDesign),
            _ => None,
        }
    }

    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Base => "Base",
            Task::CustomVoice => "CustomVoice",
            Task::VoiceDesign => "VoiceDesign",
        }
    }
}

/// Audio container of the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Raw s16le.
    Pcm,
    /// A WAV header, then s16le.
    Wav,
}

/// How the response is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// `stream_format: "audio"`: raw bytes, one write per decoded chunk.
    Audio,
    /// `stream_format: "sse"` or `stream: true` alone: `speech.audio.*` events.
    Sse,
    /// Non-streaming: one complete body.
    Whole,
}

/// A validated speech request.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechRequest {
    /// Text to speak.
    pub input: String,
    /// Task (given or inferred).
    pub task: Task,
    /// Voice name, if any.
    pub voice: Option<String>,
    /// Audio container.
    pub format: Format,
    /// Streaming mode.
    pub delivery: Delivery,
    /// Speaking rate (audio length ÷ speed).
    pub speed: f64,
    /// Frame cap.
    pub max_new_tokens: u32,
    /// Per-request first chunk size.
    pub initial_chunk_frames: Option<u32>,
    /// Voice clone with the reference (prefill encodes it).
    pub clone: bool,
    /// In-context clone: the decoder carries reference frames with every chunk.
    pub in_context: bool,
    /// Request `seed` (part of the audio-length draw).
    pub seed: Option<i64>,
}

/// What validation needs to know about the server.
pub(crate) struct Context<'a> {
    pub profile: &'a Profile,
    /// Names the `model` field may carry.
    pub model_names: &'a [String],
    /// Whether `name` is an uploaded voice, and whether it has a transcript.
    pub uploaded: &'a (dyn Fn(&str) -> Option<bool> + Sync),
}

struct Body<'a>(&'a Map<String, Value>);

impl<'a> Body<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    fn string(&self, key: &str) -> Result<Option<&'a str>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(type_error(key, "a string", v)),
        }
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(type_error(key, "a boolean", v)),
        }
    }

    fn number(&self, key: &str) -> Result<Option<f64>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(v) => Err(type_error(key, "a number", v)),
        }
    }

    fn positive_int(&self, key: &str) -> Result<Option<u32>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 && n <= u64::from(u32::MAX) => Ok(Some(n as u32)),
                _ => Err(type_error(key, "a positive integer", v)),
            },
        }
    }
}

fn type_error(key: &str, want: &str, got: &Value) -> ApiError {
    let kind = json_type_name(got);
    ApiError::bad(
        format!("`{key}` must be {want}, got {kind} {got}"),
        Some(key),
    )
}

/// Parses and validates a request body.
pub(crate) fn parse(raw: &[u8], ctx: &Context) -> Result<SpeechRequest, ApiError> {
    let value: Value = serde_json::from_slice(raw)
        .map_err(|e| ApiError::bad(format!("Invalid JSON body: {e}"), None))?;
    let Value::Object(map) = &value else {
        return Err(ApiError::bad(
            "The request body must be a JSON object",
            None,
        ));
    };
    let b = Body(map);
    if let Some(model) = b.string("model")?
        && !ctx.model_names.iter().any(|m| m == model)
    {
        return Err(ApiError::not_found(
            format!("The model `{model}` does not exist."),
            Some("model"),
        ));
    }
    let input = parse_input(&b)?;
    let format = parse_format(&b)?;
    let delivery = parse_delivery(&b)?;
    let speed = parse_speed(&b, delivery)?;
    let voice = b.string("voice")?.map(str::trim).map(String::from);
    if voice.as_deref() == Some("") {
        return Err(ApiError::bad("`voice` cannot be empty", Some("voice")));
    }
    let instructions = b.string("instructions")?.map(str::trim).unwrap_or("");
    if let Some(lang) = b.string("language")? {
        check_language(ctx.profile, lang)?;
    }
    let ref_audio = b.string("ref_audio")?;
    let ref_text = b.string("ref_text")?;
    let x_vector_only = b.boolean("x_vector_only_mode")?.unwrap_or(false);
    let explicit = match b.string("task_type")? {
        None => None,
        Some(t) => Some(Task::parse(t).ok_or_else(|| {
            ApiError::bad(
                format!("Unknown task_type '{t}'; accepted: Base, CustomVoice, VoiceDesign"),
                Some("task_type"),
            )
        })?),
    };
    let uploaded = voice.as_deref().and_then(|v| (ctx.uploaded)(v));
    let task = infer_task(
        ctx.profile.family,
        explicit,
        ref_audio.is_some() || ref_text.is_some(),
        uploaded.is_some(),
    );
    check_checkpoint(ctx.profile.family, task)?;
    let (clone, in_context) = match (task, uploaded) {
        (Task::Base, Some(has_text)) => (true, has_text && !x_vector_only),
        (Task::Base, None) => {
            check_ref_audio(ref_audio)?;
            let has_text = ref_text.is_some_and(|t| !t.trim().is_empty());
            if !has_text && !x_vector_only {
                return Err(ApiError::bad(
                    "Base (voice clone) requires `ref_text` (or `x_vector_only_mode: true`)",
                    Some("ref_text"),
                ));
            }
            (true, !x_vector_only)
        }
        _ => {
            if let Some(a) = ref_audio {
                check_ref_audio(Some(a))?;
            }
            (ref_audio.is_some(), false)
        }
    };
    let voice = match task {
        Task::CustomVoice => check_voice(ctx.profile, voice, uploaded.is_some())?,
        _ => voice,
    };
    if task == Task::VoiceDesign && instructions.is_empty() {
        return Err(ApiError::bad(
            "VoiceDesign requires non-empty `instructions` describing the voice",
            Some("instructions"),
        ));
    }
    Ok(SpeechRequest {
        input,
        task,
        voice,
        format,
        delivery,
        speed,
        max_new_tokens: b
            .positive_int("max_new_tokens")?
            .unwrap_or(DEFAULT_MAX_NEW_TOKENS),
        initial_chunk_frames: b.positive_int("initial_codec_chunk_frames")?,
        clone,
        in_context,
        seed: parse_seed(&b)?,
    })
}

fn parse_input(b: &Body) -> Result<String, ApiError> {
    let input = match b.get("input") {
        None => return Err(ApiError::bad("`input` is required", Some("input"))),
        Some(Value::String(s)) => s,
        Some(v) => return Err(type_error("input", "a string", v)),
    };
    if input.trim().is_empty() {
        return Err(ApiError::bad("Input text cannot be empty", Some("input")));
    }
    let n = input.chars().count();
    if n > MAX_INPUT_CHARS {
        return Err(ApiError::bad(
            format!("`input` is {n} characters long; the limit is {MAX_INPUT_CHARS}"),
            Some("input"),
        ));
    }
    Ok(input.clone())
}

fn parse_format(b: &Body) -> Result<Format, ApiError> {
    match b.string("response_format")?.unwrap_or("wav") {
        "pcm" => Ok(Format::Pcm),
        "wav" => Ok(Format::Wav),
        f @ ("mp3" | "flac" | "opus" | "aac") => Err(ApiError::bad(
            format!("response_format '{f}' is not produced by the simulator; use 'pcm' or 'wav'"),
            Some("response_format"),
        )),
        f => Err(ApiError::bad(
            format!("Unknown response_format '{f}'; accepted: wav, pcm, mp3, flac, opus, aac"),
            Some("response_format"),
        )),
    }
}

fn parse_delivery(b: &Body) -> Result<Delivery, ApiError> {
    let stream = b.boolean("stream")?.unwrap_or(false);
    match b.string("stream_format")? {
        Some("audio") => Ok(Delivery::Audio),
        Some("sse") => Ok(Delivery::Sse),
        Some(f) => Err(ApiError::bad(
            format!("Unknown stream_format '{f}'; accepted: audio, sse"),
            Some("stream_format"),
        )),
        None if stream => Ok(Delivery::Sse),
        None => Ok(Delivery::Whole),
    }
}

fn parse_speed(b: &Body, delivery: Delivery) -> Result<f64, ApiError> {
    let Some(speed) = b.number("speed")? else {
        return Ok(1.0);
    };
    let (lo, hi) = SPEED_RANGE;
    if !(lo..=hi).contains(&speed) {
        return Err(ApiError::bad(
            format!("`speed` must be between {lo} and {hi}, got {speed}"),
            Some("speed"),
        ));
    }
    if delivery != Delivery::Whole && speed != 1.0 {
        return Err(ApiError::bad(
            "Streaming requires `speed` 1.0 (or omitted)",
            Some("speed"),
        ));
    }
    Ok(speed)
}

fn parse_seed(b: &Body) -> Result<Option<i64>, ApiError> {
    match b.get("seed") {
        None => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| type_error("seed", "an integer", v)),
    }
}

fn check_language(p: &Profile, lang: &str) -> Result<(), ApiError> {
    if p.languages.is_empty() || p.languages.iter().any(|l| l.eq_ignore_ascii_case(lang)) {
        return Ok(());
    }
    Err(ApiError::bad(
        format!(
            "Unsupported language '{lang}'; accepted: {}",
            p.languages.join(", ")
        ),
        Some("language"),
    ))
}

fn infer_task(family: Family, explicit: Option<Task>, has_ref: bool, uploaded: bool) -> Task {
    let qwen = matches!(
        family,
        Family::QwenBase | Family::QwenCustomVoice | Family::QwenVoiceDesign
    );
    if uploaded && (qwen || explicit.is_none()) {
        return Task::Base;
    }
    if let Some(t) = explicit {
        return t;
    }
    if has_ref || family == Family::QwenBase {
        Task::Base
    } else if family == Family::QwenVoiceDesign {
        Task::VoiceDesign
    } else {
        Task::CustomVoice
    }
}

fn check_checkpoint(family: Family, task: Task) -> Result<(), ApiError> {
    let (name, ok) = match family {
        Family::QwenBase => ("Base", task == Task::Base),
        Family::QwenCustomVoice => ("CustomVoice", task != Task::Base),
        Family::QwenVoiceDesign => ("VoiceDesign", task != Task::Base),
        _ => return Ok(()),
    };
    if ok {
        return Ok(());
    }
    let hint = if task == Task::Base {
        "load the matching Base checkpoint"
    } else {
        "use task_type='Base' with ref_audio and ref_text, or load a CustomVoice checkpoint"
    };
    Err(ApiError::bad(
        format!(
            "Qwen3-TTS {name} checkpoint does not support task_type='{}'. Use a supported task or {hint}.",
            task.as_str()
        ),
        Some("task_type"),
    ))
}

fn check_voice(
    p: &Profile,
    voice: Option<String>,
    uploaded: bool,
) -> Result<Option<String>, ApiError> {
    let Some(v) = voice.or(p.default_voice.map(String::from)) else {
        if p.checks_voices() {
            return Err(ApiError::bad(
                "`voice` is required for this model",
                Some("voice"),
            ));
        }
        return Ok(None);
    };
    let known = p.voices.iter().any(|k| k.eq_ignore_ascii_case(&v));
    if uploaded || known || !p.checks_voices() {
        return Ok(Some(v));
    }
    Err(ApiError::bad(
        format!("Unknown voice '{v}'; available: {}", p.voices.join(", ")),
        Some("voice"),
    ))
}

/// `ref_audio` must be a decodable base64 data URL (the simulator fetches nothing).
fn check_ref_audio(ref_audio: Option<&str>) -> Result<(), ApiError> {
    let p = Some("ref_audio");
    let Some(url) = ref_audio.map(str::trim) else {
        return Err(ApiError::bad(
            "Base (voice clone) requires `ref_audio` (a data URL) or an uploaded `voice`",
            p,
        ));
    };
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Err(ApiError::bad(
            "ref_audio URLs are not fetched by the simulator (no network); send a base64 data URL",
            p,
        ));
    }
    if lower.starts_with("file://") {
        return Err(ApiError::bad(
            "file:// ref_audio is not allowed (no --allowed-local-media-path)",
            p,
        ));
    }
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(ApiError::bad(
            "ref_audio must be a data URL such as data:audio/wav;base64,<...>",
            p,
        ));
    };
    let Some((meta, payload)) = rest.split_once(',') else {
        return Err(ApiError::bad(
            "ref_audio data URL has no ',' before its payload",
            p,
        ));
    };
    if !meta.ends_with(";base64") {
        return Err(ApiError::bad(
            "ref_audio data URL must be base64 (';base64,')",
            p,
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .map_err(|e| ApiError::bad(format!("ref_audio is not valid base64: {e}"), p))?;
    if bytes.is_empty() {
        return Err(ApiError::bad("ref_audio is empty", p));
    }
    let is_wav_mime = meta.contains("wav");
    if is_wav_mime && !(bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE") {
        return Err(ApiError::bad(
            "ref_audio is declared as WAV but is not a RIFF/WAVE file",
            p,
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
