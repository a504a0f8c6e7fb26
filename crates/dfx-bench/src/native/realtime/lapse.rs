//! A realtime turn on the real-time scale: what a time-lapsed session observed, mapped
//! back ([`TimeLapse`]).

use std::time::Instant;

use super::session::TurnOutcome;
use crate::native::lapse::TimeLapse;

impl TurnOutcome {
    /// The turn on the real-time scale ([`TimeLapse`]) from `base`: its start, end,
    /// connection time, every response's first text and audio, audio deltas and last audio,
    /// and the server's own TTFT (measured on the sped-up simulator).
    pub(crate) fn lapse(&mut self, k: TimeLapse, base: Instant) {
        if k.is_real_time() {
            return;
        }
        let at = |t: Instant| k.instant(base, t);
        self.started = at(self.started);
        self.end = at(self.end);
        self.turn_start = self.turn_start.map(at);
        self.connect_s = k.to_real_s(self.connect_s);
        self.server_ttft_ms = self.server_ttft_ms.map(|ms| k.to_real_s(ms));
        for r in &mut self.responses {
            r.first_text = r.first_text.map(at);
            r.first_audio = r.first_audio.map(at);
            r.last_audio = r.last_audio.map(at);
            r.deltas.iter_mut().for_each(|d| d.0 = at(d.0));
        }
    }
}
