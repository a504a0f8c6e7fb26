//! Stage 1: code2wav. Up to `max_num_seqs` requests are resident (admitted oldest first
//! once they have a chunk; a request stays resident until its last chunk is decoded, as
//! in vLLM's running set); each step decodes at most `decode_batch` chunks, one per
//! resident request (a request's chunks decode in order), picked either oldest request
//! first or, with `chunk_fifo`, in the order the chunks entered the queue.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::{Chunk, CodecParams, Emission, EngineSnapshot, VTime, secs};

#[derive(Debug)]
pub(super) struct Codec {
    p: CodecParams,
    slowdown: f64,
    /// Chunks not yet decoded with their enqueue number, per request; request ids grow
    /// with arrival, so key order is age order (vLLM schedules first come, first served).
    pending: BTreeMap<u64, VecDeque<(u64, Chunk)>>,
    /// Enqueue counter: a chunk's place in the code2wav input queue.
    next_seq: u64,
    queued: usize,
    resident: BTreeSet<u64>,
    batch: Vec<Chunk>,
    busy_until: Option<VTime>,
    steps: u64,
    busy: VTime,
}

impl Codec {
    pub(super) fn new(p: CodecParams, slowdown: f64) -> Self {
        Codec {
            p,
            slowdown,
            pending: BTreeMap::new(),
            next_seq: 0,
            queued: 0,
            resident: BTreeSet::new(),
            batch: Vec::new(),
            busy_until: None,
            steps: 0,
            busy: 0,
        }
    }

    pub(super) fn busy_until(&self) -> Option<VTime> {
        self.busy_until
    }

    pub(super) fn enqueue(&mut self, chunks: Vec<Chunk>) {
        self.queued += chunks.len();
        for ch in chunks {
            self.next_seq += 1;
            let seq = self.next_seq;
            self.pending.entry(ch.id).or_default().push_back((seq, ch));
        }
    }

    pub(super) fn cancel(&mut self, id: u64) {
        if let Some(q) = self.pending.remove(&id) {
            self.queued -= q.len();
        }
        self.resident.remove(&id);
        self.batch.retain(|c| c.id != id);
    }

    /// Frames the decoder processes for `ch`: its own, the reference context, and the
    /// left context it re-decodes for continuity.
    fn work_frames(&self, ch: &Chunk) -> u32 {
        ch.frames + ch.ref_context_frames + ch.start_frame.min(self.p.left_context_frames)
    }

    /// Admits waiting requests (oldest first) into free resident slots.
    fn admit(&mut self) {
        let slots = self.p.max_num_seqs.max(1);
        if self.resident.len() >= slots {
            return;
        }
        let waiting: Vec<u64> = self
            .pending
            .keys()
            .filter(|id| !self.resident.contains(id))
            .take(slots - self.resident.len())
            .copied()
            .collect();
        self.resident.extend(waiting);
    }

    pub(super) fn start_if_idle(&mut self, now: VTime) {
        if self.busy_until.is_some() || self.pending.is_empty() {
            return;
        }
        self.admit();
        let limit = self.p.decode_batch.max(1);
        let mut ready: Vec<(u64, u64)> = self
            .resident
            .iter()
            .filter_map(|id| Some((self.pending.get(id)?.front()?.0, *id)))
            .collect();
        if self.p.chunk_fifo {
            ready.sort_unstable();
        }
        let ids: Vec<u64> = ready.into_iter().take(limit).map(|(_, id)| id).collect();
        if ids.is_empty() {
            return;
        }
        let mut frames = 0u64;
        for id in ids {
            let q = self.pending.get_mut(&id).expect("filtered on pending");
            let (_, ch) = q.pop_front().expect("pending queues are never empty");
            if q.is_empty() {
                self.pending.remove(&id);
            }
            frames += u64::from(self.work_frames(&ch));
            self.batch.push(ch);
        }
        self.queued -= self.batch.len();
        let n = self.batch.len() as f64;
        // Batched decode shares the fixed cost and uses the GPU better: frame work of n
        // chunks costs (1 + efficiency × (n − 1)) / n of the serial work.
        let share = (1.0 + self.p.batch_efficiency * (n - 1.0)) / n;
        let cost = self.p.step_base_s
            + self.p.step_per_extra_chunk_s * (n - 1.0)
            + self.p.per_frame_s * frames as f64 * share;
        let dur = secs(cost * self.slowdown).max(1);
        self.busy_until = Some(now + dur);
        self.steps += 1;
        self.busy += dur;
    }

    pub(super) fn complete(&mut self, t: VTime) -> Vec<Emission> {
        debug_assert_eq!(self.busy_until, Some(t));
        self.busy_until = None;
        let mut out = Vec::with_capacity(self.batch.len());
        for ch in self.batch.drain(..) {
            if ch.last {
                self.resident.remove(&ch.id);
            }
            out.push(Emission {
                id: ch.id,
                at: t,
                chunk_index: ch.index,
                start_frame: ch.start_frame,
                frames: ch.frames,
                last: ch.last,
            });
        }
        out
    }

    pub(super) fn fill_snapshot(&self, s: &mut EngineSnapshot) {
        s.codec_queued_chunks = self.queued;
        s.codec_resident = self.resident.len();
        s.codec_steps = self.steps;
        s.codec_busy_s = self.busy as f64 / 1e9;
    }
}
