//! The omni performance model: a deterministic discrete-event simulation of a
//! thinker → talker → code2wav server (`docs/simulator.md` ("Omni performance model")),
//! in virtual time (nanoseconds), free of clocks, threads and I/O.
//!
//! - **Thinker** (stage 0): a waiting queue in front of a continuous batch of at most
//!   `max_num_seqs`. A step makes one text token per running sequence and costs
//!   `step_base + step_per_seq × batch + Σ prefill of the requests it admits` (the
//!   prefill produces the request's first token). × `1 + contention` when the talker or
//!   code2wav are busy on the shared GPUs.
//! - **Talker** (stage 1): requests that want audio join it once the thinker has made
//!   `start_after_tokens` tokens (async chunk) or has finished (no async chunk). A step
//!   makes one codec frame per active sequence; a sequence is active while it has text
//!   to speak: with async chunk it cannot run ahead of `frames × tokens so far / tokens`.
//!   Cost `step_base + step_per_seq × active + prefill × admitted`, × `1 + contention`
//!   while the thinker is busy.
//! - **Code2wav** (stage 2): frames are cut into chunks of `chunk_frames` (async chunk)
//!   or one chunk at the end; a step decodes up to `max_num_seqs` chunks (one per
//!   request, in queue order) for `step_base + per_frame × Σ(frames + left context)`.
//!   Each decoded chunk is one audio emission.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;

use super::profile::{Code2WavParams, TalkerStageParams, ThinkerParams};
use crate::engine::{Model, VTime, secs};

/// Everything the omni engine needs, already validated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OmniEngineConfig {
    /// Stage 0.
    pub thinker: ThinkerParams,
    /// Stage 1.
    pub talker: TalkerStageParams,
    /// Stage 2.
    pub code2wav: Code2WavParams,
    /// Stream between stages (`--async-chunk` / deploy `async_chunk`).
    pub async_chunk: bool,
    /// Stages share GPUs (contention factors apply).
    pub shared_gpu: bool,
    /// Multiplies every service time (slow-down fault).
    pub slowdown: f64,
}

/// One chat request as the engine sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct OmniJob {
    /// Routing id (assigned by the driver).
    pub id: u64,
    /// CPU pre-processing before the request reaches the thinker queue (chat template,
    /// media decoding), seconds; overlaps with GPU work of other requests.
    pub preprocess_s: f64,
    /// Prefill cost of this request (pre-processing, media encoders, prompt tokens), s.
    pub prefill_s: f64,
    /// Text tokens to generate (≥ 1).
    pub text_tokens: u32,
    /// Codec frames of speech; 0 = no audio (the talker does no work).
    pub audio_frames: u32,
}

/// What an emission carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OmniOutput {
    /// The thinker made a token: `tokens` so far.
    Text {
        /// Cumulative text tokens.
        tokens: u32,
        /// The last text token.
        last: bool,
    },
    /// Code2wav decoded a chunk of frames.
    Audio {
        /// First frame of the chunk.
        start_frame: u32,
        /// Frames in the chunk.
        frames: u32,
        /// The request's last audio chunk.
        last: bool,
    },
}

/// An output due at virtual time `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OmniEmission {
    /// The job.
    pub id: u64,
    /// When it is due.
    pub at: VTime,
    /// What it is.
    pub out: OmniOutput,
}

impl OmniEmission {
    /// Whether this is the request's final output.
    pub(crate) fn finishes(&self, wants_audio: bool) -> bool {
        match self.out {
            OmniOutput::Text { last, .. } => last && !wants_audio,
            OmniOutput::Audio { last, .. } => last,
        }
    }
}

#[derive(Debug)]
struct ReqState {
    job: OmniJob,
    text: u32,
    thinker_done: bool,
    talker_queued: bool,
    frames: u32,
    frames_chunked: u32,
}

