//! PCM layout: the response is headerless s16le, so every figure derives from a byte
//! count and a sample rate the caller knows (the response never says it); the figures
//! themselves (frames, duration, RTF) are `crate::metrics`.

/// Bytes per sample (s16le).
pub(crate) const SAMPLE_WIDTH: u32 = 2;

/// Channels of the streamed audio (the TTS servers stream mono).
pub(crate) const CHANNELS: u32 = 1;

/// Playback byte rate of the stream: `rate · 2 · channels`.
pub(crate) fn bytes_per_s(sample_rate: u32, channels: u32) -> f64 {
    f64::from(sample_rate) * f64::from(SAMPLE_WIDTH) * f64::from(channels.max(1))
}

/// What the first bytes of a body say about its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniff {
    /// Not a known container/event-stream prefix: treated as raw PCM.
    RawPcm,
    /// A WAV file (`RIFF`) or a server-sent-events stream (`event:` / `data:`): not raw
    /// PCM, its byte count would overstate the audio.
    NotPcm(&'static str),
    /// Too few bytes to decide yet.
    NeedMore,
}

const PREFIXES: [(&[u8], &str); 3] = [
    (b"RIFF", "a WAV (RIFF) body"),
    (b"event:", "a server-sent-events body (event:)"),
    (b"data:", "a server-sent-events body (data:)"),
];

/// Longest prefix [`sniff`] needs.
pub(crate) const SNIFF_LEN: usize = 6;

/// Classifies a body from its first bytes. `complete` says the body ended, so a short
/// prefix is final.
pub(crate) fn sniff(prefix: &[u8], complete: bool) -> Sniff {
    let mut undecided = false;
    for (magic, what) in PREFIXES {
        let n = prefix.len().min(magic.len());
        if prefix[..n] == magic[..n] {
            if n == magic.len() {
                return Sniff::NotPcm(what);
            }
            undecided = true;
        }
    }
    if undecided && !complete && !prefix.is_empty() {
        Sniff::NeedMore
    } else {
        Sniff::RawPcm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_rate_of_the_stream() {
        assert_eq!(bytes_per_s(24_000, 1), 48_000.0);
        assert_eq!(bytes_per_s(48_000, 2), 192_000.0);
    }

    #[test]
    fn sniff_rejects_wav_and_sse() {
        assert_eq!(
            sniff(b"RIFF\x24\x00", false),
            Sniff::NotPcm("a WAV (RIFF) body")
        );
        assert!(matches!(sniff(b"event: audio", false), Sniff::NotPcm(_)));
        assert!(matches!(sniff(b"data: {}", false), Sniff::NotPcm(_)));
        assert_eq!(sniff(b"da", false), Sniff::NeedMore);
        assert_eq!(sniff(b"da", true), Sniff::RawPcm);
        assert_eq!(sniff(b"\x00\x01", false), Sniff::RawPcm);
        assert_eq!(sniff(b"", false), Sniff::RawPcm);
    }
}
