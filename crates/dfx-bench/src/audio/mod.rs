//! Audio accounting for streamed raw PCM (s16le): frames and duration at a per-model
//! sample rate ([`pcm`]), playback continuity as vllm-omni computes it ([`continuity`]),
//! and the audible onset / PCM sanity figures ([`onset`]).

pub mod continuity;
pub mod onset;
pub mod pcm;
