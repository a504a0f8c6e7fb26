//! Per-request figures of a chat-omni request with upstream's definitions
//! (`docs/bench.md`, "openai-chat-omni"), and its `records.jsonl` line: the text
//! timeline (token message times and counts, ITLs) and the audio timeline (chunk times
//! and frames).

use std::io::Write;
use std::path::Path;
use std::sync::mpsc;
use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value};

use super::client::ChatExchange;
use crate::metrics::{e2el, rtf, tpot, ttfp, ttft};
use crate::native::BenchError;
use crate::native::record::{Dispatch, Ending, Identity, Sending};
use crate::native::stats;

/// Identity of a request.
#[derive(Debug, Clone)]
pub(crate) struct ChatSample {
    pub request_id: Option<String>,
    /// Prompt length from the dataset (tokenizer or approximation).
    pub prompt_len: u64,
    pub max_tokens: u64,
    /// `image:1,audio:1`-style item summary.
    pub items: String,
    pub body_bytes: u64,
}

/// One chat request as written to `records.jsonl`. Times in seconds; `*_send_s` and
/// `end_s` relative to the phase start, the timelines relative to the send.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChatRecord {
    #[serde(flatten)]
    pub id: Identity,
    pub items: String,
    pub body_bytes: u64,
    pub max_tokens: u64,
    #[serde(flatten)]
    pub sent: Sending,
    /// Time the body waited for its generator after the request was due (look-ahead
    /// starved); part of `lag_s`.
    pub body_wait_s: f64,
    #[serde(flatten)]
    pub end: Ending,
    pub bytes: u64,
    pub reads: u64,
    /// Prompt tokens: the server's `usage.prompt_tokens` when positive, else the dataset's.
    pub prompt_len: u64,
    pub prompt_len_source: &'static str,
    /// Output tokens for the statistics (upstream's rule).
    pub output_len: u64,
    pub ttft_s: f64,
    pub tpot_s: Option<f64>,
    pub e2el_s: f64,
    pub text_latency_s: f64,
    pub itl_s: Vec<f64>,
    pub token_t_s: Vec<f64>,
    pub token_n: Vec<u64>,
    pub audio_ttfp_s: f64,
    pub audio_last_s: Option<f64>,
    pub audio_duration_s: f64,
    pub audio_frames: u64,
    pub audio_rtf: f64,
    pub audio_sample_rate: Option<u32>,
    pub audio_channels: Option<u16>,
    pub audio_dropped_chunks: u32,
    pub audio_chunk_t_s: Vec<f64>,
    pub audio_chunk_frames: Vec<u64>,
    pub images: u64,
    pub stage_metrics: Option<Map<String, Value>>,
    pub notes: Vec<String>,
}

/// Stage 0's timings for TPOT's last rule, from the stream's stage metrics.
fn stage0(st: &Map<String, Value>) -> Option<tpot::Stage0> {
    let s0 = st.get("0")?.as_object()?;
    Some(tpot::Stage0 {
        tokens_out: s0.get("num_tokens_out").and_then(Value::as_u64),
        itls_ms: s0
            .get("vllm_itls_ms")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_f64).collect()),
        tpot_ms: s0.get("vllm_tpot_ms").and_then(Value::as_f64),
    })
}

