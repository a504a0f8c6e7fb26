//! Audio accounting for streamed raw PCM (s16le): the sample layout, byte rate and body
//! sniffing ([`pcm`]), and the audible onset / PCM sanity figures ([`onset`]). The
//! metrics derived from them (duration, RTF, continuity) are `crate::metrics`.

mod block;
pub(crate) mod onset;
pub(crate) mod pcm;
