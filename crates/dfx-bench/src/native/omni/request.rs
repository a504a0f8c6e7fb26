//! Chat-omni request bodies (`docs/bench.md`, "openai-chat-omni"): keys `model, messages,
//! temperature, max_tokens, stream, stream_options, ignore_eos`, then the sampling flags
//! and `extra_body` (a same-named key replaces the value in place), then
//! `return_stage_metrics: true` when upstream would inject it. The text part comes first,
//! the media parts after it. Media are base64-encoded straight into the body buffer.

use base64::Engine;
use dfx_core::lenient::python_truthy;
use dfx_core::plan::PercentileKeys;
use serde_json::{Map, Value};

use crate::native::BenchError;
use crate::native::random::RequestSpec;
use crate::native::random::media;

/// Upstream's order of the sampling flags in the merged extra body.
const SAMPLING: [&str; 7] = [
    "top_p",
    "top_k",
    "min_p",
    "temperature",
    "frequency_penalty",
    "presence_penalty",
    "repetition_penalty",
];

/// Output modalities a request may ask for.
pub(crate) const MODALITIES: [&str; 3] = ["text", "audio", "image"];

/// What every body of a step shares.
#[derive(Debug, Clone)]
pub(crate) struct ChatTemplate {
    pub model: String,
    /// Sampling flags, `extra_body` and the injected `return_stage_metrics`, in order.
    pub extra: Map<String, Value>,
}

impl ChatTemplate {
    /// The template of an entry: `raw` its keys as written, `percentiles` its selection
    /// (the names as written: upstream does not trim them).
    pub(crate) fn new(
        model: &str,
        raw: &Map<String, Value>,
        extra_body: Option<&Map<String, Value>>,
        percentiles: &PercentileKeys,
    ) -> Result<ChatTemplate, BenchError> {
        let norm: Map<String, Value> = raw
            .iter()
            .map(|(k, v)| (k.replace('-', "_"), v.clone()))
            .collect();
        let mut extra = Map::new();
        for k in SAMPLING {
            if let Some(v) = norm.get(k).filter(|v| !v.is_null()) {
                extra.insert(k.into(), v.clone());
            }
        }
        let body = extra_body.cloned().unwrap_or_default();
        check_extra_body(&body)?;
        for (k, v) in &body {
            extra.insert(k.clone(), v.clone());
        }
        let names = percentiles.metrics_as_written().unwrap_or_default();
        let names_any = |n: &str| names.iter().any(|x| x == n);
        let wants_image = body
            .get("modalities")
            .and_then(Value::as_array)
            .is_some_and(|m| m.iter().any(|x| x == "image"));
        let print_stage = python_truthy(norm.get("print_stage"));
        if (names_any("tpot") || names_any("itl") || wants_image || print_stage)
            && !extra.contains_key("return_stage_metrics")
        {
            extra.insert("return_stage_metrics".into(), Value::Bool(true));
        }
        Ok(ChatTemplate {
            model: model.to_string(),
            extra,
        })
    }

    /// The body of one request, as bytes.
    pub(crate) fn body(&self, spec: &RequestSpec) -> Result<Vec<u8>, BenchError> {
        let mut head = Map::new();
        head.insert("model".into(), Value::from(self.model.as_str()));
        head.insert("messages".into(), Value::Null);
        head.insert("temperature".into(), Value::from(0.0));
        head.insert("max_tokens".into(), Value::from(spec.prompt.output_len));
        head.insert("stream".into(), Value::Bool(true));
        head.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true, "continuous_usage_stats": true}),
        );
        // vLLM forces ignore_eos for the random datasets on OpenAI-compatible backends.
        head.insert("ignore_eos".into(), Value::Bool(true));
        for (k, v) in &self.extra {
            head.insert(k.clone(), v.clone());
        }
        let media: Vec<media::Encoded> = spec
            .items
            .iter()
            .enumerate()
            .map(|(j, it)| media::encode(it, spec.seed.wrapping_add(j as u64)))
            .collect::<Result<_, _>>()?;
        let media_len: usize = media
            .iter()
            .map(|m| m.bytes.len().div_ceil(3) * 4 + 64)
            .sum();
        let mut out = Vec::with_capacity(media_len + spec.prompt.text.len() + 512);
        out.push(b'{');
        for (i, (k, v)) in head.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json_into(&mut out, &Value::from(k.as_str()))?;
            out.push(b':');
            if k == "messages" && v.is_null() {
                messages_into(&mut out, &spec.prompt.text, &media)?;
            } else {
                json_into(&mut out, v)?;
            }
        }
        out.push(b'}');
        Ok(out)
    }
}

/// Load-time checks of `extra_body`: no `response_format: "pcm"` (upstream aborts the
/// run), WAV audio only, known `modalities`.
pub(crate) fn check_extra_body(body: &Map<String, Value>) -> Result<(), BenchError> {
    if let Some(f) = body.get("response_format") {
        match f.as_str() {
            Some("pcm") => {
                return Err(BenchError::Input(
                    "extra_body.response_format: \"pcm\" is refused for openai-chat-omni (vllm's client aborts the run on it)"
                        .into(),
                ));
            }
            Some("wav") => {}
            _ => {
                return Err(BenchError::Input(format!(
                    "extra_body.response_format: {f} is not supported by the native bench (it decodes WAV audio chunks only)"
                )));
            }
        }
    }
    if let Some(m) = body.get("modalities") {
        let list = m.as_array().ok_or_else(|| {
            BenchError::Input(format!("extra_body.modalities: expected a list, got {m}"))
        })?;
        for x in list {
            if !x.as_str().is_some_and(|s| MODALITIES.contains(&s)) {
                return Err(BenchError::Input(format!(
                    "extra_body.modalities: unknown modality {x} (known: {})",
                    MODALITIES.join(", ")
                )));
            }
        }
    }
    Ok(())
}

fn json_into(out: &mut Vec<u8>, v: &Value) -> Result<(), BenchError> {
    serde_json::to_writer(&mut *out, v).map_err(|source| BenchError::Encode {
        what: "a request body",
        source,
    })
}

/// `[{"role":"user","content":[{"type":"text","text":…}, <media parts>]}]`.
fn messages_into(
    out: &mut Vec<u8>,
    text: &str,
    media: &[media::Encoded],
) -> Result<(), BenchError> {
    out.extend_from_slice(br#"[{"role":"user","content":[{"type":"text","text":"#);
    json_into(out, &Value::from(text))?;
    out.push(b'}');
    for m in media {
        let head = format!(
            r#",{{"type":"{p}","{p}":{{"url":"data:{mime};base64,"#,
            p = m.part,
            mime = m.mime
        );
        out.extend_from_slice(head.as_bytes());
        let start = out.len();
        out.resize(start + m.bytes.len().div_ceil(3) * 4, 0);
        let n = base64::engine::general_purpose::STANDARD
            .encode_slice(&m.bytes, &mut out[start..])
            .map_err(BenchError::EncodeMedia)?;
        out.truncate(start + n);
        out.extend_from_slice(br#""}}"#);
    }
    out.extend_from_slice(b"]}]");
    Ok(())
}
