//! What one chat-omni stream says, message by message, with vllm-omni's rules
//! (`docs/bench.md`, "openai-chat-omni"): text timing from chunks whose top-level
//! `modality` is `text`, audio from `audio` chunks (each a standalone WAV), usage and
//! stage metrics from any chunk. Chunks without `modality` count only for E2EL and usage.

use base64::Engine;
use serde_json::{Map, Value};

use crate::metrics::{audio_duration, itl};

/// Audio format of the first WAV chunk: `(channels, sample width in bytes, rate)`.
pub(crate) type WavFormat = (u16, u16, u32);

/// The accumulated observations of one stream. Times are seconds since the send.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamState {
    /// Time of the first text message carrying tokens.
    pub ttft_s: Option<f64>,
    /// Inter-token latencies (a message of k tokens adds k equal shares).
    pub itl_s: Vec<f64>,
    /// Time of every text message that carried tokens, with its token count.
    pub token_t_s: Vec<f64>,
    pub token_n: Vec<u64>,
    last_text_t: f64,
    last_completion: u64,
    /// Text received (for a tokenizer count when the server reports no tokens).
    pub text: String,
    /// First and last audio message.
    pub audio_first_s: Option<f64>,
    pub audio_last_s: Option<f64>,
    /// Arrival time and frames of every audio message (0 frames: empty or dropped).
    pub audio_t_s: Vec<f64>,
    pub audio_chunk_frames: Vec<u64>,
    pub audio_format: Option<WavFormat>,
    pub audio_frames: u64,
    pub audio_pcm_bytes: u64,
    pub audio_dropped: u32,
    pub images: u64,
    /// Last JSON message (E2EL), any kind.
    pub last_msg_s: Option<f64>,
    /// Positive `usage.prompt_tokens` seen.
    pub prompt_tokens: Option<u64>,
    /// Largest of `completion_tokens`, `metrics.num_tokens_out` and text-stage
    /// `num_tokens_out`.
    pub output_tokens: u64,
    /// `metrics.stage_metrics` merged over the stream, by stage key.
    pub stage_metrics: Map<String, Value>,
    /// The first `error` chunk's message.
    pub error: Option<String>,
    /// Things worth a bench.log line (dropped chunks, undecodable audio).
    pub notes: Vec<String>,
}

fn as_u64(v: Option<&Value>) -> Option<u64> {
    v.and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64)))
}