impl ChatRecord {
    /// The record of a finished request; `counter` counts output text when the server
    /// reported no tokens.
    pub(crate) fn new(
        d: &Dispatch,
        s: ChatSample,
        x: ChatExchange,
        base: Instant,
        body_wait_s: f64,
        count: &dyn Fn(&str) -> Option<u64>,
    ) -> Self {
        let ok = x.ok();
        let st = x.stream;
        let output_len = match st.output_tokens {
            0 if !st.text.is_empty() => count(&st.text).unwrap_or(1),
            n => n,
        };
        let ttft = ttft::or_zero(st.ttft_s);
        let duration = st.audio_duration_s();
        let mut itl = st.itl_s;
        let text_latency = tpot::text_latency_s(ttft, &itl);
        let tpot_s = if ok {
            let s0 = stage0(&st.stage_metrics);
            let t = tpot::tpot(
                output_len,
                &itl,
                (ttft, text_latency),
                s0.as_ref(),
                stats::mean,
            );
            if let Some(stage_itl) = t.stage_itl_s {
                itl = stage_itl;
            }
            t.tpot_s
        } else {
            None
        };
        let audio_last = st.audio_last_s;
        let rtf = audio_last.map_or(0.0, |t| rtf::rtf(t, duration));
        let (prompt_len, source) = match st.prompt_tokens {
            Some(p) => (p, "server"),
            None => (s.prompt_len, "dataset"),
        };
        ChatRecord {
            id: Identity::new(d, s.request_id),
            items: s.items,
            body_bytes: s.body_bytes,
            max_tokens: s.max_tokens,
            sent: Sending::new(d, x.send_at, base),
            body_wait_s,
            end: Ending::new(
                x.end_at,
                base,
                x.status,
                x.failure.as_ref().map(|f| (f.0.key(), f.1.clone())),
            ),
            bytes: x.bytes,
            reads: x.reads,
            prompt_len,
            prompt_len_source: source,
            output_len,
            ttft_s: ttft,
            tpot_s,
            e2el_s: e2el::last_message_s(st.last_msg_s),
            text_latency_s: text_latency,
            itl_s: itl,
            token_t_s: st.token_t_s,
            token_n: st.token_n,
            audio_ttfp_s: ttfp::or_zero(st.audio_first_s),
            audio_last_s: audio_last,
            audio_duration_s: duration,
            audio_frames: st.audio_frames,
            audio_rtf: rtf,
            audio_sample_rate: st.audio_format.map(|f| f.2),
            audio_channels: st.audio_format.map(|f| f.0),
            audio_dropped_chunks: st.audio_dropped,
            audio_chunk_t_s: st.audio_t_s,
            audio_chunk_frames: st.audio_chunk_frames,
            images: st.images,
            stage_metrics: (!st.stage_metrics.is_empty()).then_some(st.stage_metrics),
            notes: st.notes,
        }
    }
}

/// Writes chat records as they arrive (one flushed line each) and collects them, the
/// timelines dropped from the kept copy except the ITLs the statistics need.
pub(crate) struct ChatSink {
    tx: mpsc::Sender<ChatRecord>,
    handle: std::thread::JoinHandle<(Vec<ChatRecord>, Option<String>)>,
}

impl ChatSink {
    /// Starts the writer thread.
    pub(crate) fn start(path: &Path) -> Result<ChatSink, BenchError> {
        let (tx, rx) = mpsc::channel::<ChatRecord>();
        let path = path.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("dfx-chat-records".into())
            .spawn(move || {
                let mut problem = None;
                let mut file = match std::fs::File::create(&path) {
                    Ok(f) => Some(std::io::BufWriter::new(f)),
                    Err(e) => {
                        problem = Some(format!("cannot write {}: {e}", path.display()));
                        None
                    }
                };
                let mut all = Vec::new();
                for mut rec in rx {
                    if let Some(f) = file.as_mut() {
                        let line = serde_json::to_string(&rec).unwrap_or_default();
                        if let Err(e) = writeln!(f, "{line}").and_then(|_| f.flush()) {
                            problem = Some(format!("cannot write {}: {e}", path.display()));
                            file = None;
                        }
                    }
                    rec.audio_chunk_t_s = Vec::new();
                    rec.audio_chunk_frames = Vec::new();
                    rec.token_n = Vec::new();
                    rec.token_t_s = Vec::new();
                    all.push(rec);
                }
                (all, problem)
            })
            .map_err(|source| BenchError::Setup {
                what: "cannot start the records writer",
                source,
            })?;
        Ok(ChatSink { tx, handle })
    }

    /// A sender for request tasks.
    pub(crate) fn sender(&self) -> mpsc::Sender<ChatRecord> {
        self.tx.clone()
    }

    /// Waits for every record (all senders dropped) and returns them.
    pub(crate) fn finish(self) -> (Vec<ChatRecord>, Option<String>) {
        drop(self.tx);
        self.handle
            .join()
            .unwrap_or_else(|_| (Vec::new(), Some("records writer panicked".into())))
    }
}

crate::native::record::phase_record!(ChatRecord);
