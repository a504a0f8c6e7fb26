//! `POST /v1/chat/completions` bodies → a validated [`ChatRequest`], with a 400 (OpenAI
//! envelope) for every invalid body or media item (`docs/simulator.md` ("Chat
//! completions")). Unknown models are 404, as vLLM answers them.

use dfx_core::diag::json_type_name;
use dfx_core::lenient::python_truthy;
use serde_json::{Map, Value};

use super::media::{self, MediaError, MediaInfo};
use super::profile::OmniProfile;
use crate::error::ApiError;

/// Most messages in one request.
pub(crate) const MAX_MESSAGES: usize = 1024;
/// Most media items in one request.
pub(crate) const MAX_MEDIA_ITEMS: usize = 64;
/// Longest text of one request, characters.
pub(crate) const MAX_TEXT_CHARS: usize = 1 << 20;
/// Chat-template tokens added per message (role markers and newlines).
pub(crate) const TEMPLATE_TOKENS_PER_MESSAGE: u64 = 5;

/// A validated chat request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// `stream: true`.
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// `stream_options.continuous_usage_stats`.
    pub continuous_usage: bool,
    /// Text tokens allowed (`max_tokens` / `max_completion_tokens` / profile default).
    pub max_tokens: u32,
    /// `ignore_eos: true`: exactly `max_tokens` text tokens.
    pub ignore_eos: bool,
    /// Audio output asked for (`modalities` absent or containing "audio").
    pub want_audio: bool,
    /// `return_stage_metrics` truthy.
    pub stage_metrics: bool,
    /// Request `seed` (part of the output-length draw).
    pub seed: Option<i64>,
    /// Estimated tokens of the prompt text.
    pub text_tokens: u64,
    /// Chat-template tokens.
    pub template_tokens: u64,
    /// Tokens of every media item.
    pub media_tokens: u64,
    /// The media items as read.
    pub media: Vec<MediaInfo>,
    /// The prompt text (hashed into the output-length draw).
    pub text: String,
}

impl ChatRequest {
    /// `usage.prompt_tokens`: text + template + media tokens.
    pub fn prompt_tokens(&self) -> u64 {
        self.text_tokens + self.template_tokens + self.media_tokens
    }
}

/// `v` as JSON, cut to `n` characters (error messages never echo a whole payload).
fn short(v: &Value, n: usize) -> String {
    let s = v.to_string();
    if s.chars().count() <= n {
        s
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}

fn wrong(key: &str, want: &str, got: &Value) -> ApiError {
    ApiError::bad(
        format!(
            "`{key}` must be {want}, got {} {}",
            json_type_name(got),
            short(got, 60)
        ),
        Some(key),
    )
}

fn get<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    m.get(key).filter(|v| !v.is_null())
}

fn boolean(m: &Map<String, Value>, key: &str) -> Result<Option<bool>, ApiError> {
    match get(m, key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(wrong(key, "a boolean", v)),
    }
}

/// Estimated tokens of `text`: about 4 ASCII characters per token, 1.5 other characters
/// per token (CJK, Cyrillic and other scripts tokenise much finer).
pub(crate) fn estimate_text_tokens(text: &str) -> u64 {
    let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
        if c.is_ascii() { (a + 1, o) } else { (a, o + 1) }
    });
    ascii.div_ceil(4) + (other * 2).div_ceil(3)
}

fn media_err(e: MediaError, param: &str) -> ApiError {
    ApiError::bad(e.to_string(), Some(param))
}

/// A media URL: `"url"` in an object (`image_url: {"url": …}`) or the string itself.
fn url_of<'a>(part: &'a Map<String, Value>, key: &str) -> Result<&'a str, ApiError> {
    let param = format!("messages.content.{key}");
    match get(part, key) {
        Some(Value::String(s)) => Ok(s),
        Some(Value::Object(o)) => match get(o, "url") {
            Some(Value::String(s)) => Ok(s),
            Some(v) => Err(wrong(&format!("{key}.url"), "a string", v)),
            None => Err(ApiError::bad(
                format!("`{key}.url` is missing"),
                Some(&param),
            )),
        },
        Some(v) => Err(wrong(key, "an object with `url`", v)),
        None => Err(ApiError::bad(format!("`{key}` is missing"), Some(&param))),
    }
}

