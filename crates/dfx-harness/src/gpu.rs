//! GPU samples beside a local server: while a trial's bench runs against a server the suite
//! started, `nvidia-smi` is queried every [`INTERVAL`] for the memory used and the
//! utilisation of each GPU the server may use. Every sample goes to `gpu_samples.jsonl` in
//! the trial folder as it is taken (seconds since the bench started, and the wall clock, so
//! it lines up with the request timeline); the result gets the summary per GPU and over the
//! server's GPUs (`peak_memory_mb`, `gpu_mean_memory_mb`, `gpu_mean_utilization_pct`,
//! `gpus`). Without `nvidia-smi` there is no sampler and no such key.
//!
//! One short-lived `nvidia-smi` per sample (killed after [`QUERY_TIMEOUT`]) rather than a
//! long-running `nvidia-smi -lms`: nothing outlives the suite when it is killed, and a hung
//! driver costs one sample, not the trial.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use dfx_core::result::ResultDoc;
use serde_json::{Value, json};

/// Time between two samples.
pub(crate) const INTERVAL: Duration = Duration::from_millis(500);

/// How long one `nvidia-smi` query may take.
pub(crate) const QUERY_TIMEOUT: Duration = Duration::from_secs(2);

/// The samples file in the trial folder.
pub(crate) const SAMPLES_FILE: &str = "gpu_samples.jsonl";

/// What one query says about one GPU.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    /// `nvidia-smi`'s index of the GPU.
    pub gpu: String,
    /// Memory used, MiB.
    pub memory_used_mb: f64,
    /// Utilisation, percent; `None` when the GPU does not report it.
    pub utilization_pct: Option<f64>,
}

/// Parses the CSV lines of `--query-gpu=index,memory.used,utilization.gpu
/// --format=csv,noheader,nounits`. A line without a numeric memory figure is left out.
pub(crate) fn parse_readings(out: &str) -> Vec<Reading> {
    out.lines()
        .filter_map(|line| {
            let mut cols = line.split(',').map(str::trim);
            let gpu = cols.next().filter(|g| !g.is_empty())?.to_string();
            let memory_used_mb = cols.next()?.parse::<f64>().ok().filter(|m| m.is_finite())?;
            let utilization_pct = cols
                .next()
                .and_then(|u| u.parse::<f64>().ok())
                .filter(|u| u.is_finite());
            Some(Reading {
                gpu,
                memory_used_mb,
                utilization_pct,
            })
        })
        .collect()
}

/// The running figures of one GPU.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct GpuStats {
    /// `nvidia-smi`'s index.
    pub gpu: String,
    /// Samples taken.
    pub samples: u64,
    /// Largest memory used, MiB.
    pub peak_memory_mb: f64,
    memory_sum: f64,
    util_sum: f64,
    util_samples: u64,
}

impl GpuStats {
    fn add(&mut self, r: &Reading) {
        self.samples += 1;
        self.peak_memory_mb = self.peak_memory_mb.max(r.memory_used_mb);
        self.memory_sum += r.memory_used_mb;
        if let Some(u) = r.utilization_pct {
            self.util_sum += u;
            self.util_samples += 1;
        }
    }

    /// Mean memory used, MiB.
    pub(crate) fn mean_memory_mb(&self) -> f64 {
        self.memory_sum / self.samples.max(1) as f64
    }

    /// Mean utilisation, percent, when the GPU reported it.
    pub(crate) fn mean_utilization_pct(&self) -> Option<f64> {
        (self.util_samples > 0).then(|| self.util_sum / self.util_samples as f64)
    }
}

/// What a trial's sampling found.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct GpuSummary {
    /// Per GPU, in the order `nvidia-smi` first listed them.
    pub gpus: Vec<GpuStats>,
    /// Queries that failed or timed out.
    pub failed_queries: u64,
    /// The bench's start on the wall clock (the samples' `t_s` origin), Unix seconds.
    pub origin_unix_s: f64,
}

impl GpuSummary {
    fn add(&mut self, readings: &[Reading]) {
        for r in readings {
            match self.gpus.iter_mut().find(|g| g.gpu == r.gpu) {
                Some(g) => g.add(r),
                None => {
                    let mut g = GpuStats {
                        gpu: r.gpu.clone(),
                        ..GpuStats::default()
                    };
                    g.add(r);
                    self.gpus.push(g);
                }
            }
        }
    }

