//! Running an instance: start-up faults, readiness, the engine thread, the HTTP server,
//! shutdown (graceful or crash), and the periodic stats line.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::SimError;
use crate::audio::VoiceBuffer;
use crate::driver::SpeechHandle;
use crate::engine::Engine;
use crate::http::{AppState, router, static_info};
use crate::options::{SimConfig, SimOptions};
use crate::stats::Stats;
use crate::voices::Registry;

/// How long in-flight connections may take to finish after a shutdown request.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);
/// Interval of the stats log line (only when something happened).
const STATS_EVERY: Duration = Duration::from_secs(10);

/// Serves until the process is killed (or the crash fault fires).
pub async fn serve(opts: SimOptions, listener: TcpListener) -> Result<(), SimError> {
    serve_until(opts, listener, std::future::pending()).await
}

/// Serves until `shutdown` completes (graceful: the engine stops, open streams end,
/// connections get `SHUTDOWN_GRACE` to close) or the crash fault fires
/// (`Err(SimError::Crashed)`, immediately).
pub async fn serve_until(
    opts: SimOptions,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), SimError> {
    prepare(opts, listener).await?.run(shutdown).await
}

/// An instance set up (options validated, start-up faults applied, engine running) but
/// not yet answering.
pub(crate) struct Prepared {
    listener: TcpListener,
    state: Arc<AppState>,
    engine: Arc<SpeechHandle>,
    stats: Arc<Stats>,
    crash_rx: watch::Receiver<Option<usize>>,
}

/// Validates `opts` and sets the instance up on `listener`.
pub(crate) async fn prepare(opts: SimOptions, listener: TcpListener) -> Result<Prepared, SimError> {
    let cfg = Arc::new(opts.resolve()?);
    let o = &cfg.options;
    if let Some(code) = o.faults.exit_at_startup {
        tracing::error!(
            "simulated start-up failure: exiting with status {code} (fault exit-at-startup)"
        );
        return Err(SimError::ExitAtStartup(code));
    }
    let addr = listener.local_addr()?;
    let child_pid = if o.faults.fork_child {
        fork_child()?
    } else {
        None
    };
    log_startup(&cfg, addr);
    let rate = cfg.profile.sample_rate;
    let voice_buf = tokio::task::spawn_blocking(move || VoiceBuffer::shared(rate))
        .await
        .map_err(|e| SimError::Io(std::io::Error::other(e)))?;
    let stats = Arc::new(Stats::default());
    let engine = Arc::new(SpeechHandle::start(
        Engine::new(cfg.engine.clone()),
        "dfx-sim-engine",
        o.speed,
        stats.clone(),
    )?);
    let omni = match &cfg.omni {
        Some(oc) => Some(Arc::new(crate::omni::OmniHandle::start(
            crate::omni::engine::OmniEngine::new(oc.engine.clone()),
            "dfx-sim-omni",
            o.speed,
            stats.clone(),
        )?)),
        None => None,
    };
    let ready_at = if o.faults.never_ready {
        tracing::warn!("fault never-ready: /health will never answer 200");
        None
    } else {
        // Bounded when parsed; an unrepresentable delay means "never ready", not a panic.
        Duration::try_from_secs_f64(o.faults.ready_after_s.unwrap_or(0.0))
            .ok()
            .and_then(|d| Instant::now().checked_add(d))
    };
    let (crash_tx, crash_rx) = watch::channel(None);
    let state = Arc::new(AppState {
        info: static_info(&cfg, child_pid),
        cfg: cfg.clone(),
        engine: engine.clone(),
        stats: stats.clone(),
        voices: Registry::default(),
        voice_buf,
        ready_at,
        arrivals: AtomicU64::new(0),
        crashed: AtomicBool::new(false),
        on_crash: crash_tx,
        omni,
        realtime: Default::default(),
    });
    Ok(Prepared {
        listener,
        state,
        engine,
        stats,
        crash_rx,
    })
}

