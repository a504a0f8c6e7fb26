//! Audio duration: seconds of audio a response carried, frames / sample rate.
//!
//! Seconds (realtime and duplex turns: milliseconds); neither direction is better (it is
//! the denominator of RTF and the numerator of `audio_throughput`). Per protocol:
//! - speech: whole s16le frames of the raw PCM body, `floor(bytes / (2 · channels))`,
//!   over the sample rate dfx-perf knows (the body never says it) ([`frames`],
//!   [`duration_s`]);
//! - chat-omni: Σ WAV frames over the first chunk's rate ([`duration_s`]);
//! - realtime and duplex turns: the server's largest cumulative
//!   `metadata.audio_duration_ms`, else the decoded PCM16 mono bytes at the delta's rate
//!   ([`reported_or_pcm_ms`]); a realtime request's duration is the sum over its turns
//!   and its frames `int(duration × 24000)` whatever the rate ([`frames_at`]).
//!
//! Upstream: `vllm_omni/benchmarks/patch/patch.py`, `async_request_openai_audio_speech`
//! (`total_samples = total_pcm_bytes // (sample_width * channels)`, `audio_duration =
//! total_samples / sample_rate`, with the rate fixed at 24 kHz there: dfx-perf uses the
//! model's rate, deliberately) and `async_request_openai_chat_omni_completions`;
//! `RealtimeEventCollector.timing_summary` for duplex turns.

use crate::audio::pcm::SAMPLE_WIDTH;

/// Whole frames in `bytes` of s16le audio: `floor(bytes / (2 · channels))`. A trailing
/// partial frame (an odd byte count) is not audio yet and is not counted.
pub(crate) fn frames(bytes: u64, channels: u32) -> u64 {
    bytes / (u64::from(SAMPLE_WIDTH) * u64::from(channels.max(1)))
}

/// Seconds of audio in `frames` at `sample_rate` Hz (0 for a zero rate).
pub(crate) fn duration_s(frames: u64, sample_rate: u32) -> f64 {
    if sample_rate == 0 {
        return 0.0;
    }
    frames as f64 / f64::from(sample_rate)
}

/// A realtime or duplex response's duration in ms: the server's `reported_ms` when
/// given, else `bytes` of PCM16 mono at `rate` Hz.
pub(crate) fn reported_or_pcm_ms(reported_ms: Option<f64>, bytes: u64, rate: u32) -> f64 {
    reported_ms.unwrap_or_else(|| bytes as f64 * 1000.0 / (f64::from(rate.max(1)) * 2.0))
}

/// Upstream's frame count of a duration: `int(duration_s × rate)`.
pub(crate) fn frames_at(duration_s: f64, rate: f64) -> u64 {
    (duration_s * rate) as u64
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
        assert_eq!(duration_s(10, 0), 0.0);
        // A 48 kHz stream measured at 24 kHz doubles its duration.
        assert_eq!(duration_s(48_000, 24_000), 2.0);
    }

    #[test]
    fn turn_duration_prefers_the_servers_figure() {
        // 9600 bytes of PCM16 mono at 24 kHz: 4800 samples = 200 ms.
        assert_eq!(reported_or_pcm_ms(None, 9600, 24_000), 200.0);
        assert_eq!(reported_or_pcm_ms(Some(180.0), 9600, 24_000), 180.0);
        // 6006 bytes at 48 kHz are exactly 62.5625 ms (the realtime path's old
        // bytes / (rate · 2) · 1000 gave 62.56249999999999, which rounds to 62.562).
        assert_eq!(reported_or_pcm_ms(None, 6006, 48_000), 62.5625);
        assert_eq!(frames_at(1.5, 24_000.0), 36_000);
        assert_eq!(frames_at(0.99999, 1.0), 0);
    }
}