    /// Adds the summary to a result document; nothing when no sample was taken.
    pub(crate) fn insert_into(&self, doc: &mut ResultDoc) {
        let sampled: Vec<&GpuStats> = self.gpus.iter().filter(|g| g.samples > 0).collect();
        if sampled.is_empty() {
            doc.insert(
                "gpu_samples_note".into(),
                Value::from(format!(
                    "nvidia-smi answered none of {} queries",
                    self.failed_queries
                )),
            );
            return;
        }
        let n = sampled.len() as f64;
        let peak = sampled.iter().map(|g| g.peak_memory_mb).fold(0.0, f64::max);
        let mean_mem = sampled.iter().map(|g| g.mean_memory_mb()).sum::<f64>() / n;
        let utils: Vec<f64> = sampled
            .iter()
            .filter_map(|g| g.mean_utilization_pct())
            .collect();
        doc.insert("peak_memory_mb".into(), json!(peak));
        doc.insert("gpu_mean_memory_mb".into(), json!(mean_mem));
        if !utils.is_empty() {
            let u = utils.iter().sum::<f64>() / utils.len() as f64;
            doc.insert("gpu_mean_utilization_pct".into(), json!(u));
        }
        let per_gpu: Vec<Value> = sampled
            .iter()
            .map(|g| {
                json!({"gpu": g.gpu, "samples": g.samples, "peak_memory_mb": g.peak_memory_mb,
                       "mean_memory_mb": g.mean_memory_mb(),
                       "mean_utilization_pct": g.mean_utilization_pct()})
            })
            .collect();
        doc.insert("gpus".into(), Value::Array(per_gpu));
        doc.insert(
            "gpu_sample_interval_s".into(),
            json!(INTERVAL.as_secs_f64()),
        );
        doc.insert("gpu_samples_file".into(), Value::from(SAMPLES_FILE));
        doc.insert(
            "gpu_samples_origin_unix_s".into(),
            json!(self.origin_unix_s),
        );
        doc.insert("gpu_failed_queries".into(), json!(self.failed_queries));
    }
}