impl ReqState {
    fn frames_available(&self) -> u32 {
        if self.thinker_done {
            self.job.audio_frames
        } else {
            let n = u64::from(self.job.audio_frames) * u64::from(self.text)
                / u64::from(self.job.text_tokens.max(1));
            n as u32
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Chunk {
    id: u64,
    start: u32,
    frames: u32,
    last: bool,
}

#[derive(Debug, Default)]
struct Stage {
    waiting: VecDeque<u64>,
    running: Vec<u64>,
    busy: Option<VTime>,
    members: Vec<u64>,
    steps: u64,
    busy_ns: u64,
}

/// Queue and occupancy figures for `/sim/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct OmniSnapshot {
    pub now_s: f64,
    pub thinker_waiting: usize,
    pub thinker_running: usize,
    pub thinker_steps: u64,
    pub thinker_busy_s: f64,
    pub talker_waiting: usize,
    pub talker_running: usize,
    pub talker_steps: u64,
    pub talker_busy_s: f64,
    pub code2wav_queued_chunks: usize,
    pub code2wav_steps: u64,
    pub code2wav_busy_s: f64,
}

/// The discrete-event model.
#[derive(Debug)]
pub(crate) struct OmniEngine {
    cfg: OmniEngineConfig,
    now: VTime,
    reqs: HashMap<u64, ReqState>,
    /// Requests in pre-processing: (ready at, id), in submission order.
    pending: Vec<(VTime, u64)>,
    thinker: Stage,
    talker: Stage,
    codec_queue: VecDeque<Chunk>,
    codec_busy: Option<VTime>,
    codec_batch: Vec<Chunk>,
    codec_steps: u64,
    codec_busy_ns: u64,
}

impl OmniEngine {
    /// An idle engine at virtual time 0.
    pub(crate) fn new(cfg: OmniEngineConfig) -> Self {
        OmniEngine {
            cfg,
            now: 0,
            reqs: HashMap::new(),
            pending: Vec::new(),
            thinker: Stage::default(),
            talker: Stage::default(),
            codec_queue: VecDeque::new(),
            codec_busy: None,
            codec_batch: Vec::new(),
            codec_steps: 0,
            codec_busy_ns: 0,
        }
    }

    /// The virtual time of the last processed event or arrival.
    pub(crate) fn now(&self) -> VTime {
        self.now
    }

    /// Requests in the engine.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.reqs.len()
    }

    /// When the next stage step completes, if any stage is busy.
    pub(crate) fn next_event(&self) -> Option<VTime> {
        let ready = self.pending.iter().map(|(t, _)| *t).min();
        [self.thinker.busy, self.talker.busy, self.codec_busy, ready]
            .into_iter()
            .flatten()
            .min()
    }

    /// Queues a request at virtual time `at` (clamped to the engine's clock).
    pub(crate) fn submit(&mut self, at: VTime, mut job: OmniJob, out: &mut Vec<OmniEmission>) {
        self.advance(at, out);
        self.now = self.now.max(at);
        job.text_tokens = job.text_tokens.max(1);
        let id = job.id;
        let ready = self.now + secs(job.preprocess_s * self.cfg.slowdown);
        tracing::trace!(
            id,
            at_ms = ms(self.now),
            ready_ms = ms(ready),
            prefill_ms = job.prefill_s * 1e3,
            text_tokens = job.text_tokens,
            audio_frames = job.audio_frames,
            "omni arrival"
        );
        self.reqs.insert(
            id,
            ReqState {
                job,
                text: 0,
                thinker_done: false,
                talker_queued: false,
                frames: 0,
                frames_chunked: 0,
            },
        );
        self.pending.push((ready, id));
        self.release(self.now);
        self.kick();
    }

    /// Moves requests whose pre-processing is over into the thinker queue.
    fn release(&mut self, now: VTime) {
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].0 <= now {
                let (_, id) = self.pending.remove(i);
                self.thinker.waiting.push_back(id);
            } else {
                i += 1;
            }
        }
    }

    /// Forgets a request (client gone): it leaves every queue and batch.
    pub(crate) fn cancel(&mut self, id: u64) {
        if self.reqs.remove(&id).is_none() {
            return;
        }
        for s in [&mut self.thinker, &mut self.talker] {
            s.waiting.retain(|x| *x != id);
            s.running.retain(|x| *x != id);
        }
        self.codec_queue.retain(|c| c.id != id);
        self.pending.retain(|(_, x)| *x != id);
    }

    /// Processes every event due at or before `until`, appending the emissions.
    pub(crate) fn advance(&mut self, until: VTime, out: &mut Vec<OmniEmission>) {
        while let Some(t) = self.next_event().filter(|t| *t <= until) {
            self.now = t;
            if self.thinker.busy == Some(t) {
                self.complete_thinker(t, out);
            }
            if self.talker.busy == Some(t) {
                self.complete_talker();
            }
            if self.codec_busy == Some(t) {
                self.complete_codec(t, out);
            }
            self.release(t);
            self.kick();
        }
        self.now = self.now.max(until);
    }

    fn factor(&self, contended: bool, contention: f64) -> f64 {
        let c = if contended && self.cfg.shared_gpu {
            1.0 + contention
        } else {
            1.0
        };
        c * self.cfg.slowdown
    }

    fn kick(&mut self) {
        let now = self.now;
        if self.thinker.busy.is_none() {
            self.start_thinker(now);
        }
        if self.talker.busy.is_none() {
            self.start_talker(now);
        }
        if self.codec_busy.is_none() {
            self.start_codec(now);
        }
        // A thinker step may now be contended by a talker that just started, and the
        // other way round; the factor is decided when each step starts.
    }

    fn start_thinker(&mut self, now: VTime) {
        let p = &self.cfg.thinker;
        let mut prefill = 0.0;
        let first_new = self.thinker.running.len();
        while self.thinker.running.len() < p.max_num_seqs.max(1) {
            let Some(id) = self.thinker.waiting.pop_front() else {
                break;
            };
            prefill += self.reqs.get(&id).map_or(0.0, |r| r.job.prefill_s);
            self.thinker.running.push(id);
        }
        if self.thinker.running.is_empty() {
            return;
        }
        let n = self.thinker.running.len() as f64;
        let busy_other = self.talker.busy.is_some() || self.codec_busy.is_some();
        let cost = (p.step_base_s + p.step_per_seq_s * n + prefill)
            * self.factor(busy_other, p.contention);
        let d = secs(cost).max(1);
        tracing::trace!(
            at_ms = ms(now),
            dur_ms = ms(d),
            batch = self.thinker.running.len(),
            admitted = ?&self.thinker.running[first_new..],
            contended = busy_other,
            "thinker step"
        );
        self.thinker.busy = Some(now + d);
        self.thinker.busy_ns += d;
        self.thinker.steps += 1;
        self.thinker.members = self.thinker.running.clone();
    }

    fn complete_thinker(&mut self, t: VTime, out: &mut Vec<OmniEmission>) {
        self.thinker.busy = None;
        let members = std::mem::take(&mut self.thinker.members);
        let start_after = self.cfg.talker.start_after_tokens.max(1);
        for id in members {
            let Some(r) = self.reqs.get_mut(&id) else {
                continue;
            };
            r.text += 1;
            let last = r.text >= r.job.text_tokens;
            out.push(OmniEmission {
                id,
                at: t,
                out: OmniOutput::Text {
                    tokens: r.text,
                    last,
                },
            });
            if last {
                r.thinker_done = true;
                self.thinker.running.retain(|x| *x != id);
            }
            let ready = if self.cfg.async_chunk {
                r.thinker_done || r.text >= start_after
            } else {
                r.thinker_done
            };
            if r.job.audio_frames > 0 && ready && !r.talker_queued {
                r.talker_queued = true;
                self.talker.waiting.push_back(id);
            }
            if last && r.job.audio_frames == 0 {
                self.reqs.remove(&id);
            }
        }
    }

    fn start_talker(&mut self, now: VTime) {
        let p = &self.cfg.talker;
        let mut admitted = 0usize;
        while self.talker.running.len() < p.max_num_seqs.max(1) {
            let Some(id) = self.talker.waiting.pop_front() else {
                break;
            };
            admitted += 1;
            self.talker.running.push(id);
        }
        let members: Vec<u64> = self
            .talker
            .running
            .iter()
            .copied()
            .filter(|id| {
                self.reqs
                    .get(id)
                    .is_some_and(|r| r.frames < r.frames_available())
            })
            .collect();
        if members.is_empty() && admitted == 0 {
            return;
        }
        let cost = (p.step_base_s
            + p.step_per_seq_s * members.len() as f64
            + p.prefill_s * admitted as f64)
            * self.factor(self.thinker.busy.is_some(), p.contention);
        let d = secs(cost).max(1);
        tracing::trace!(
            at_ms = ms(now),
            dur_ms = ms(d),
            active = members.len(),
            admitted,
            contended = self.thinker.busy.is_some(),
            "talker step"
        );
        self.talker.busy = Some(now + d);
        self.talker.busy_ns += d;
        self.talker.steps += 1;
        self.talker.members = members;
    }

    fn complete_talker(&mut self) {
        self.talker.busy = None;
        let members = std::mem::take(&mut self.talker.members);
        let chunk = self.cfg.code2wav.chunk_frames.max(1);
        for id in members {
            let Some(r) = self.reqs.get_mut(&id) else {
                continue;
            };
            r.frames += 1;
            let done = r.frames >= r.job.audio_frames;
            if done {
                self.talker.running.retain(|x| *x != id);
            }
            let step = if self.cfg.async_chunk {
                chunk
            } else {
                r.job.audio_frames
            };
            while r.frames - r.frames_chunked >= step || (done && r.frames > r.frames_chunked) {
                let n = (r.frames - r.frames_chunked).min(step);
                let last = done && r.frames_chunked + n == r.frames;
                self.codec_queue.push_back(Chunk {
                    id,
                    start: r.frames_chunked,
                    frames: n,
                    last,
                });
                r.frames_chunked += n;
            }
        }
    }

    fn start_codec(&mut self, now: VTime) {
        let p = &self.cfg.code2wav;
        let mut batch: Vec<Chunk> = Vec::new();
        let mut rest = VecDeque::new();
        while let Some(c) = self.codec_queue.pop_front() {
            if batch.len() < p.max_num_seqs.max(1) && !batch.iter().any(|b| b.id == c.id) {
                batch.push(c);
            } else {
                rest.push_back(c);
            }
        }
        self.codec_queue = rest;
        if batch.is_empty() {
            return;
        }
        let frames: u64 = batch
            .iter()
            .map(|c| {
                let ctx = if c.start > 0 {
                    p.left_context_frames.min(c.start)
                } else {
                    0
                };
                u64::from(c.frames + ctx)
            })
            .sum();
        let cost = (p.step_base_s + p.per_frame_s * frames as f64) * self.cfg.slowdown;
        let d = secs(cost).max(1);
        tracing::trace!(
            at_ms = ms(now),
            dur_ms = ms(d),
            chunks = batch.len(),
            frames,
            ids = ?batch.iter().map(|c| c.id).collect::<Vec<_>>(),
            "code2wav step"
        );
        self.codec_busy = Some(now + d);
        self.codec_busy_ns += d;
        self.codec_steps += 1;
        self.codec_batch = batch;
    }

    fn complete_codec(&mut self, t: VTime, out: &mut Vec<OmniEmission>) {
        self.codec_busy = None;
        for c in std::mem::take(&mut self.codec_batch) {
            if !self.reqs.contains_key(&c.id) {
                continue;
            }
            out.push(OmniEmission {
                id: c.id,
                at: t,
                out: OmniOutput::Audio {
                    start_frame: c.start,
                    frames: c.frames,
                    last: c.last,
                },
            });
            if c.last {
                self.reqs.remove(&c.id);
            }
        }
    }

    /// Queue and occupancy figures.
    pub(crate) fn snapshot(&self) -> OmniSnapshot {
        OmniSnapshot {
            now_s: self.now as f64 / 1e9,
            thinker_waiting: self.thinker.waiting.len(),
            thinker_running: self.thinker.running.len(),
            thinker_steps: self.thinker.steps,
            thinker_busy_s: self.thinker.busy_ns as f64 / 1e9,
            talker_waiting: self.talker.waiting.len(),
            talker_running: self.talker.running.len(),
            talker_steps: self.talker.steps,
            talker_busy_s: self.talker.busy_ns as f64 / 1e9,
            code2wav_queued_chunks: self.codec_queue.len(),
            code2wav_steps: self.codec_steps,
            code2wav_busy_s: self.codec_busy_ns as f64 / 1e9,
        }
    }
}

