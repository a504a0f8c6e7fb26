//! The performance model: a deterministic discrete-event simulation of a two-stage TTS
//! server (`docs/simulator.md` ("Performance model")), free of clocks, threads and I/O.
//!
//! Time is virtual (nanoseconds of simulated GPU time). The driver feeds arrivals and
//! cancellations in at their virtual times and asks the engine to `Engine::advance` up
//! to "now"; the engine answers with the chunks that finished decoding, each stamped with
//! the virtual time at which its PCM is due. Same inputs at the same virtual times give
//! the same outputs, bit for bit.
//!
//! Stages:
//! - **talker** (`talker`): a waiting queue in front of a continuous batch of at most
//!   `max_num_seqs` sequences. One step generates one codec frame per sequence and takes
//!   `step_base + step_per_seq × batch`, plus, when it admits new sequences, the largest
//!   of their prefills (larger for voice clone, which encodes the reference) and
//!   `prefill_per_seq` for each; × `1 + contention` when it starts while code2wav is
//!   decoding on the same GPU.
//! - **code2wav** (`codec`): a queue of codec chunks in front of a decoder with at most
//!   `max_num_seqs` resident requests (oldest first; resident until their last chunk)
//!   and at most `decode_batch` chunks per step, one per request (a request's chunks
//!   decode in order), served oldest request first or, with `chunk_fifo`, in queue order. A step of n chunks costs `step_base + step_per_extra_chunk ×
//!   (n − 1) + per_frame × Σ(chunk + context frames) × (1 + batch_efficiency × (n − 1)) / n`.
//! - single-stage models (VoxCPM2) have no codec stage: the talker emits PCM itself and
//!   pays `inline_decode` per chunk inside its step.

mod chunking;
mod codec;
pub(crate) mod drive;
mod model;
mod talker;

pub use chunking::Chunking;

use codec::Codec;
pub(crate) use model::Model;
use talker::Talker;

/// Virtual time in nanoseconds since the engine started.
pub(crate) type VTime = u64;

/// Converts seconds of simulated time to `VTime` nanoseconds.
pub fn secs(s: f64) -> VTime {
    (s.max(0.0) * 1e9).round() as VTime
}

/// Talker (stage 0) parameters, in seconds of simulated time.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TalkerParams {
    /// Fixed cost of one decode step.
    pub step_base_s: f64,
    /// Added per sequence in the batch.
    pub step_per_seq_s: f64,
    /// Added per sequence admitted in the step, on top of the largest admitted request's
    /// own prefill ([`Job::prefill_s`]): batched prefill is far cheaper than serial.
    pub prefill_per_seq_s: f64,
    /// Continuous-batching limit (`stages[0].max_num_seqs`).
    pub max_num_seqs: usize,
    /// Decode cost per emitted chunk, paid inside the talker step (single-stage models
    /// only; 0 for two-stage models).
    pub inline_decode_s: f64,
}

/// Code2wav (stage 1) parameters, in seconds of simulated time.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CodecParams {
    /// Fixed cost of one decode step.
    pub step_base_s: f64,
    /// Added per chunk beyond the first in a batched step.
    pub step_per_extra_chunk_s: f64,
    /// Cost per decoded frame (own, left-context and reference frames).
    pub per_frame_s: f64,
    /// Frame work of a batch of n chunks costs `(1 + batch_efficiency × (n − 1)) / n` of
    /// decoding them one by one (1 = no gain from batching).
    pub batch_efficiency: f64,
    /// Requests resident in code2wav at most (`stages[1].max_num_seqs`).
    pub max_num_seqs: usize,
    /// Chunks decoded per step at most (1 = one request at a time).
    pub decode_batch: usize,
    /// Left context frames re-decoded with every chunk after the first
    /// (`codec_left_context_frames`).
    pub left_context_frames: u32,
    /// Which resident requests a step serves: `false` = oldest request first; `true` =
    /// the chunks that entered the code2wav queue first.
    pub chunk_fifo: bool,
}

/// Everything the engine needs, already validated.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EngineConfig {
    /// Stage 0.
    pub talker: TalkerParams,
    /// `None` for single-stage models.
    pub codec: Option<CodecParams>,
    /// How frames are cut into chunks.
    pub chunking: Chunking,
    /// Multiplies every service time (the slow-down fault).
    pub slowdown: f64,
    /// Both stages share one GPU: a talker step that starts while code2wav is decoding
    /// takes `1 + contention` times longer (0 when the stages run on different devices).
    pub contention: f64,
}

/// One synthesis request as the engine sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Routing id; ids grow with arrival (code2wav serves the oldest first).
    pub id: u64,
    /// Codec frames to generate (≥ 1).
    pub frames: u32,
    /// Prefill cost of this request alone, seconds (task-dependent; a step admitting
    /// several pays the largest plus `prefill_per_seq_s` each).
    pub prefill_s: f64,
    /// Reference-context frames the decoder carries with every chunk (voice clone).
    pub ref_context_frames: u32,
    /// Per-request `initial_codec_chunk_frames` override.
    pub initial_chunk_frames: Option<u32>,
}