impl Prepared {
    /// Answers requests until `shutdown` completes or the crash fault fires.
    pub(crate) async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), SimError> {
        let Prepared {
            listener,
            state,
            engine,
            stats,
            mut crash_rx,
        } = self;
        let (stop_tx, stop_rx) = watch::channel(false);
        let logger = tokio::spawn(log_stats(stats.clone(), engine.clone()));
        let ready_log = tokio::spawn(log_ready(state.ready_at));
        let external = tokio::spawn(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
        });
        let mut graceful_rx = stop_rx.clone();
        let eng = engine.clone();
        let omni = state.omni.clone();
        let omni_end = state.omni.clone();
        // No Nagle: a small first chunk must leave at once (TTFP), not wait for an ACK.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let server = axum::serve(listener, router(state)).with_graceful_shutdown(async move {
            let _ = graceful_rx.wait_for(|s| *s).await;
            tracing::info!("shutting down");
            eng.stop();
            if let Some(o) = &omni {
                o.stop();
            }
        });
        let mut grace_rx = stop_rx;
        let result = tokio::select! {
            r = server => r.map_err(SimError::Io),
            _ = async { let _ = grace_rx.wait_for(|s| *s).await; tokio::time::sleep(SHUTDOWN_GRACE).await } => {
                tracing::warn!("connections still open after {SHUTDOWN_GRACE:?}; exiting anyway");
                Ok(())
            }
            c = crash_rx.wait_for(|c| c.is_some()) => Err(SimError::Crashed {
                inflight: c.ok().and_then(|c| *c).unwrap_or_default(),
            }),
        };
        engine.stop();
        if let Some(o) = &omni_end {
            o.stop();
        }
        logger.abort();
        ready_log.abort();
        external.abort();
        if result.is_ok() {
            tracing::info!("stopped");
        }
        result
    }
}

fn log_startup(cfg: &SimConfig, addr: SocketAddr) {
    let o = &cfg.options;
    let e = &cfg.engine;
    tracing::info!(
        "dfx-perf-sim {} serving {} (profile {}, {} Hz) on http://{addr}",
        env!("CARGO_PKG_VERSION"),
        o.model,
        cfg.profile.name,
        cfg.profile.sample_rate
    );
    tracing::info!(
        "speed x{}, seed {}, talker max_num_seqs {}, code2wav {}, chunks {}+{} (ramp {:?}), deploy {}",
        o.speed,
        o.seed,
        e.talker.max_num_seqs,
        e.codec
            .as_ref()
            .map_or("none (single stage)".to_string(), |c| format!(
                "max_num_seqs {} (decode batch {})",
                c.max_num_seqs, c.decode_batch
            )),
        e.chunking.initial_frames,
        e.chunking.chunk_frames,
        e.chunking.ramp,
        o.deploy_config
            .as_ref()
            .map_or("none".to_string(), |p| p.display().to_string()),
    );
    if !o.extra_flags.is_empty() {
        let flags: Vec<String> = o
            .extra_flags
            .iter()
            .map(|(f, v)| v.as_ref().map_or(f.clone(), |v| format!("{f} {v}")))
            .collect();
        tracing::info!("accepted and ignored: {}", flags.join(" "));
    }
    if o.faults.any() {
        tracing::warn!(
            "faults on: {}",
            serde_json::to_string(&o.faults).unwrap_or_default()
        );
    }
}

async fn log_ready(ready_at: Option<Instant>) {
    if let Some(at) = ready_at {
        tokio::time::sleep_until(at.into()).await;
        tracing::info!("Application startup complete: ready");
    }
}

async fn log_stats(stats: Arc<Stats>, engine: Arc<SpeechHandle>) {
    let mut last = 0;
    loop {
        tokio::time::sleep(STATS_EVERY).await;
        let v = stats.view(engine.snapshot());
        let seen = v.speech_requests + v.rejected_400;
        if seen == last && v.inflight == 0 {
            continue;
        }
        last = seen;
        tracing::info!(
            "requests {} ({} in flight, {} done, {} cancelled, {} rejected), talker {} running / {} waiting, codec queue {}, lag p99 {:.2} ms max {:.2} ms",
            v.speech_requests,
            v.inflight,
            v.completed,
            v.cancelled,
            v.rejected_400,
            v.engine.talker_running,
            v.engine.talker_waiting,
            v.engine.codec_queued_chunks,
            v.lag_ms.p99,
            v.lag_ms.max
        );
    }
}

/// Starts `sleep` in our process group and leaves it running (fault fork-child).
fn fork_child() -> Result<Option<u32>, SimError> {
    let child = std::process::Command::new("sleep")
        .arg("86400")
        .stdin(std::process::Stdio::null())
        .spawn()
        .map_err(|e| {
            SimError::Io(std::io::Error::other(format!(
                "fork-child: cannot start `sleep`: {e}"
            )))
        })?;
    let pid = child.id();
    tracing::warn!("fault fork-child: started child process {pid} (left running at exit)");
    // Deliberately not waited for: the launcher's process-group teardown must reap it.
    std::mem::forget(child);
    Ok(Some(pid))
}
