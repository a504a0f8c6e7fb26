//! One live server at a time, reused by consecutive trials with an identical
//! [`ServerSpec`] (`docs/architecture.md` ("Server reuse")). Servers are started lazily,
//! when a trial that runs asks for one, so filtering never starts a server no selected
//! trial needs. A server found dead before a trial is restarted; one that dies during a
//! trial fails that trial.

pub(crate) use crate::server_info::ServerInfo;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dfx_core::fsutil::sanitize_component;
use dfx_core::server::{
    ExitStatus, JudgeSpec, RunningServer, ServerError, ServerLauncher, ServerSpec, StartContext,
};

/// A server (or its required judge) that exited during a trial: how, its log and the
/// log's tail. Displays as [`ServerError::DiedDuringTrial`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerDied {
    pub status: ExitStatus,
    pub log: PathBuf,
    pub log_tail: String,
}

impl std::fmt::Display for ServerDied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        ServerError::DiedDuringTrial {
            status: self.status,
            log: self.log.clone(),
            log_tail: self.log_tail.clone(),
        }
        .fmt(f)
    }
}

/// Launcher plus the server it currently keeps alive.
pub(crate) struct ServerPool {
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
    /// The case's judge server, when it has one and it started.
    judge: Option<Judge>,
}

/// A live judge server (`servers/<NN>-<name>-judge`).
struct Judge {
    server: Box<dyn RunningServer>,
    rel_dir: String,
}