fn read_part(part: &Value, text: &mut String, media: &mut Vec<MediaInfo>) -> Result<(), ApiError> {
    let Value::Object(p) = part else {
        return Err(wrong("messages.content[]", "an object", part));
    };
    let kind = match get(p, "type") {
        Some(Value::String(s)) => s.as_str(),
        Some(v) => return Err(wrong("messages.content[].type", "a string", v)),
        None => {
            return Err(ApiError::bad(
                "content part without `type`",
                Some("messages"),
            ));
        }
    };
    let param = format!("messages.content.{kind}");
    let info = match kind {
        "text" | "input_text" => {
            match get(p, "text") {
                Some(Value::String(s)) => text.push_str(s),
                Some(v) => return Err(wrong("messages.content[].text", "a string", v)),
                None => return Err(ApiError::bad("text part without `text`", Some("messages"))),
            }
            return Ok(());
        }
        "image_url" => {
            let (_, bytes) =
                media::decode_data_url(url_of(p, kind)?).map_err(|e| media_err(e, &param))?;
            media::image_info(&bytes).map_err(|e| media_err(e, &param))?
        }
        "video_url" => {
            let (_, bytes) =
                media::decode_data_url(url_of(p, kind)?).map_err(|e| media_err(e, &param))?;
            media::video_info(&bytes).map_err(|e| media_err(e, &param))?
        }
        "audio_url" => {
            let (_, bytes) =
                media::decode_data_url(url_of(p, kind)?).map_err(|e| media_err(e, &param))?;
            media::audio_info(&bytes).map_err(|e| media_err(e, &param))?
        }
        "input_audio" => {
            let Some(Value::Object(a)) = get(p, "input_audio") else {
                return Err(ApiError::bad(
                    "`input_audio` must be an object with `data`",
                    Some(&param),
                ));
            };
            let Some(Value::String(data)) = get(a, "data") else {
                return Err(ApiError::bad(
                    "`input_audio.data` must be a base64 string",
                    Some(&param),
                ));
            };
            let url = format!("data:audio/wav;base64,{data}");
            let (_, bytes) = media::decode_data_url(&url).map_err(|e| media_err(e, &param))?;
            media::audio_info(&bytes).map_err(|e| media_err(e, &param))?
        }
        other => {
            return Err(ApiError::bad(
                format!("Unknown part type: {other:.40}"),
                Some("messages"),
            ));
        }
    };
    if media.len() >= MAX_MEDIA_ITEMS {
        return Err(ApiError::bad(
            format!("at most {MAX_MEDIA_ITEMS} media items per request"),
            Some("messages"),
        ));
    }
    media.push(info);
    Ok(())
}

fn read_messages(
    body: &Map<String, Value>,
    text: &mut String,
    media: &mut Vec<MediaInfo>,
) -> Result<usize, ApiError> {
    let msgs = match get(body, "messages") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(Value::Array(_)) => {
            return Err(ApiError::bad(
                "`messages` must not be empty",
                Some("messages"),
            ));
        }
        Some(v) => return Err(wrong("messages", "a list of messages", v)),
        None => return Err(ApiError::bad("`messages` is required", Some("messages"))),
    };
    if msgs.len() > MAX_MESSAGES {
        return Err(ApiError::bad(
            format!("at most {MAX_MESSAGES} messages"),
            Some("messages"),
        ));
    }
    for m in msgs {
        let Value::Object(m) = m else {
            return Err(wrong("messages[]", "an object", m));
        };
        match get(m, "role") {
            Some(Value::String(r))
                if ["system", "user", "assistant", "tool", "developer"].contains(&r.as_str()) => {}
            Some(v) => {
                return Err(ApiError::bad(
                    format!("unknown message role {}", short(v, 40)),
                    Some("messages"),
                ));
            }
            None => return Err(ApiError::bad("message without `role`", Some("messages"))),
        }
        match m.get("content") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => text.push_str(s),
            Some(Value::Array(parts)) => {
                for p in parts {
                    read_part(p, text, media)?;
                }
            }
            Some(v) => {
                return Err(wrong(
                    "messages[].content",
                    "a string or a list of parts",
                    v,
                ));
            }
        }
        if text.len() > MAX_TEXT_CHARS {
            return Err(ApiError::bad("prompt text too long", Some("messages")));
        }
    }
    Ok(msgs.len())
}

