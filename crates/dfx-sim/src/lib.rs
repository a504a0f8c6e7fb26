//! A GPU-less twin of `vllm-omni serve` for TTS (`docs/simulator.md`): the same command
//! line, the same API, and a performance model of a two-stage TTS server under load.
//!
//! - [`main_from_args`]: the `dfx-perf-sim` executable.
//! - [`serve`] / [`serve_until`] with [`SimOptions`]: an instance on a given listener,
//!   for in-process use; [`spawn`] binds 127.0.0.1:0 and returns a [`SimHandle`].
//! - [`engine`]: the discrete-event model itself, usable without any I/O.

pub(crate) mod args;
pub(crate) mod audio;
pub(crate) mod deploy;
mod driver;
pub mod engine;
mod error;
pub use dfx_core::faults;
mod http;
pub mod listen;
pub mod omni;
pub(crate) mod options;
pub mod plan;
pub(crate) mod profile;
pub(crate) mod request;
mod server;
pub(crate) mod stats;
mod stream;
pub mod vbench;
pub(crate) mod voices;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

pub use error::ApiError;
pub use faults::Faults;
pub use options::{SimConfig, SimOptions};
pub use server::{serve, serve_until};

/// Why an instance could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Bad command line or options (exit status 2).
    #[error("{0}")]
    Args(String),
    /// A deploy file or stage override was refused (exit status 2).
    #[error(transparent)]
    Deploy(#[from] deploy::DeployError),
    /// A fault spec was refused (exit status 2).
    #[error(transparent)]
    Fault(#[from] faults::FaultError),
    /// Listening or serving failed (exit status 1).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The exit-at-startup fault (exit status N).
    #[error("simulated start-up failure (exit status {0})")]
    ExitAtStartup(u8),
    /// The crash-at-inflight fault (exit status 1).
    #[error("simulated crash with {inflight} requests in flight")]
    Crashed {
        /// Speech requests in flight when the fault fired (its `N`).
        inflight: usize,
    },
}

impl SimError {
    /// The process exit status for this error.
    pub fn exit_status(&self) -> u8 {
        match self {
            SimError::Args(_) | SimError::Deploy(_) | SimError::Fault(_) => 2,
            SimError::ExitAtStartup(n) => *n,
            SimError::Io(_) | SimError::Crashed { .. } => 1,
        }
    }
}

/// An in-process instance started by [`spawn`].
#[derive(Debug)]
pub struct SimHandle {
    /// Where the instance listens.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), SimError>>,
}

impl SimHandle {
    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Graceful shutdown; returns how the instance ended.
    pub async fn shutdown(mut self) -> Result<(), SimError> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        self.join().await
    }

    /// Waits for the instance to end on its own (crash fault, start-up fault).
    pub async fn join(self) -> Result<(), SimError> {
        self.task
            .await
            .map_err(|e| SimError::Io(std::io::Error::other(e)))?
    }
}

/// Binds 127.0.0.1:0, sets the instance up (start-up faults surface here) and serves it
/// on the current tokio runtime; requests can be sent as soon as this returns.
pub async fn spawn(opts: SimOptions) -> Result<SimHandle, SimError> {
    let listener = listen::listen("127.0.0.1", 0).await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut opts = opts;
    opts.port = addr.port();
    let prepared = server::prepare(opts, listener).await?;
    let task = tokio::spawn(prepared.run(async {
        let _ = rx.await;
    }));
    Ok(SimHandle {
        addr,
        stop: Some(tx),
        task,
    })
}

/// Entry point of the simulator executable: `dfx-perf-sim serve <model> --host H --port P …`.
pub fn main_from_args(args: Vec<OsString>) -> ExitCode {
    ExitCode::from(run_from_args(args))
}

/// [`main_from_args`] returning the exit status as a number (0 after a graceful stop, 2 for
/// bad arguments, N for the exit-at-startup fault, 1 for a crash or I/O error).
pub fn run_from_args(args: Vec<OsString>) -> u8 {
    let env = |k: &str| std::env::var(k).ok();
    let (opts, log) = match args::parse(args, &env) {
        Ok(args::Command::Serve(o, log)) => (*o, log),
        Ok(args::Command::Help) => {
            print!("{}", args::usage());
            return 0;
        }
        Ok(args::Command::Version) => {
            println!("dfx-perf-sim {}", env!("CARGO_PKG_VERSION"));
            return 0;
        }
        Err(e) => {
            eprintln!("dfx-perf-sim: error: {e}\n\n{}", args::usage());
            return e.exit_status();
        }
    };
    init_logging(&log.0);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("dfx-perf-sim: error: cannot start the runtime: {e}");
            return 1;
        }
    };
    let result = rt.block_on(run(opts));
    rt.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => 0,
        Err(e) => {
            if !matches!(e, SimError::ExitAtStartup(_)) {
                tracing::error!("{e}");
            }
            e.exit_status()
        }
    }
}

async fn run(opts: SimOptions) -> Result<(), SimError> {
    if let Some(code) = opts.faults.exit_at_startup {
        tracing::error!(
            "simulated start-up failure: exiting with status {code} (fault exit-at-startup)"
        );
        return Err(SimError::ExitAtStartup(code));
    }
    opts.resolve()?;
    let listener = listen::listen(&opts.host, opts.port).await.map_err(|e| {
        SimError::Io(std::io::Error::new(
            e.kind(),
            format!("cannot listen on {}:{}: {e}", opts.host, opts.port),
        ))
    })?;
    let ignore_term = opts.faults.ignore_sigterm;
    serve_until(opts, listener, termination(ignore_term)).await
}

/// Completes on SIGINT, or on SIGTERM unless the ignore-sigterm fault is on.
async fn termination(ignore_term: bool) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    loop {
        tokio::select! {
            _ = term.recv() => {
                if ignore_term {
                    tracing::warn!("SIGTERM ignored (fault ignore-sigterm)");
                    continue;
                }
                tracing::info!("SIGTERM received");
                return;
            }
            _ = tokio::signal::ctrl_c() => {
                tracing::info!("SIGINT received");
                return;
            }
        }
    }
}

fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        // The default reports a failed write with `eprintln!`, which panics when stderr
        // (the server log) is on a full disk: a log line lost must not kill the server.
        .log_internal_errors(false)
        .try_init();
}
