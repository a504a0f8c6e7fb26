//! One live server at a time, reused by consecutive trials with an identical
//! [`ServerSpec`] (`docs/architecture.md` ("Server reuse")). Servers are started lazily,
//! when a trial that runs asks for one, so filtering never starts a server no selected
//! trial needs. A server found dead before a trial is restarted; one that dies during a
//! trial fails that trial.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dfx_core::fsutil::sanitize_component;
use dfx_core::server::{RunningServer, ServerError, ServerLauncher, ServerSpec, StartContext};

/// Launcher plus the server it currently keeps alive.
pub struct ServerPool {
    launcher: Box<dyn ServerLauncher + Send>,
    servers_dir: PathBuf,
    ready_timeout: Duration,
    live: Option<Live>,
    /// The last spec that failed to start and why: trials needing the same spec right
    /// after fail at once instead of waiting for another readiness timeout.
    failed: Option<(Arc<ServerSpec>, String)>,
    starts: usize,
    /// Remarks for the run summary (a server found dead between trials, stop errors).
    pub notes: Vec<String>,
}

struct Live {
    spec: Arc<ServerSpec>,
    server: Box<dyn RunningServer>,
    /// `servers/<NN>-<name>`, relative to the run folder.
    rel_dir: String,
}

/// What a trial needs to know about the server it runs against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    pub base_url: String,
    pub host: String,
    pub port: u16,
    /// The start's folder relative to the run folder (`servers/01-test_x`).
    pub rel_dir: String,
    /// Whether this trial started the server (false: reused).
    pub started: bool,
}

/// Why a trial got no server.
#[derive(Debug, thiserror::Error)]
pub enum AcquireError {
    #[error("{0}")]
    Start(#[from] ServerError),
    #[error(
        "not retried: the same server configuration failed to start for an earlier trial:\n{0}"
    )]
    FailedBefore(String),
    #[error("the run was interrupted: no server is started any more")]
    Interrupted,
    #[error("cannot create the server folder {dir}: {source}")]
    Folder {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ServerPool {
    /// `servers_dir` is `<run folder>/servers`; each start gets `<NN>-<name>` below it.
    pub fn new(
        launcher: Box<dyn ServerLauncher + Send>,
        servers_dir: PathBuf,
        ready_timeout: Duration,
    ) -> Self {
        ServerPool {
            launcher,
            servers_dir,
            ready_timeout,
            live: None,
            failed: None,
            starts: 0,
            notes: Vec::new(),
        }
    }

    /// The launcher's short name.
    pub fn launcher_name(&self) -> &str {
        self.launcher.name()
    }

    /// How many servers were started so far.
    pub fn starts(&self) -> usize {
        self.starts
    }

    /// A ready server for `spec`: the live one when its spec is identical and it is still
    /// running, else a fresh start (stopping the old one first). `name` names the start
    /// folder (the test name of the trial that needs it).
    pub fn acquire(
        &mut self,
        spec: &Arc<ServerSpec>,
        name: &str,
    ) -> Result<ServerInfo, AcquireError> {
        if let Some(live) = &mut self.live
            && *live.spec == **spec
        {
            match live.server.exit_status() {
                None => return Ok(info(live, false)),
                Some(status) => {
                    let note = format!(
                        "server {} exited with {status} between trials; starting a new one",
                        live.rel_dir
                    );
                    eprintln!("dfx-perf: {note}");
                    self.notes.push(note);
                }
            }
        }
        self.stop_live();
        if crate::interrupt::requested() {
            return Err(AcquireError::Interrupted);
        }
        if let Some((failed_spec, message)) = &self.failed
            && **failed_spec == **spec
        {
            return Err(AcquireError::FailedBefore(message.clone()));
        }
        self.start(spec, name)
    }

    fn start(&mut self, spec: &Arc<ServerSpec>, name: &str) -> Result<ServerInfo, AcquireError> {
        self.starts += 1;
        let rel_dir = format!("servers/{:02}-{}", self.starts, sanitize_component(name));
        let dir = self
            .servers_dir
            .join(rel_dir.trim_start_matches("servers/"));
        std::fs::create_dir_all(&dir).map_err(|source| AcquireError::Folder {
            dir: dir.clone(),
            source,
        })?;
        eprintln!(
            "dfx-perf: starting server {rel_dir} ({} {})",
            self.launcher.name(),
            spec.model
        );
        let ctx = StartContext {
            storage_dir: self.servers_dir.parent().map(|run| run.join("storage")),
            dir,
            ready_timeout: self.ready_timeout,
        };
        match self.launcher.start(spec, &ctx) {
            Ok(server) => {
                self.failed = None;
                let live = Live {
                    spec: spec.clone(),
                    server,
                    rel_dir,
                };
                let out = info(&live, true);
                self.live = Some(live);
                Ok(out)
            }
            Err(e) => {
                self.failed = Some((spec.clone(), format!("{rel_dir}: {e}")));
                Err(AcquireError::Start(e))
            }
        }
    }

    /// Called after every trial that used a server: when the server exited during the
    /// trial, it is cleaned up and the error (exit status, log tail) returned.
    pub fn check_after_trial(&mut self) -> Result<(), ServerError> {
        let Some(live) = &mut self.live else {
            return Ok(());
        };
        let Some(status) = live.server.exit_status() else {
            return Ok(());
        };
        let live = self.live.take().expect("checked above");
        let err = ServerError::DiedDuringTrial {
            status,
            log: live.server.log_path().unwrap_or_default(),
            log_tail: live.server.log_tail(40),
        };
        if let Err(e) = live.server.stop() {
            self.notes
                .push(format!("cleaning up {} after it died: {e}", live.rel_dir));
        }
        Err(err)
    }

    fn stop_live(&mut self) {
        if let Some(live) = self.live.take() {
            eprintln!("dfx-perf: stopping server {}", live.rel_dir);
            if let Err(e) = live.server.stop() {
                let note = format!("stopping {}: {e}", live.rel_dir);
                eprintln!("dfx-perf: {note}");
                self.notes.push(note);
            }
        }
    }

    /// Stops the live server, if any (after the last trial; also on drop).
    pub fn shutdown(&mut self) {
        self.stop_live();
    }
}

impl Drop for ServerPool {
    fn drop(&mut self) {
        self.stop_live();
    }
}

fn info(live: &Live, started: bool) -> ServerInfo {
    ServerInfo {
        base_url: live.server.base_url(),
        host: live.server.host(),
        port: live.server.port(),
        rel_dir: live.rel_dir.clone(),
        started,
    }
}

#[cfg(test)]
mod tests;
