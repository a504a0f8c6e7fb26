//! TTFA audible, time to first audible audio: TTFP + the leading silence of the audio.
//!
//! Seconds; **lower is better**; only for successes with audio. The leading silence is
//! the audible onset of `crate::audio::onset` (TheTalker's convention: the first 5 ms
//! window at ≥ 5 % of the clip's peak that stays there for 20 ms).
//!
//! Upstream: none; vllm-omni measures only TTFP, which a server streaming silence first
//! makes look better than what a listener hears. dfx-perf's own figure, deliberately.

/// `ttfp_s + leading_silence_s`.
pub(crate) fn ttfa_audible_s(ttfp_s: f64, leading_silence_s: f64) -> f64 {
    ttfp_s + leading_silence_s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttfa_adds_the_leading_silence() {
        assert_eq!(ttfa_audible_s(0.25, 0.5), 0.75);
        assert_eq!(ttfa_audible_s(0.25, 0.0), 0.25);
    }
}
