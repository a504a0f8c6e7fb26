//! Audio accounting for streamed raw PCM (s16le): frames and duration at a per-model
//! sample rate ([`pcm`]), playback continuity as vllm-omni computes it ([`continuity`]),
//! and the audible onset / PCM sanity figures ([`onset`]).

mod block;
pub(crate) mod continuity;
pub(crate) mod onset;
pub(crate) mod pcm;