/// Why a trial got no server.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AcquireError {
    #[error("{0}")]
    Start(#[from] ServerError),
    #[error(
        "not retried: the same server configuration failed to start for an earlier trial:\n{0}"
    )]
    FailedBefore(String),
    #[error("the run was interrupted: no server is started any more")]
    Interrupted,
    #[error("the judge server (judge_server_params, required) failed: {0}")]
    Judge(String),
    #[error("cannot create the server folder {dir}: {source}")]
    Folder {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ServerPool {
    /// `servers_dir` is `<run folder>/servers`; each start gets `<NN>-<name>` below it.
    pub(crate) fn new(
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

    /// How many servers were started so far.
    pub(crate) fn starts(&self) -> usize {
        self.starts
    }

    /// A ready server for `spec`: the live one when its spec is identical and it is still
    /// running, else a fresh start (stopping the old one first). `name` names the start
    /// folder (the test name of the trial that needs it).
    pub(crate) fn acquire(
        &mut self,
        spec: &Arc<ServerSpec>,
        name: &str,
    ) -> Result<ServerInfo, AcquireError> {
        if let Some(live) = &mut self.live
            && *live.spec == **spec
        {
            let judge_exit = live.judge.as_mut().and_then(|j| j.server.exit_status());
            match live.server.exit_status() {
                None if judge_exit.is_none() => return Ok(info(live, false)),
                None => {
                    let note = format!(
                        "judge server of {} exited with {} between trials; starting both anew",
                        live.rel_dir,
                        judge_exit.map(|s| s.to_string()).unwrap_or_default()
                    );
                    eprintln!("dfx-perf: {note}");
                    self.notes.push(note);
                }
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
        if dfx_core::stop::requested() {
            return Err(AcquireError::Interrupted);
        }
        if let Some((failed_spec, message)) = &self.failed
            && **failed_spec == **spec
        {
            return Err(AcquireError::FailedBefore(message.clone()));
        }
        self.start(spec, name)
    }

    /// The next start's folder `servers/<NN>-<name><suffix>` (created) and its context;
    /// returns the folder relative to the run folder too.
    fn next_start(
        &mut self,
        name: &str,
        suffix: &str,
    ) -> Result<(String, StartContext), AcquireError> {
        self.starts += 1;
        let rel_dir = format!(
            "servers/{:02}-{}{suffix}",
            self.starts,
            sanitize_component(name)
        );
        let dir = self
            .servers_dir
            .join(rel_dir.trim_start_matches("servers/"));
        std::fs::create_dir_all(&dir).map_err(|source| AcquireError::Folder {
            dir: dir.clone(),
            source,
        })?;
        let ctx = StartContext {
            storage_dir: self.servers_dir.parent().map(|run| run.join("storage")),
            dir,
            ready_timeout: self.ready_timeout,
        };
        Ok((rel_dir, ctx))
    }

    fn start(&mut self, spec: &Arc<ServerSpec>, name: &str) -> Result<ServerInfo, AcquireError> {
        let (rel_dir, ctx) = self.next_start(name, "")?;
        eprintln!(
            "dfx-perf: starting server {rel_dir} ({} {})",
            self.launcher.name(),
            spec.model
        );
        match self.launcher.start(spec, &ctx) {
            Ok(server) => {
                let mut live = Live {
                    spec: spec.clone(),
                    server,
                    rel_dir,
                    judge: None,
                };
                if let Some(j) = &spec.judge {
                    match self.start_judge(j, name) {
                        Ok(judge) => live.judge = judge,
                        Err(e) => {
                            self.live = Some(live);
                            self.stop_live();
                            self.failed = Some((spec.clone(), e.to_string()));
                            return Err(e);
                        }
                    }
                }
                self.failed = None;
                crate::fingerprint::note_server(&live.server.host(), live.server.port());
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

    /// Starts the judge of a case in its own folder (`<NN>-<name>-judge`), with
    /// `CUDA_VISIBLE_DEVICES` mapped from the parent's. `Ok(None)` when it is skipped or
    /// failed but not required (noted); `Err` when a required judge cannot start.
    fn start_judge(&mut self, j: &JudgeSpec, name: &str) -> Result<Option<Judge>, AcquireError> {
        if self.launcher.name() == "attach" {
            let note = format!(
                "attach mode: the judge server of {name} ({}) is not started; trials run without it",
                j.server.model
            );
            eprintln!("dfx-perf: {note}");
            self.notes.push(note);
            return Ok(None);
        }
        let failed = |me: &mut Self, why: String| {
            if j.required {
                Err(AcquireError::Judge(why))
            } else {
                let note = format!("judge server of {name} not started (not required): {why}");
                eprintln!("dfx-perf: {note}");
                me.notes.push(note);
                Ok(None)
            }
        };
        let parent = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        let devices = match j.visible_devices(parent.as_deref()) {
            Ok(d) => d,
            Err(why) => return failed(self, why.to_string()),
        };
        let mut spec = j.server.clone();
        spec.env.insert("CUDA_VISIBLE_DEVICES".into(), devices);
        let (rel_dir, ctx) = self.next_start(name, "-judge")?;
        eprintln!("dfx-perf: starting judge server {rel_dir} ({})", spec.model);
        match self.launcher.start(&spec, &ctx) {
            Ok(server) => Ok(Some(Judge { server, rel_dir })),
            Err(e) => failed(self, format!("{rel_dir}: {e}")),
        }
    }

    /// Called after every trial that used a server: when the server exited during the
    /// trial, it is cleaned up and the error (exit status, log tail) returned. `settle`:
    /// how long a server this machine runs is given to finish exiting (a trial whose
    /// requests failed may have seen the crash before the process was gone).
    pub(crate) fn check_after_trial(&mut self, settle: Duration) -> Result<(), ServerDied> {
        let Some(live) = &mut self.live else {
            return Ok(());
        };
        let required_judge = live.spec.judge.as_ref().is_some_and(|j| j.required);
        let died = match exit_within(live.server.as_mut(), settle) {
            Some(status) => Some((status, &live.server)),
            None => live
                .judge
                .as_mut()
                .filter(|_| required_judge)
                .and_then(|j| j.server.exit_status().map(|s| (s, &j.server))),
        };
        let Some((status, dead)) = died else {
            return Ok(());
        };
        let err = ServerDied {
            status,
            log: dead.log_path().unwrap_or_default(),
            log_tail: dead.log_tail(40),
        };
        // Stops (and so cleans up) the dead one and its partner.
        self.stop_live();
        Err(err)
    }

    fn stop_live(&mut self) {
        if let Some(mut live) = self.live.take() {
            if let Some(judge) = live.judge.take() {
                eprintln!("dfx-perf: stopping judge server {}", judge.rel_dir);
                if let Err(e) = judge.server.stop() {
                    let note = format!("stopping {}: {e}", judge.rel_dir);
                    eprintln!("dfx-perf: {note}");
                    self.notes.push(note);
                }
            }
            eprintln!("dfx-perf: stopping server {}", live.rel_dir);
            if let Err(e) = live.server.stop() {
                let note = format!("stopping {}: {e}", live.rel_dir);
                eprintln!("dfx-perf: {note}");
                self.notes.push(note);
            }
        }
    }

    /// Stops the live server, if any (after the last trial; also on drop).
    pub(crate) fn shutdown(&mut self) {
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
        judge_url: live.judge.as_ref().map(|j| j.server.base_url()),
        process_group: live.server.process_group(),
    }
}

#[cfg(test)]
mod tests;

/// The exit status of `server`, waiting up to `within` for a server this machine runs
/// (one with a process group) that is still exiting; others are asked once.
fn exit_within(server: &mut dyn RunningServer, within: Duration) -> Option<ExitStatus> {
    let end = std::time::Instant::now() + within;
    loop {
        let status = server.exit_status();
        if status.is_some() || server.process_group().is_none() {
            return status;
        }
        if std::time::Instant::now() >= end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}
