//! PCM accounting: the response is headerless s16le, so every figure derives from a byte
//! count and a sample rate the caller knows (the response never says it).

/// Bytes per sample (s16le).
pub(crate) const SAMPLE_WIDTH: u32 = 2;

/// Channels of the streamed audio (the TTS servers stream mono).
pub(crate) const CHANNELS: u32 = 1;

/// Whole frames in `bytes` of s16le audio: `floor(bytes / (2 · channels))`. A trailing
/// partial frame (an odd byte count) is not audio yet and is not counted.
pub(crate) fn frames(bytes: u64, channels: u32) -> u64 {
    bytes / (u64::from(SAMPLE_WIDTH) * u64::from(channels.max(1)))
}

/// Seconds of audio in `frames` at `sample_rate` Hz.
pub(crate) fn duration_s(frames: u64, sample_rate: u32) -> f64 {
    if sample_rate == 0 {
        return 0.0;
    }
    frames as f64 / f64::from(sample_rate)
}

/// Real-time factor `e2el / audio_duration`; 0 when there is no audio (upstream rule).
pub(crate) fn rtf(e2el_s: f64, audio_s: f64) -> f64 {
    if audio_s > 0.0 { e2el_s / audio_s } else { 0.0 }
}

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
    fn frames_floor_odd_byte_counts() {
        assert_eq!(frames(0, 1), 0);
        assert_eq!(frames(1, 1), 0);
        assert_eq!(frames(4801, 1), 2400);
        assert_eq!(frames(4803, 2), 1200);
        assert_eq!(duration_s(2400, 24_000), 0.1);
        assert_eq!(duration_s(48_000, 48_000), 1.0);
        // A 48 kHz stream measured at 24 kHz doubles its duration.
        assert_eq!(duration_s(48_000, 24_000), 2.0);
    }

    #[test]
    fn rtf_is_zero_without_audio() {
        assert_eq!(rtf(0.3, 0.0), 0.0);
        assert_eq!(rtf(0.3, 0.5), 0.6);
        assert_eq!(bytes_per_s(24_000, 1), 48_000.0);
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
