//! Stage 0: the autoregressive talker with continuous batching.

use std::collections::VecDeque;

use super::{Chunk, Chunking, EngineSnapshot, Job, TalkerParams, VTime, secs};

#[derive(Debug)]
struct Seq {
    job: Job,
    generated: u32,
    sent: u32,
    next_chunk: u32,
}

impl Seq {
    /// Whether generating one more frame closes a chunk.
    fn closes_chunk(&self, chunking: &Chunking) -> bool {
        let generated = self.generated + 1;
        let size = chunking.size(self.next_chunk, self.job.initial_chunk_frames);
        generated - self.sent >= size || generated >= self.job.frames
    }
}

#[derive(Debug)]
pub(super) struct Talker {
    p: TalkerParams,
    chunking: Chunking,
    slowdown: f64,
    contention: f64,
    waiting: VecDeque<Seq>,
    running: Vec<Seq>,
    busy_until: Option<VTime>,
    steps: u64,
    busy: VTime,
}

impl Talker {
    pub(super) fn new(p: TalkerParams, chunking: Chunking, slowdown: f64, contention: f64) -> Self {
        Talker {
            p,
            chunking,
            slowdown,
            contention,
            waiting: VecDeque::new(),
            running: Vec::new(),
            busy_until: None,
            steps: 0,
            busy: 0,
        }
    }

    pub(super) fn busy_until(&self) -> Option<VTime> {
        self.busy_until
    }

    pub(super) fn enqueue(&mut self, job: Job) {
        self.waiting.push_back(Seq {
            job,
            generated: 0,
            sent: 0,
            next_chunk: 0,
        });
    }

    pub(super) fn cancel(&mut self, id: u64) {
        self.waiting.retain(|s| s.job.id != id);
        self.running.retain(|s| s.job.id != id);
    }

    /// Starts a step at `now` if idle and there is work: admits waiting sequences up to
    /// the batch limit (their prefill joins this step) and prices the step.
    pub(super) fn start_if_idle(&mut self, now: VTime, codec_busy: bool) {
        if self.busy_until.is_some() || (self.running.is_empty() && self.waiting.is_empty()) {
            return;
        }
        let (mut largest, mut admitted) = (0.0f64, 0usize);
        while self.running.len() < self.p.max_num_seqs.max(1) {
            let Some(seq) = self.waiting.pop_front() else {
                break;
            };
            largest = largest.max(seq.job.prefill_s);
            admitted += 1;
            self.running.push(seq);
        }
        let prefill = largest + self.p.prefill_per_seq_s * admitted as f64;
        let chunks = if self.p.inline_decode_s > 0.0 {
            self.running
                .iter()
                .filter(|s| s.closes_chunk(&self.chunking))
                .count()
        } else {
            0
        };
        let batch = self.running.len() as f64;
        let cost = self.p.step_base_s
            + self.p.step_per_seq_s * batch
            + prefill
            + self.p.inline_decode_s * chunks as f64;
        let contention = if codec_busy {
            1.0 + self.contention
        } else {
            1.0
        };
        let dur = secs(cost * contention * self.slowdown).max(1);
        self.busy_until = Some(now + dur);
        self.steps += 1;
        self.busy += dur;
    }

    /// Completes the step due at `t`: one frame per running sequence; returns the chunks
    /// closed by it and retires finished sequences.
    pub(super) fn complete(&mut self, t: VTime) -> Vec<Chunk> {
        debug_assert_eq!(self.busy_until, Some(t));
        self.busy_until = None;
        let mut chunks = Vec::new();
        for seq in &mut self.running {
            let closes = seq.closes_chunk(&self.chunking);
            seq.generated += 1;
            if closes {
                chunks.push(Chunk {
                    id: seq.job.id,
                    index: seq.next_chunk,
                    start_frame: seq.sent,
                    frames: seq.generated - seq.sent,
                    ref_context_frames: seq.job.ref_context_frames,
                    last: seq.generated >= seq.job.frames,
                });
                seq.sent = seq.generated;
                seq.next_chunk += 1;
            }
        }
        self.running.retain(|s| s.generated < s.job.frames);
        chunks
    }

    pub(super) fn fill_snapshot(&self, s: &mut EngineSnapshot) {
        s.talker_waiting = self.waiting.len();
        s.talker_running = self.running.len();
        s.talker_steps = self.steps;
        s.talker_busy_s = self.busy as f64 / 1e9;
    }
}
