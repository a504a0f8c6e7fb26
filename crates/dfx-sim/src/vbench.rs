//! A virtual closed-loop bench: drives the [`Engine`] with simulated clients in virtual
//! time (no HTTP, no wall clock), so the model's own answer to a sweep point is exact and
//! instant. Used to fit the profile parameters (`examples/fit.rs`) and to check the model
//! without timing noise.

use crate::engine::{Emission, Engine, EngineConfig, Job, VTime, secs};

/// One closed-loop sweep point.
#[derive(Debug, Clone)]
pub struct Load {
    /// Frames of each prompt, in send order.
    pub frames: Vec<u32>,
    /// Requests in flight.
    pub concurrency: usize,
    /// Prefill of each request (task-dependent).
    pub prefill_s: f64,
    /// Reference-context frames (voice clone in context) or 0.
    pub ref_context_frames: u32,
    /// The first `concurrency` requests are sent `spread_s` apart (a real client needs a
    /// little time to open them); later ones right after a completion.
    pub spread_s: f64,
    /// Client turnaround between a completion and the next send.
    pub turnaround_s: f64,
}

/// Per-request results, in send order.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub ttfp_s: Vec<f64>,
    pub e2el_s: Vec<f64>,
    pub audio_s: Vec<f64>,
    /// First send to last completion.
    pub duration_s: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

impl Outcome {
    pub fn median_ttfp_ms(&self) -> f64 {
        median(self.ttfp_s.clone()) * 1000.0
    }

    pub fn median_rtf(&self) -> f64 {
        median(
            self.e2el_s
                .iter()
                .zip(&self.audio_s)
                .map(|(e, a)| e / a)
                .collect(),
        )
    }

    /// Audio seconds per second.
    pub fn audio_throughput(&self) -> f64 {
        self.audio_s.iter().sum::<f64>() / self.duration_s.max(1e-9)
    }
}

/// Runs `load` on a fresh engine.
pub fn run(cfg: &EngineConfig, load: &Load) -> Outcome {
    let n = load.frames.len();
    let mut engine = Engine::new(cfg.clone());
    let mut out: Vec<Emission> = Vec::new();
    let mut sends: Vec<(VTime, usize)> = (0..load.concurrency.min(n))
        .map(|i| (secs(load.spread_s * i as f64), i))
        .collect();
    let mut next = sends.len();
    let mut sent = vec![0; n];
    let mut first: Vec<Option<VTime>> = vec![None; n];
    let mut done = vec![0; n];
    let job = |i: usize| Job {
        id: i as u64 + 1,
        frames: load.frames[i],
        prefill_s: load.prefill_s,
        ref_context_frames: load.ref_context_frames,
        initial_chunk_frames: None,
    };
    loop {
        sends.sort();
        let due_send = sends.first().map(|s| s.0);
        let t = match (engine.next_event(), due_send) {
            (None, None) => break,
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).expect("one is some"),
        };
        if due_send == Some(t) {
            let (at, i) = sends.remove(0);
            sent[i] = at;
            engine.submit(at, job(i), &mut out);
        } else {
            engine.advance(t, &mut out);
        }
        for e in out.drain(..) {
            let i = e.id as usize - 1;
            first[i].get_or_insert(e.at);
            if e.last {
                done[i] = e.at;
                if next < n {
                    sends.push((e.at + secs(load.turnaround_s), next));
                    next += 1;
                }
            }
        }
    }
    let ns = |v: VTime| v as f64 / 1e9;
    Outcome {
        ttfp_s: (0..n)
            .map(|i| ns(first[i].unwrap_or(done[i]) - sent[i]))
            .collect(),
        e2el_s: (0..n).map(|i| ns(done[i] - sent[i])).collect(),
        audio_s: load
            .frames
            .iter()
            .map(|f| f64::from(*f) / crate::profile::FRAME_RATE_HZ)
            .collect(),
        duration_s: ns(done.iter().copied().max().unwrap_or(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::SimOptions;

    fn load(c: usize) -> Load {
        Load {
            frames: (0..20).map(|i| 40 + 5 * i).collect(),
            concurrency: c,
            prefill_s: 0.02,
            ref_context_frames: 0,
            spread_s: 0.0,
            turnaround_s: 0.001,
        }
    }

    #[test]
    fn latency_grows_with_concurrency_and_throughput_saturates() {
        let cfg = SimOptions::new("Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice")
            .resolve()
            .unwrap()
            .engine;
        let o1 = run(&cfg, &load(1));
        let o8 = run(&cfg, &load(8));
        let o20 = run(&cfg, &load(20));
        assert!(o1.median_ttfp_ms() < o8.median_ttfp_ms());
        assert!(o8.median_ttfp_ms() < o20.median_ttfp_ms());
        assert!(o1.median_rtf() < o8.median_rtf());
        assert!(o8.audio_throughput() > 2.0 * o1.audio_throughput());
        assert!(
            o20.audio_throughput() < 1.3 * o8.audio_throughput(),
            "saturates"
        );
        assert_eq!(o1.e2el_s.len(), 20);
    }
}