/// Parses and validates a body for `profile`; `model_names` are the names `model` may use.
pub fn parse(
    raw: &[u8],
    profile: &OmniProfile,
    model_names: &[String],
) -> Result<ChatRequest, ApiError> {
    let value: Value = serde_json::from_slice(raw)
        .map_err(|e| ApiError::bad(format!("Invalid JSON body: {e}"), None))?;
    let Value::Object(body) = &value else {
        return Err(ApiError::bad(
            "The request body must be a JSON object",
            None,
        ));
    };
    match get(body, "model") {
        None => {}
        Some(Value::String(m)) if model_names.iter().any(|n| n == m) => {}
        Some(Value::String(m)) => {
            return Err(ApiError::not_found(
                format!("The model `{m:.200}` does not exist."),
                Some("model"),
            ));
        }
        Some(v) => return Err(wrong("model", "a string", v)),
    }
    let stream = boolean(body, "stream")?.unwrap_or(false);
    let (mut include_usage, mut continuous_usage) = (false, false);
    match get(body, "stream_options") {
        None => {}
        Some(Value::Object(o)) => {
            if !stream {
                return Err(ApiError::bad(
                    "Stream options can only be defined when `stream=True`.",
                    Some("stream_options"),
                ));
            }
            include_usage = boolean(o, "include_usage")?.unwrap_or(false);
            continuous_usage = boolean(o, "continuous_usage_stats")?.unwrap_or(false);
        }
        Some(v) => return Err(wrong("stream_options", "an object", v)),
    }
    for key in [
        "temperature",
        "top_p",
        "frequency_penalty",
        "presence_penalty",
        "repetition_penalty",
        "min_p",
    ] {
        match get(body, key) {
            None | Some(Value::Number(_)) => {}
            Some(v) => return Err(wrong(key, "a number", v)),
        }
    }
    if let Some(t) = get(body, "temperature").and_then(Value::as_f64)
        && !(0.0..=100.0).contains(&t)
    {
        return Err(ApiError::bad(
            "`temperature` must be non-negative",
            Some("temperature"),
        ));
    }
    match get(body, "n") {
        None => {}
        Some(v) if v.as_u64() == Some(1) => {}
        Some(v) => {
            return Err(ApiError::bad(
                format!("only `n: 1` is served, got {}", short(v, 20)),
                Some("n"),
            ));
        }
    }
    let seed = match get(body, "seed") {
        None => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| wrong("seed", "an integer", v))?),
    };
    let ignore_eos = boolean(body, "ignore_eos")?.unwrap_or(false);
    let want_audio = match get(body, "modalities") {
        None => !profile.text_only,
        Some(Value::Array(list)) if !list.is_empty() => {
            let mut audio = false;
            for m in list {
                match m.as_str() {
                    Some("text") => {}
                    Some("audio") if !profile.text_only => audio = true,
                    _ => {
                        return Err(ApiError::bad(
                            format!("unsupported modality {}", short(m, 30)),
                            Some("modalities"),
                        ));
                    }
                }
            }
            audio
        }
        Some(v) => {
            return Err(wrong(
                "modalities",
                "a non-empty list of \"text\" / \"audio\"",
                v,
            ));
        }
    };
    match get(body, "response_format") {
        None => {}
        Some(Value::Object(o)) => match o.get("type").and_then(Value::as_str) {
            Some("text" | "json_object" | "json_schema" | "structural_tag") => {}
            _ => {
                return Err(ApiError::bad(
                    "`response_format.type` must be text, json_object, json_schema or structural_tag",
                    Some("response_format"),
                ));
            }
        },
        Some(v) => {
            return Err(wrong(
                "response_format",
                "an object such as {\"type\": \"text\"}",
                v,
            ));
        }
    }
    match get(body, "audio") {
        None => {}
        Some(Value::Object(o)) => match get(o, "format") {
            None => {}
            Some(Value::String(f)) if f == "wav" => {}
            Some(v) => {
                return Err(ApiError::bad(
                    format!("audio format {} is not produced (wav only)", short(v, 20)),
                    Some("audio.format"),
                ));
            }
        },
        Some(v) => return Err(wrong("audio", "an object", v)),
    }
    let mut text = String::new();
    let mut items = Vec::new();
    let n_messages = read_messages(body, &mut text, &mut items)?;
    let media_tokens: u64 = items.iter().map(|i| media::tokens(&profile.media, i)).sum();
    let text_tokens = estimate_text_tokens(&text);
    let template_tokens =
        u64::from(profile.media.template_tokens) + TEMPLATE_TOKENS_PER_MESSAGE * n_messages as u64;
    let prompt = text_tokens + template_tokens + media_tokens;
    let limit = u64::from(profile.max_model_len);
    let max_tokens = match get(body, "max_tokens").or_else(|| get(body, "max_completion_tokens")) {
        None => {
            let room = limit
                .saturating_sub(prompt)
                .min(u64::from(profile.default_max_tokens));
            u32::try_from(room).unwrap_or(0)
        }
        Some(v) => match v.as_i64() {
            Some(n) if n >= 1 => u32::try_from(n).unwrap_or(u32::MAX),
            _ => {
                return Err(ApiError::bad(
                    format!("`max_tokens` must be at least 1, got {}", short(v, 30)),
                    Some("max_tokens"),
                ));
            }
        },
    };
    if max_tokens == 0 || prompt + u64::from(max_tokens) > limit {
        return Err(ApiError::bad(
            format!(
                "This model's maximum context length is {limit} tokens. However, you requested {} tokens ({prompt} in the messages, {max_tokens} in the completion).",
                prompt + u64::from(max_tokens)
            ),
            Some("max_tokens"),
        ));
    }
    Ok(ChatRequest {
        stream,
        include_usage,
        continuous_usage,
        max_tokens,
        ignore_eos,
        want_audio,
        stage_metrics: python_truthy(body.get("return_stage_metrics")),
        seed,
        text_tokens,
        template_tokens,
        media_tokens,
        media: items,
        text,
    })
}