/// The GPUs a server may use: its own `CUDA_VISIBLE_DEVICES`, else the suite's; `None`
/// (all GPUs) when neither is set or the value is not a list of indices or UUIDs.
pub(crate) fn server_devices(server_env: Option<&str>, suite_env: Option<&str>) -> Option<String> {
    let v = server_env.or(suite_env)?.trim();
    let ok = !v.is_empty()
        && v.len() <= 1024
        && v.split(',')
            .all(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    ok.then(|| v.to_string())
}

/// A sampler thread; [`GpuSampler::finish`] stops it and returns the summary.
pub(crate) struct GpuSampler {
    stop: mpsc::Sender<()>,
    handle: JoinHandle<GpuSummary>,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl GpuSampler {
    /// Starts sampling `devices` (all GPUs when `None`) into `dir/gpu_samples.jsonl`, one
    /// query every `interval`, through `query` (the real one is [`nvidia_smi_query`]).
    pub(crate) fn start<Q>(
        dir: &Path,
        devices: Option<String>,
        interval: Duration,
        query: Q,
    ) -> Result<GpuSampler, String>
    where
        Q: Fn(Option<&str>) -> Option<String> + Send + 'static,
    {
        let path = dir.join(SAMPLES_FILE);
        let file = std::fs::File::create(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("gpu-samples".into())
            .spawn(move || sample_loop(file, path, devices, interval, query, stopped))
            .map_err(|e| format!("cannot start the GPU sampler: {e}"))?;
        Ok(GpuSampler { stop, handle })
    }

    /// Stops sampling (at once, not at the next tick) and returns what was found.
    pub(crate) fn finish(self) -> GpuSummary {
        let _ = self.stop.send(());
        self.handle.join().unwrap_or_default()
    }
}

/// The real query: `nvidia-smi --query-gpu=index,memory.used,utilization.gpu
/// --format=csv,noheader,nounits [-i devices]`, killed after [`QUERY_TIMEOUT`].
pub(crate) fn nvidia_smi_query(devices: Option<&str>) -> Option<String> {
    let mut args = vec![
        "--query-gpu=index,memory.used,utilization.gpu",
        "--format=csv,noheader,nounits",
    ];
    if let Some(d) = devices {
        args.extend(["-i", d]);
    }
    dfx_core::hardware::run_nvidia_smi(&args, QUERY_TIMEOUT)
}

fn sample_loop<Q>(
    file: std::fs::File,
    path: PathBuf,
    devices: Option<String>,
    interval: Duration,
    query: Q,
    stopped: mpsc::Receiver<()>,
) -> GpuSummary
where
    Q: Fn(Option<&str>) -> Option<String>,
{
    let origin = Instant::now();
    let mut summary = GpuSummary {
        origin_unix_s: unix_now(),
        ..GpuSummary::default()
    };
    let mut out = std::io::BufWriter::new(file);
    let mut write_failed = false;
    loop {
        let tick = Instant::now();
        let readings = query(devices.as_deref()).map(|o| parse_readings(&o));
        match readings {
            Some(rs) if !rs.is_empty() => {
                let (t_s, unix_s) = (origin.elapsed().as_secs_f64(), unix_now());
                for r in &rs {
                    let line = json!({"t_s": t_s, "unix_s": unix_s, "gpu": r.gpu,
                                      "memory_used_mb": r.memory_used_mb,
                                      "utilization_pct": r.utilization_pct});
                    if !write_failed && writeln!(out, "{line}").is_err() {
                        write_failed = true;
                        eprintln!("gpu samples: cannot write {}", path.display());
                    }
                }
                summary.add(&rs);
            }
            _ => summary.failed_queries += 1,
        }
        let wait = interval.saturating_sub(tick.elapsed());
        match stopped.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = out.flush();
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_parse_and_odd_lines_are_left_out() {
        let r = parse_readings("0, 1200, 35\n1, 800, [N/A]\n2, [N/A], 3\n\n");
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].memory_used_mb, 1200.0);
        assert_eq!(r[0].utilization_pct, Some(35.0));
        assert_eq!(r[1].utilization_pct, None);
    }

    #[test]
    fn devices_come_from_the_server_then_the_suite() {
        assert_eq!(server_devices(Some("2,3"), Some("0")), Some("2,3".into()));
        assert_eq!(
            server_devices(None, Some("GPU-ab12")),
            Some("GPU-ab12".into())
        );
        assert_eq!(server_devices(None, None), None);
        assert_eq!(server_devices(Some("0;rm -rf"), None), None);
        assert_eq!(server_devices(Some(""), None), None);
    }

    #[test]
    fn the_sampler_summarises_per_gpu_and_stops_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let n = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seen = n.clone();
        let sampler = GpuSampler::start(
            dir.path(),
            Some("0,1".into()),
            Duration::from_millis(10),
            move |d| {
                assert_eq!(d, Some("0,1"));
                let i = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) as f64;
                Some(format!("0, {}, 50\n1, 100, 10\n", 1000.0 + i))
            },
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(120));
        let started = Instant::now();
        let s = sampler.finish();
        assert!(
            started.elapsed() < Duration::from_millis(100),
            "finish waits for no tick"
        );
        let k = n.load(std::sync::atomic::Ordering::SeqCst);
        assert!(k >= 3, "{k} samples");
        assert_eq!(s.gpus.len(), 2);
        assert_eq!(s.gpus[0].samples, k);
        assert_eq!(s.gpus[0].peak_memory_mb, 1000.0 + (k - 1) as f64);
        assert_eq!(s.gpus[1].mean_utilization_pct(), Some(10.0));
        let lines = std::fs::read_to_string(dir.path().join(SAMPLES_FILE)).unwrap();
        assert_eq!(lines.lines().count() as u64, 2 * k);
        let mut doc = ResultDoc::new();
        s.insert_into(&mut doc);
        assert_eq!(doc["peak_memory_mb"], json!(1000.0 + (k - 1) as f64));
        assert_eq!(doc["gpu_mean_utilization_pct"], json!(30.0));
        assert_eq!(doc["gpus"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_sampler_whose_queries_all_fail_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let sampler =
            GpuSampler::start(dir.path(), None, Duration::from_millis(5), |_| None).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let s = sampler.finish();
        let mut doc = ResultDoc::new();
        s.insert_into(&mut doc);
        assert!(!doc.contains_key("peak_memory_mb"));
        assert!(
            doc["gpu_samples_note"]
                .as_str()
                .unwrap()
                .contains("none of")
        );
    }
}
