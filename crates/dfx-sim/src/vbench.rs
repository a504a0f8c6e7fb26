//! A virtual closed-loop bench: drives the [`Engine`] with simulated clients in virtual
//! time (no HTTP, no wall clock), so the model's own answer to a sweep point is exact and
//! instant. Used to fit the profile parameters (`examples/fit.rs`) and to check the model
//! without timing noise.

use crate::engine::drive::{Sends, drive};
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

/// Why [`Load::from_jobs`] refused a set of jobs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    /// No jobs.
    #[error("a load needs at least one job")]
    Empty,
    /// A [`Load`] carries one prefill, one reference context and no per-request first
    /// chunk; the jobs differ there (mixed tasks), so the load would not be exact.
    #[error("job {index} differs from job 0 in {field}; a load replays one task at a time")]
    Mixed {
        /// Position in `jobs` of the first job that differs.
        index: usize,
        /// Which field differs (`prefill_s`, `ref_context_frames`, or a set
        /// `initial_chunk_frames`).
        field: &'static str,
    },
}

impl Load {
    /// The closed-loop load that sends `jobs` (in order, e.g. from
    /// [`crate::plan::job_for_body`], so exactly what the server would run) with
    /// `concurrency` in flight.
    pub fn from_jobs(
        jobs: &[Job],
        concurrency: usize,
        spread_s: f64,
        turnaround_s: f64,
    ) -> Result<Load, LoadError> {
        let first = jobs.first().ok_or(LoadError::Empty)?;
        for (index, j) in jobs.iter().enumerate() {
            let field = if j.prefill_s != first.prefill_s {
                "prefill_s"
            } else if j.ref_context_frames != first.ref_context_frames {
                "ref_context_frames"
            } else if j.initial_chunk_frames.is_some() {
                "initial_chunk_frames (per-request overrides are not replayed)"
            } else {
                continue;
            };
            return Err(LoadError::Mixed { index, field });
        }
        Ok(Load {
            frames: jobs.iter().map(|j| j.frames).collect(),
            concurrency,
            prefill_s: first.prefill_s,
            ref_context_frames: first.ref_context_frames,
            spread_s,
            turnaround_s,
        })
    }
}

/// Per-request results, in send order.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// First chunk's PCM due − send, simulated seconds.
    pub ttfp_s: Vec<f64>,
    /// Last chunk's PCM due − send, simulated seconds.
    pub e2el_s: Vec<f64>,
    /// Audio each request yields: its frames / the codec frame rate, seconds.
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
    /// Median of [`Outcome::ttfp_s`], milliseconds (0 without requests).
    pub fn median_ttfp_ms(&self) -> f64 {
        median(self.ttfp_s.clone()) * 1000.0
    }

    /// Median over requests of E2EL / audio seconds (0 without requests).
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
    let jobs: Vec<Job> = load
        .frames
        .iter()
        .map(|&frames| Job {
            id: 0,
            frames,
            prefill_s: load.prefill_s,
            ref_context_frames: load.ref_context_frames,
            initial_chunk_frames: None,
        })
        .collect();
    let first = (0..load.concurrency.min(jobs.len()))
        .map(|i| (secs(load.spread_s * i as f64), i))
        .collect();
    simulate(cfg, &jobs, first, Some(secs(load.turnaround_s)))
}

/// Open-loop replay: `jobs[i]` is sent at `sends_s[i]` simulated seconds (e.g. the send
/// times a real client recorded, so the model answers for exactly the load it was
/// given). Jobs get their ids in send order, as the server gives them in arrival order.
///
/// # Panics
/// When `sends_s` and `jobs` differ in length.
pub fn replay(cfg: &EngineConfig, jobs: &[Job], sends_s: &[f64]) -> Outcome {
    assert_eq!(jobs.len(), sends_s.len(), "one send time per job");
    let sends = sends_s.iter().enumerate().map(|(i, s)| (secs(*s), i));
    simulate(cfg, jobs, sends.collect(), None)
}

/// Sends `jobs` at the `(time, index)` of `sends`; with `closed_loop`, each completion
/// sends the next unsent job that much later.
fn simulate(
    cfg: &EngineConfig,
    jobs: &[Job],
    sends: Vec<(VTime, usize)>,
    closed_loop: Option<VTime>,
) -> Outcome {
    let n = jobs.len();
    let mut first: Vec<Option<VTime>> = vec![None; n];
    let mut done = vec![0; n];
    let sends = Sends {
        planned: sends,
        closed_loop,
    };
    let sent = drive(
        Engine::new(cfg.clone()),
        jobs,
        sends,
        |i, e: &Emission, last| {
            first[i].get_or_insert(e.at);
            if last {
                done[i] = e.at;
            }
        },
    );
    let ns = |v: VTime| v as f64 / 1e9;
    Outcome {
        ttfp_s: (0..n)
            .map(|i| ns(first[i].unwrap_or(done[i]) - sent[i]))
            .collect(),
        e2el_s: (0..n).map(|i| ns(done[i] - sent[i])).collect(),
        audio_s: jobs
            .iter()
            .map(|j| f64::from(j.frames) / crate::profile::FRAME_RATE_HZ)
            .collect(),
        duration_s: ns(
            done.iter().copied().max().unwrap_or(0) - sent.iter().copied().min().unwrap_or(0)
        ),
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

    #[test]
    fn replay_answers_for_the_given_send_times() {
        let cfg = SimOptions::new("Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice")
            .resolve()
            .unwrap()
            .engine;
        let l = load(20);
        let jobs: Vec<Job> = l
            .frames
            .iter()
            .map(|&frames| Job {
                id: 0,
                frames,
                prefill_s: l.prefill_s,
                ref_context_frames: 0,
                initial_chunk_frames: None,
            })
            .collect();
        let closed = run(&cfg, &l);
        let open = replay(&cfg, &jobs, &[0.0; 20]);
        assert_eq!((open.ttfp_s, open.e2el_s), (closed.ttfp_s, closed.e2el_s));
        // Ids follow send order: a job sent alone, long before the others, is served
        // as if alone whatever its index.
        let alone = run(
            &cfg,
            &Load {
                frames: vec![l.frames[19]],
                ..load(1)
            },
        );
        let mut sends = [100.0; 20];
        sends[19] = 0.0;
        let late_index = replay(&cfg, &jobs, &sends);
        assert_eq!(late_index.ttfp_s[19], alone.ttfp_s[0]);
        assert_eq!(late_index.e2el_s[19], alone.e2el_s[0]);
        assert!((late_index.duration_s - (100.0 + closed.duration_s)).abs() < 1.0);
    }

    #[test]
    fn a_load_from_jobs_keeps_their_parameters_and_refuses_mixed_tasks() {
        let job = |frames, prefill_s, ref_context_frames| Job {
            id: 0,
            frames,
            prefill_s,
            ref_context_frames,
            initial_chunk_frames: None,
        };
        let l = Load::from_jobs(&[job(40, 0.08, 72), job(50, 0.08, 72)], 4, 0.0, 0.001).unwrap();
        assert_eq!(
            (l.frames, l.prefill_s, l.ref_context_frames),
            (vec![40, 50], 0.08, 72)
        );
        let mixed = Load::from_jobs(&[job(40, 0.08, 72), job(50, 0.02, 0)], 4, 0.0, 0.0);
        assert_eq!(
            mixed.unwrap_err(),
            LoadError::Mixed {
                index: 1,
                field: "prefill_s"
            }
        );
        assert_eq!(
            Load::from_jobs(&[], 1, 0.0, 0.0).unwrap_err(),
            LoadError::Empty
        );
    }
}
