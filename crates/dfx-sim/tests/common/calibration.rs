//! Calibration against the H20 table of `docs/simulator.md` ("Calibration"): a
//! closed-loop sweep (c = 1, 4, 8, 32; 20 prompts) measured with a streaming client, times
//! scaled back by the speed factor.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::client::{self, PROMPTS};

/// One row of the table: medians over the prompts of a sweep point.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Point {
    pub concurrency: usize,
    pub median_rtf: f64,
    pub median_ttfp_ms: f64,
    /// Median end-to-end latency, simulated milliseconds.
    pub median_e2el_ms: f64,
    /// Audio seconds per wall second (simulated time).
    pub audio_throughput: f64,
    pub failures: usize,
}

/// The task of a calibration row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Task {
    VoiceClone,
    VoiceDesign,
}

impl Task {
    pub(crate) fn model(self) -> &'static str {
        match self {
            Task::VoiceClone => "Qwen/Qwen3-TTS-12Hz-1.7B-Base",
            Task::VoiceDesign => "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice",
        }
    }

    /// The H20 targets of `docs/simulator.md` ("Calibration"): (concurrency, RTF, TTFP ms).
    pub(crate) fn targets(self) -> [(usize, f64, f64); 4] {
        match self {
            Task::VoiceClone => [
                (1, 0.15, 165.0),
                (4, 0.28, 412.0),
                (8, 0.49, 1701.0),
                (32, 0.77, 3772.0),
            ],
            Task::VoiceDesign => [
                (1, 0.083, 53.0),
                (4, 0.113, 154.0),
                (8, 0.21, 872.0),
                (32, 0.378, 1989.0),
            ],
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Task::VoiceClone => "voice_clone / 1.7B-Base",
            Task::VoiceDesign => "voice_design / 1.7B-CustomVoice",
        }
    }

    pub(crate) fn body(self, text: &str, ref_audio: &str) -> Value {
        match self {
            Task::VoiceClone => client::voice_clone_body(self.model(), text, ref_audio),
            Task::VoiceDesign => client::voice_design_body(self.model(), text),
        }
    }
}

/// Median (0 for none).
pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One request of a measured sweep point.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    /// Index into [`PROMPTS`].
    pub prompt: usize,
    /// When the client sent it, since the point started (wall clock).
    pub at: Duration,
    pub measured: client::Measured,
}

/// The requests of one measured closed-loop sweep point.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub concurrency: usize,
    pub speed: f64,
    /// In completion order per worker.
    pub requests: Vec<Sent>,
    /// First send to last completion.
    pub wall: Duration,
}

impl Run {
    fn ok(&self) -> impl Iterator<Item = &client::Measured> {
        self.requests
            .iter()
            .map(|r| &r.measured)
            .filter(|m| m.status == 200 && m.error.is_none())
    }

    /// Medians over the successful requests, times scaled back to simulated time.
    pub(crate) fn point(&self) -> Point {
        let speed = self.speed;
        let mut rtf: Vec<f64> = self
            .ok()
            .map(|m| m.e2el.as_secs_f64() * speed / m.audio_secs(24_000))
            .collect();
        let mut ttfp: Vec<f64> = self
            .ok()
            .filter_map(|m| m.ttfp)
            .map(|t| t.as_secs_f64() * 1000.0 * speed)
            .collect();
        let mut e2el: Vec<f64> = self
            .ok()
            .map(|m| m.e2el.as_secs_f64() * 1000.0 * speed)
            .collect();
        let audio: f64 = self.ok().map(|m| m.audio_secs(24_000)).sum();
        Point {
            concurrency: self.concurrency,
            median_rtf: median(&mut rtf),
            median_ttfp_ms: median(&mut ttfp),
            median_e2el_ms: median(&mut e2el),
            audio_throughput: audio / (self.wall.as_secs_f64() * speed),
            failures: self.requests.len() - self.ok().count(),
        }
    }

    /// What the client saw of each request, by prompt index.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        let mut seen = vec![Seen::default(); PROMPTS.len()];
        for r in &self.requests {
            let sim = |d: Duration| (r.at + d).as_secs_f64() * self.speed;
            seen[r.prompt] = Seen {
                send: sim(Duration::ZERO),
                headers: sim(r.measured.headers_at.unwrap_or_default()),
            };
        }
        seen
    }
}

/// One request as the client saw it: simulated seconds since its sweep point started.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Seen {
    pub send: f64,
    /// Response headers back: the server answers them right after it queued the
    /// request, so it reached the server between `send` and this.
    pub headers: f64,
}