impl StreamState {
    /// Takes one JSON message that arrived `t` seconds after the send.
    pub(crate) fn on_message(&mut self, t: f64, v: &Value) {
        let Some(obj) = v.as_object() else {
            return;
        };
        self.last_msg_s = Some(t);
        if let Some(e) = obj.get("error").filter(|e| !e.is_null()) {
            if self.error.is_none() {
                let msg = e
                    .get("message")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .unwrap_or_else(|| e.to_string());
                self.error = Some(msg.chars().take(200).collect());
            }
            return;
        }
        let usage = obj.get("usage").and_then(Value::as_object);
        if let Some(u) = usage {
            if let Some(p) = as_u64(u.get("prompt_tokens")).filter(|&p| p > 0) {
                self.prompt_tokens = Some(p);
            }
            if let Some(c) = as_u64(u.get("completion_tokens")) {
                self.output_tokens = self.output_tokens.max(c);
            }
        }
        if let Some(m) = obj.get("metrics").and_then(Value::as_object) {
            self.on_metrics(m);
        }
        let Some(choice) = obj
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return;
        };
        let delta = choice.get("delta");
        let content = delta
            .and_then(|d| d.get("content"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .or_else(|| {
                delta
                    .and_then(|d| d.get("audio"))
                    .and_then(|a| a.get("data"))
                    .and_then(Value::as_str)
            })
            .unwrap_or("");
        match obj.get("modality").and_then(Value::as_str) {
            Some("text") => self.on_text(t, choice, usage, content),
            Some("audio") => self.on_audio(t, content),
            Some("image") => self.images += 1,
            _ => {}
        }
    }

    fn on_metrics(&mut self, m: &Map<String, Value>) {
        if let Some(n) = as_u64(m.get("num_tokens_out")) {
            self.output_tokens = self.output_tokens.max(n);
        }
        let Some(stages) = m.get("stage_metrics").and_then(Value::as_object) else {
            return;
        };
        for (k, s) in stages {
            let Some(s) = s.as_object() else { continue };
            if s.get("final_output_type").and_then(Value::as_str) == Some("text")
                && let Some(n) = as_u64(s.get("num_tokens_out"))
            {
                self.output_tokens = self.output_tokens.max(n);
            }
            let slot = self
                .stage_metrics
                .entry(k.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(slot) = slot {
                for (f, v) in s {
                    slot.insert(f.clone(), v.clone());
                }
            }
        }
    }

    fn on_text(&mut self, t: f64, choice: &Value, usage: Option<&Map<String, Value>>, text: &str) {
        let completion = usage.and_then(|u| as_u64(u.get("completion_tokens")));
        let k = if let Some(c) = completion {
            let d = c.saturating_sub(self.last_completion);
            self.last_completion = self.last_completion.max(c);
            d
        } else if let Some(ids) = choice.get("token_ids").and_then(Value::as_array) {
            ids.len() as u64
        } else {
            u64::from(!text.is_empty() && usage.is_none())
        };
        if self.text.len() < MAX_TEXT_BYTES {
            self.text.push_str(text);
        }
        if k == 0 {
            return;
        }
        let previous = self.ttft_s.map(|_| self.last_text_t);
        let (v, n) = itl::message_itls(previous, t, k);
        self.push_itl(v, n);
        self.ttft_s.get_or_insert(t);
        self.last_text_t = t;
        self.token_t_s.push(t);
        self.token_n.push(k);
    }

    fn push_itl(&mut self, v: f64, n: u64) {
        let room = MAX_ITL.saturating_sub(self.itl_s.len());
        let n = usize::try_from(n).unwrap_or(usize::MAX).min(room);
        self.itl_s.extend(std::iter::repeat_n(v, n));
    }

    fn on_audio(&mut self, t: f64, content: &str) {
        self.audio_first_s.get_or_insert(t);
        self.audio_last_s = Some(t);
        let frames = if content.is_empty() {
            0
        } else {
            self.wav_chunk(content)
        };
        if self.audio_t_s.len() < MAX_ITL {
            self.audio_t_s.push(t);
            self.audio_chunk_frames.push(frames);
        }
    }

    /// Frames of one base64 WAV chunk (0 when undecodable or of another format).
    fn wav_chunk(&mut self, b64: &str) -> u64 {
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(b64) else {
            self.note("audio chunk is not base64: dropped");
            return 0;
        };
        let Some((fmt, pcm_bytes)) = wav_info(&bytes) else {
            self.note("audio chunk is not a WAV file: dropped");
            return 0;
        };
        let first = *self.audio_format.get_or_insert(fmt);
        if first != fmt {
            self.audio_dropped += 1;
            self.note(&format!(
                "audio chunk format {fmt:?} differs from the first chunk's {first:?} (channels, width, rate): dropped"
            ));
            return 0;
        }
        let frame = u64::from(fmt.0) * u64::from(fmt.1);
        let frames = pcm_bytes.checked_div(frame).unwrap_or(0);
        self.audio_frames += frames;
        self.audio_pcm_bytes += pcm_bytes;
        frames
    }

    fn note(&mut self, n: &str) {
        if self.notes.len() < 5 && !self.notes.iter().any(|m| m == n) {
            self.notes.push(n.to_string());
        }
    }

    /// Σ frames at the first chunk's rate (0 without audio).
    pub(crate) fn audio_duration_s(&self) -> f64 {
        audio_duration::duration_s(self.audio_frames, self.audio_format.map_or(0, |f| f.2))
    }
}

/// Longest text kept per request, and most ITL entries / audio chunks recorded.
const MAX_TEXT_BYTES: usize = 1 << 20;
const MAX_ITL: usize = 1 << 20;

/// `(channels, width, rate)` and the PCM byte count of a WAV file (RIFF chunk walk;
/// a `data` size past the end, or the streaming `0xFFFFFFFF`, counts what is there).
pub(crate) fn wav_info(b: &[u8]) -> Option<(WavFormat, u64)> {
    if b.len() < 12 || &b[..4] != b"RIFF" || &b[8..12] != b"WAVE" {
        return None;
    }
    let mut fmt = None;
    let mut pos = 12usize;
    while pos + 8 <= b.len() {
        let id = &b[pos..pos + 4];
        let size = u32::from_le_bytes(b[pos + 4..pos + 8].try_into().ok()?) as usize;
        let body = pos + 8;
        if id == b"fmt " && size >= 16 && body + 16 <= b.len() {
            let ch = u16::from_le_bytes([b[body + 2], b[body + 3]]);
            let rate = u32::from_le_bytes(b[body + 4..body + 8].try_into().ok()?);
            let bits = u16::from_le_bytes([b[body + 14], b[body + 15]]);
            fmt = Some((ch, bits.div_ceil(8), rate));
        } else if id == b"data" {
            let have = b.len() - body;
            return fmt.map(|f| (f, size.min(have) as u64));
        }
        pos = body.checked_add(size)?.checked_add(size & 1)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A standalone mono/stereo 16-bit WAV of `frames` frames.
    pub(super) fn wav_b64(frames: usize, rate: u32, channels: u16) -> String {
        let data = frames * 2 * channels as usize;
        let mut b = b"RIFF".to_vec();
        b.extend_from_slice(&(36 + data as u32).to_le_bytes());
        b.extend_from_slice(b"WAVEfmt ");
        b.extend_from_slice(&16u32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&channels.to_le_bytes());
        b.extend_from_slice(&rate.to_le_bytes());
        b.extend_from_slice(&(rate * 2 * u32::from(channels)).to_le_bytes());
        b.extend_from_slice(&(2 * channels).to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(b"data");
        b.extend_from_slice(&(data as u32).to_le_bytes());
        b.extend(std::iter::repeat_n(0u8, data));
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    fn text(content: &str, completion: u64) -> Value {
        json!({"choices": [{"delta": {"content": content}}], "modality": "text",
               "usage": {"prompt_tokens": 40, "completion_tokens": completion}})
    }

    fn audio(content: &str) -> Value {
        json!({"choices": [{"delta": {"role": "assistant", "content": content}}], "modality": "audio",
               "usage": {"completion_tokens": 0}})
    }

    #[test]
    fn text_timing_by_cumulative_usage() {
        let mut s = StreamState::default();
        // Role chunk: 0 tokens, records nothing.
        s.on_message(0.05, &text("", 0));
        // A modality-less chunk with content: ignored for timing.
        s.on_message(0.07, &json!({"choices": [{"delta": {"content": "zz"}}]}));
        // First token message carries 2 tokens: one zero gap.
        s.on_message(0.10, &text("ab", 2));
        s.on_message(0.16, &text("c", 3));
        // 3 tokens in 0.09 s: three gaps of 0.03.
        s.on_message(0.25, &text("def", 6));
        assert_eq!(s.ttft_s, Some(0.10));
        let want = [0.0, 0.06, 0.03, 0.03, 0.03];
        assert_eq!(s.itl_s.len(), want.len());
        for (a, b) in s.itl_s.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{:?}", s.itl_s);
        }
        assert_eq!(s.token_n, vec![2, 1, 3]);
        assert_eq!(s.output_tokens, 6);
        assert_eq!(s.prompt_tokens, Some(40));
        assert_eq!(s.text, "abcdef");
        assert_eq!(s.last_msg_s, Some(0.25));
    }

    #[test]
    fn text_without_usage_counts_token_ids_or_one() {
        let mut s = StreamState::default();
        let ids = json!({"choices": [{"delta": {"content": "xy"}, "token_ids": [1, 2]}], "modality": "text"});
        s.on_message(0.2, &ids);
        let one = json!({"choices": [{"delta": {"content": "z"}}], "modality": "text"});
        s.on_message(0.3, &one);
        assert_eq!(s.ttft_s, Some(0.2));
        assert_eq!(s.itl_s.len(), 2);
        assert!((s.itl_s[1] - 0.1).abs() < 1e-12);
        // No usage at all: output tokens stay 0 (the record falls back to a count).
        assert_eq!(s.output_tokens, 0);
    }

    #[test]
    fn audio_frames_from_wav_headers_and_mismatch_dropped() {
        let mut s = StreamState::default();
        s.on_message(0.30, &audio(""));
        s.on_message(0.40, &audio(&wav_b64(2400, 24_000, 1)));
        s.on_message(0.50, &audio(&wav_b64(1200, 48_000, 1)));
        s.on_message(0.60, &audio(&wav_b64(4800, 24_000, 1)));
        s.on_message(
            0.65,
            &json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 0},
            "metrics": {"stage_metrics": {"0": {"final_output_type": "text", "num_tokens_out": 12},
                                           "1": {"audio_frames": 7200}}}}),
        );
        assert_eq!(s.audio_first_s, Some(0.30));
        assert_eq!(s.audio_last_s, Some(0.60));
        assert_eq!(s.audio_frames, 7200);
        assert_eq!(s.audio_format, Some((1, 2, 24_000)));
        assert_eq!(s.audio_dropped, 1);
        assert_eq!(s.audio_chunk_frames, vec![0, 2400, 0, 4800]);
        assert!((s.audio_duration_s() - 0.3).abs() < 1e-12);
        assert!(s.notes[0].contains("differs"), "{:?}", s.notes);
        assert_eq!(s.output_tokens, 12);
        assert_eq!(s.prompt_tokens, Some(9));
        assert_eq!(s.last_msg_s, Some(0.65));
        assert_eq!(s.stage_metrics.len(), 2);
        assert_eq!(s.ttft_s, None);
    }

    #[test]
    fn error_chunk_and_bad_audio() {
        let mut s = StreamState::default();
        s.on_message(0.1, &audio("!!!not base64"));
        s.on_message(0.2, &audio("UklGRg=="));
        s.on_message(
            0.3,
            &json!({"error": {"message": "engine died", "code": 500}}),
        );
        assert_eq!(s.error.as_deref(), Some("engine died"));
        assert_eq!(s.audio_frames, 0);
        assert_eq!(s.notes.len(), 2);
        assert_eq!(wav_info(b"RIFF"), None);
    }
}
