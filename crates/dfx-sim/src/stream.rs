//! Response bodies: chunk streams (raw audio or SSE) written as chunks are decoded, and
//! the lazily rendered whole body of non-streaming requests. Stream faults (stall,
//! truncate, odd byte) are applied here.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::audio::{AudioPlan, VoiceBuffer, wav_header};
use crate::driver::InFlight;
use crate::engine::Emission;
use crate::request::Format;

/// A speech request in flight.
pub(crate) type Guard = InFlight<crate::engine::Engine>;

/// Turns decoded chunks into bytes.
pub(crate) struct Render {
    pub voice: Arc<VoiceBuffer>,
    pub plan: AudioPlan,
    pub format: Format,
    pub odd_byte: bool,
}

impl Render {
    /// Audio bytes of a chunk: the WAV header before the first, the odd byte after the
    /// last when that fault is on.
    pub(crate) fn chunk(&self, e: &Emission) -> Bytes {
        let (from, to) = self.plan.chunk_samples(e.start_frame, e.frames);
        let mut buf = BytesMut::with_capacity(((to - from) * 2) as usize + 45);
        if e.chunk_index == 0 && self.format == Format::Wav {
            buf.extend_from_slice(&wav_header(self.voice.sample_rate, self.plan.total_bytes()));
        }
        self.voice.render(&self.plan, from, to, &mut buf);
        if e.last && self.odd_byte {
            buf.extend_from_slice(&[0]);
        }
        buf.freeze()
    }

    /// Total body bytes of a complete response.
    pub(crate) fn total_bytes(&self) -> u64 {
        self.plan.total_bytes()
            + if self.format == Format::Wav { 44 } else { 0 }
            + u64::from(self.odd_byte)
    }
}

/// Stream faults.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StreamFaults {
    pub stall_after: Option<u32>,
    pub truncate_after: Option<u32>,
}

/// A streaming body: one write per decoded chunk (raw bytes or one SSE event).
pub(crate) struct ChunkStream {
    rx: UnboundedReceiver<Emission>,
    render: Render,
    guard: Guard,
    faults: StreamFaults,
    sse: bool,
    sent: u32,
    done: bool,
    /// Truncation waits a moment so the chunks already sent leave the socket first.
    cut: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// How long a truncated stream lets its last chunk drain before the connection drops.
const CUT_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

fn sse_event(name: &str, data: serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

impl ChunkStream {
    pub(crate) fn new(
        rx: UnboundedReceiver<Emission>,
        render: Render,
        guard: Guard,
        faults: StreamFaults,
        sse: bool,
    ) -> Self {
        ChunkStream {
            rx,
            render,
            guard,
            faults,
            sse,
            sent: 0,
            done: false,
            cut: None,
        }
    }

    fn encode(&self, e: &Emission) -> Bytes {
        let audio = self.render.chunk(e);
        let stats = &self.guard.stats;
        stats.chunks.fetch_add(1, Ordering::Relaxed);
        stats
            .pcm_bytes
            .fetch_add(audio.len() as u64, Ordering::Relaxed);
        if !self.sse {
            return audio;
        }
        let fmt = if self.render.format == Format::Wav {
            "wav"
        } else {
            "pcm"
        };
        let b64 = base64::engine::general_purpose::STANDARD.encode(&audio);
        let mut s = sse_event(
            "speech.audio.delta",
            json!({"type": "speech.audio.delta", "audio": b64, "response_format": fmt}),
        );
        if e.last {
            let out = self.render.plan.frames;
            s.push_str(&sse_event(
                "speech.audio.done",
                json!({"type": "speech.audio.done", "usage": {
                    "input_tokens": 0, "output_tokens": out, "total_tokens": out,
                }}),
            ));
        }
        Bytes::from(s)
    }
}

impl Stream for ChunkStream {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.faults.truncate_after.is_some_and(|n| this.sent >= n) {
            let cut = this
                .cut
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(CUT_DELAY)));
            if cut.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.done = true;
            tracing::debug!(id = this.guard.id, "truncating stream (fault)");
            return Poll::Ready(Some(Err(std::io::Error::other(
                "stream truncated (simulated fault)",
            ))));
        }
        if this.faults.stall_after.is_some_and(|n| this.sent >= n) {
            // Never woken again: the connection stays open with no more bytes.
            return Poll::Pending;
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(e)) => {
                let bytes = this.encode(&e);
                this.sent += 1;
                if e.last {
                    this.done = true;
                    this.guard.finished = true;
                }
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(Some(Err(std::io::Error::other("server stopped"))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A complete (non-streaming) body rendered in pieces, so no clip is held in memory.
pub(crate) struct WholeBody {
    pub render: Render,
    pub guard: Guard,
    pub next_sample: u64,
    pub header_done: bool,
    pub tail_done: bool,
}

/// Samples rendered per piece of a whole body.
const PIECE_SAMPLES: u64 = 32 * 1024;

impl Stream for WholeBody {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let r = &this.render;
        if !this.header_done {
            this.header_done = true;
            if r.format == Format::Wav {
                return Poll::Ready(Some(Ok(wav_header(
                    r.voice.sample_rate,
                    r.plan.total_bytes(),
                ))));
            }
        }
        let total = r.plan.total_samples();
        if this.next_sample < total {
            let to = (this.next_sample + PIECE_SAMPLES).min(total);
            let mut buf = BytesMut::new();
            r.voice.render(&r.plan, this.next_sample, to, &mut buf);
            this.next_sample = to;
            this.guard
                .stats
                .pcm_bytes
                .fetch_add(buf.len() as u64, Ordering::Relaxed);
            return Poll::Ready(Some(Ok(buf.freeze())));
        }
        if !this.tail_done {
            this.tail_done = true;
            this.guard.finished = true;
            if r.odd_byte {
                return Poll::Ready(Some(Ok(Bytes::from_static(&[0]))));
            }
        }
        Poll::Ready(None)
    }
}