/// Virtual nanoseconds as milliseconds, for the step trace.
fn ms(v: VTime) -> f64 {
    v as f64 / 1e6
}

impl Model for OmniEngine {
    type Job = OmniJob;
    type Emission = OmniEmission;
    /// Whether the job wants audio (its text alone does not finish it then).
    type Route = bool;
    type Snapshot = OmniSnapshot;

    fn route(job: &mut OmniJob, id: u64) -> bool {
        job.id = id;
        job.audio_frames > 0
    }
    fn due(e: &OmniEmission) -> (u64, VTime) {
        (e.id, e.at)
    }
    fn finishes(e: &OmniEmission, wants_audio: &bool) -> bool {
        e.finishes(*wants_audio)
    }
    fn now(&self) -> VTime {
        OmniEngine::now(self)
    }
    fn next_event(&self) -> Option<VTime> {
        OmniEngine::next_event(self)
    }
    fn submit(&mut self, at: VTime, job: OmniJob, out: &mut Vec<OmniEmission>) {
        OmniEngine::submit(self, at, job, out);
    }
    fn cancel(&mut self, id: u64) {
        OmniEngine::cancel(self, id);
    }
    fn advance(&mut self, until: VTime, out: &mut Vec<OmniEmission>) {
        OmniEngine::advance(self, until, out);
    }
    fn snapshot(&self) -> OmniSnapshot {
        OmniEngine::snapshot(self)
    }
}
