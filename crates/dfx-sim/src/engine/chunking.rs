//! How a request's codec frames are cut into chunks (`initial_codec_chunk_frames`,
//! `codec_chunk_frames`, `codec_chunk_ramp`, `async_chunk`).

/// Chunk sizing, validated (every size ≥ 1).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Chunking {
    /// Frames of the first chunk (`initial_codec_chunk_frames`).
    pub initial_frames: u32,
    /// Frames of every later chunk (`codec_chunk_frames`).
    pub chunk_frames: u32,
    /// Explicit sizes of the first chunks (`codec_chunk_ramp`); when non-empty it wins
    /// over `initial_frames`, including the per-request override.
    pub ramp: Vec<u32>,
    /// `async_chunk: false` turns streaming off: one chunk once the talker is done.
    pub async_chunk: bool,
}

impl Default for Chunking {
    fn default() -> Self {
        Chunking {
            initial_frames: 1,
            chunk_frames: 25,
            ramp: Vec::new(),
            async_chunk: true,
        }
    }
}

impl Chunking {
    /// Size of chunk `index` (0-based) for a request with an optional per-request initial
    /// chunk override. `u32::MAX` means "everything" (no streaming).
    pub fn size(&self, index: u32, initial_override: Option<u32>) -> u32 {
        if !self.async_chunk {
            return u32::MAX;
        }
        if let Some(&r) = self.ramp.get(index as usize) {
            return r;
        }
        if !self.ramp.is_empty() {
            return self.chunk_frames;
        }
        if index == 0 {
            return initial_override.unwrap_or(self.initial_frames);
        }
        self.chunk_frames
    }

    /// The complete chunk plan (frame counts) of a `frames`-long utterance.
    pub fn plan(&self, frames: u32, initial_override: Option<u32>) -> Vec<u32> {
        let mut plan = Vec::new();
        let mut done = 0u32;
        while done < frames {
            let size = self.size(plan.len() as u32, initial_override).max(1);
            let take = size.min(frames - done);
            plan.push(take);
            done += take;
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_plan_is_one_then_25s() {
        let c = Chunking::default();
        assert_eq!(c.plan(69, None), vec![1, 25, 25, 18]);
        assert_eq!(c.plan(1, None), vec![1]);
        assert_eq!(c.plan(69, Some(16)), vec![16, 25, 25, 3]);
    }

    #[test]
    fn ramp_wins_over_initial_and_falls_back_to_chunk() {
        let c = Chunking {
            ramp: vec![4, 4, 8, 16, 25],
            ..Chunking::default()
        };
        assert_eq!(c.plan(100, Some(1)), vec![4, 4, 8, 16, 25, 25, 18]);
    }

    #[test]
    fn no_async_chunk_is_one_chunk() {
        let c = Chunking {
            async_chunk: false,
            ..Chunking::default()
        };
        assert_eq!(c.plan(300, None), vec![300]);
    }
}