/// Runs one closed-loop sweep point against `base_url` (a simulator at `speed`), keeping
/// every request.
pub(crate) async fn run_point(base_url: &str, task: Task, concurrency: usize, speed: f64) -> Run {
    let url = format!("{base_url}/v1/audio/speech");
    let c = client::client();
    let ref_audio = Arc::new(client::ref_audio_data_url());
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let limit = Duration::from_secs_f64(600.0 / speed + 30.0);
    let start = std::time::Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency.min(PROMPTS.len()) {
        let (c, url, next, ref_audio) = (c.clone(), url.clone(), next.clone(), ref_audio.clone());
        workers.push(tokio::spawn(async move {
            let mut results = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= PROMPTS.len() {
                    return results;
                }
                let body = task.body(PROMPTS[i], &ref_audio);
                let at = start.elapsed();
                let measured = client::post_stream(&c, &url, &body, limit).await;
                results.push(Sent {
                    prompt: i,
                    at,
                    measured,
                });
            }
        }));
    }
    let mut requests = Vec::new();
    for w in workers {
        requests.extend(w.await.expect("worker"));
    }
    Run {
        concurrency,
        speed,
        requests,
        wall: start.elapsed(),
    }
}

/// Relative error of `got` against `want`.
pub(crate) fn rel(got: f64, want: f64) -> f64 {
    got / want - 1.0
}

/// A simulator on its own thread and runtime (2 workers), like a separate process.
pub(crate) struct ServerThread {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerThread {
    pub(crate) fn start(opts: dfx_sim::SimOptions) -> Self {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let h = dfx_sim::spawn(opts).await.expect("start simulator");
                url_tx.send(h.base_url()).expect("send url");
                let _ = stop_rx.await;
                h.shutdown().await.expect("shutdown");
            });
        });
        let url = url_rx.recv().expect("simulator url");
        ServerThread {
            url,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs the sweep for `task` on a fresh simulator at `speed`; returns one point per
/// target concurrency.
pub(crate) fn sweep(task: Task, opts: dfx_sim::SimOptions, concurrency: &[usize]) -> Vec<Point> {
    sweep_runs(task, opts, concurrency)
        .iter()
        .map(Run::point)
        .collect()
}

/// [`sweep`], keeping every request of every point.
pub(crate) fn sweep_runs(task: Task, opts: dfx_sim::SimOptions, concurrency: &[usize]) -> Vec<Run> {
    let speed = opts.speed;
    let server = ServerThread::start(opts);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    concurrency
        .iter()
        .map(|&c| rt.block_on(run_point(&server.url, task, c, speed)))
        .collect()
}

/// A markdown table of `points` against the targets of `task`.
pub(crate) fn table(task: Task, points: &[Point]) -> String {
    let mut s = format!(
        "{}\n| c | RTF (target, error) | TTFP ms (target, error) | audio-s/s | failures |\n|---|---|---|---|---|\n",
        task.name()
    );
    for p in points {
        let t = task.targets().into_iter().find(|t| t.0 == p.concurrency);
        let (r, f) = match t {
            Some((_, r, f)) => (
                format!(" ({r}, {:+.0}%)", rel(p.median_rtf, r) * 100.0),
                format!(" ({f}, {:+.0}%)", rel(p.median_ttfp_ms, f) * 100.0),
            ),
            None => (String::new(), String::new()),
        };
        s.push_str(&format!(
            "| {} | {:.3}{r} | {:.0}{f} | {:.1} | {} |\n",
            p.concurrency, p.median_rtf, p.median_ttfp_ms, p.audio_throughput, p.failures
        ));
    }
    s
}

/// The engine jobs the simulator runs for the 20 prompts of `task` (same bodies as the
/// streaming client sends, resolved by the server's own request validation and plan).
pub(crate) fn server_jobs(task: Task, cfg: &dfx_sim::SimConfig) -> Vec<dfx_sim::engine::Job> {
    let texts: Vec<String> = PROMPTS.iter().map(|s| s.to_string()).collect();
    server_jobs_for(task, cfg, &texts)
}

/// The engine jobs the simulator runs for `texts` (the bodies the streaming client sends,
/// resolved by the server's own request validation and plan).
pub(crate) fn server_jobs_for(
    task: Task,
    cfg: &dfx_sim::SimConfig,
    texts: &[String],
) -> Vec<dfx_sim::engine::Job> {
    let ref_audio = client::ref_audio_data_url();
    texts
        .iter()
        .map(|text| {
            let body = serde_json::to_vec(&task.body(text, &ref_audio)).expect("json");
            dfx_sim::plan::job_for_body(cfg, &body).expect("the server accepts the body")
        })
        .collect()
}