/// A decoded chunk: its PCM is due at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Emission {
    /// The job.
    pub id: u64,
    /// Virtual time at which the PCM is due.
    pub at: VTime,
    /// 0-based index of the chunk within the request.
    pub chunk_index: u32,
    /// First frame of this chunk within the utterance.
    pub start_frame: u32,
    /// Codec frames in this chunk.
    pub frames: u32,
    /// Whether this is the final chunk of the request.
    pub last: bool,
}

/// A chunk travelling from the talker to the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chunk {
    id: u64,
    index: u32,
    start_frame: u32,
    frames: u32,
    /// Reference frames decoded along (voice clone); left context is added by the codec.
    ref_context_frames: u32,
    last: bool,
}

/// Queue and occupancy figures for `/sim/stats`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct EngineSnapshot {
    /// The engine's virtual time, seconds.
    pub now_s: f64,
    /// Sequences in the talker's waiting queue, not yet admitted to the batch.
    pub talker_waiting: usize,
    /// Sequences in the talker's continuous batch.
    pub talker_running: usize,
    /// Talker steps started since the engine started.
    pub talker_steps: u64,
    /// Virtual time of the talker steps started so far (the running one whole), s.
    pub talker_busy_s: f64,
    /// Chunks in code2wav's input queue, not yet in a step (0 for single-stage models).
    pub codec_queued_chunks: usize,
    /// Requests resident in code2wav (at most its `max_num_seqs`).
    pub codec_resident: usize,
    /// Code2wav steps started since the engine started.
    pub codec_steps: u64,
    /// Virtual time of the code2wav steps started so far (the running one whole), s.
    pub codec_busy_s: f64,
}

/// The discrete-event model.
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    now: VTime,
    talker: Talker,
    codec: Option<Codec>,
}

impl Engine {
    /// An idle engine at virtual time 0.
    pub fn new(cfg: EngineConfig) -> Self {
        let talker = Talker::new(
            cfg.talker.clone(),
            cfg.chunking.clone(),
            cfg.slowdown,
            cfg.contention,
        );
        let codec = cfg.codec.clone().map(|c| Codec::new(c, cfg.slowdown));
        Engine {
            cfg,
            now: 0,
            talker,
            codec,
        }
    }

    /// The parameters it runs with.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// The virtual time of the last processed event or arrival.
    pub fn now(&self) -> VTime {
        self.now
    }

    /// When the next stage step completes, if any stage is busy.
    pub(crate) fn next_event(&self) -> Option<VTime> {
        let c = self.codec.as_ref().and_then(Codec::busy_until);
        match (self.talker.busy_until(), c) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Queues a request at virtual time `at` (clamped to the engine's clock). Events due
    /// before `at` must have been processed with [`Engine::advance`] first.
    pub(crate) fn submit(&mut self, at: VTime, job: Job, out: &mut Vec<Emission>) {
        self.advance(at, out);
        self.now = self.now.max(at);
        self.talker.enqueue(job);
        self.kick();
    }

    /// Forgets a request (client gone): it leaves every queue and batch.
    pub(crate) fn cancel(&mut self, id: u64) {
        self.talker.cancel(id);
        if let Some(c) = self.codec.as_mut() {
            c.cancel(id);
        }
    }

    /// Processes every event due at or before `until`, appending the emissions.
    pub(crate) fn advance(&mut self, until: VTime, out: &mut Vec<Emission>) {
        while let Some(t) = self.next_event().filter(|t| *t <= until) {
            self.now = t;
            // Ties: the talker first, so a chunk produced at `t` can enter a decode step
            // starting at `t`.
            if self.talker.busy_until() == Some(t) {
                let chunks = self.talker.complete(t);
                self.route(chunks, t, out);
            }
            if let Some(c) = self.codec.as_mut()
                && c.busy_until() == Some(t)
            {
                out.extend(c.complete(t));
            }
            self.kick();
        }
        self.now = self.now.max(until);
    }

    /// Starts idle stages that have work.
    fn kick(&mut self) {
        let now = self.now;
        let codec_busy = self
            .codec
            .as_ref()
            .is_some_and(|c| c.busy_until().is_some());
        self.talker.start_if_idle(now, codec_busy);
        if let Some(c) = self.codec.as_mut() {
            c.start_if_idle(now);
        }
    }

    fn route(&mut self, chunks: Vec<Chunk>, t: VTime, out: &mut Vec<Emission>) {
        match self.codec.as_mut() {
            Some(c) => c.enqueue(chunks),
            None => out.extend(chunks.into_iter().map(|ch| Emission {
                id: ch.id,
                at: t,
                chunk_index: ch.index,
                start_frame: ch.start_frame,
                frames: ch.frames,
                last: ch.last,
            })),
        }
    }

    /// Queue and occupancy figures.
    pub fn snapshot(&self) -> EngineSnapshot {
        let mut s = EngineSnapshot {
            now_s: self.now as f64 / 1e9,
            ..Default::default()
        };
        self.talker.fill_snapshot(&mut s);
        if let Some(c) = &self.codec {
            c.fill_snapshot(&mut s);
        }
        s
    }
}

#[cfg(test)]
mod tests;
