//! The server seam: what a trial needs from a server, and the traits a launcher (real
//! process, simulator, attached URL, or an in-process fake in tests) implements.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// Which server program a case starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerType {
    /// `vllm-omni serve …` (default).
    VllmOmni,
    /// `sgl-omni serve …` (`server_type: "sglang-omni"`).
    SglangOmni,
}

mod exit;
pub mod inline;

pub use exit::{ExitStatus, Unavailable};

/// `serve_args` as written: an object (rendered `--key-with-dashes value`, order kept) or a
/// list of raw strings.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ServeArgs {
    /// The object form: each key rendered `--key-with-dashes value`, in file order.
    Map(serde_json::Map<String, Value>),
    /// The list form: the strings passed as they are.
    List(Vec<String>),
}

impl Default for ServeArgs {
    fn default() -> Self {
        ServeArgs::List(Vec::new())
    }
}

/// A deploy file resolved under `deploy/` with the case's `delete`/`update` edits applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedDeploy {
    /// The name as written in `stage_config_name`.
    pub name: String,
    /// The stock file under `deploy/` (canonical path).
    pub source: PathBuf,
    /// The YAML text the server must receive: the file itself when there are no edits,
    /// else the edited copy (the launcher writes it to a temporary file).
    pub contents: String,
    /// Whether `update`/`delete` edits were applied.
    pub edited: bool,
}

/// Everything that defines a server configuration. Two trials whose specs are equal share
/// one live server (`docs/architecture.md` ("Server reuse")).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerSpec {
    /// `server_type`: which server program runs the case.
    pub server_type: ServerType,
    /// Positional model id / path.
    pub model: String,
    /// `stage_config_name` resolved under `deploy/`, with the case's edits applied.
    pub deploy: Option<ResolvedDeploy>,
    /// `--stage-overrides <compact JSON>` when present.
    pub stage_overrides: Option<Value>,
    /// `serve_args`: flags for the server's command line.
    pub serve_args: ServeArgs,
    /// `extra_cli_args`: raw arguments after the `serve_args` (vllm-omni form).
    pub extra_cli_args: Vec<String>,
    /// Adds `--omni` and the init timeouts (default true).
    pub use_omni: bool,
    /// Whether a `--omni` server gets upstream's default `--stage-init-timeout 600
    /// --init-timeout 900`: false for diffusion cases, whose upstream runner
    /// (`run_diffusion_benchmark.py`) starts the server without them.
    #[serde(skip_serializing_if = "is_true")]
    pub default_timeouts: bool,
    /// Extra environment for the server process.
    pub env: BTreeMap<String, String>,
    /// Per-case readiness timeout (`server_params.ready_timeout_s`), overriding the global.
    pub ready_timeout: Option<Duration>,
    /// The judge server the case starts beside this one (`judge_server_params`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<Box<JudgeSpec>>,
}

/// A second server a case starts beside its main one (upstream's `judge_server_params`,
/// OmniInteract): started after the main server, readied, supervised and stopped with it;
/// its URL reaches the bench as `--omniinteract-judge-base-url`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeSpec {
    /// The judge's own server: `model`, `use_omni` (default false), `extra_cli_args`.
    pub server: ServerSpec,
    /// `cuda_visible_devices`: indices (comma-separated) into the parent's
    /// `CUDA_VISIBLE_DEVICES` (upstream's default `"1"`); with the parent's variable unset
    /// they are device numbers themselves.
    pub device_indices: Vec<usize>,
    /// `required` (default true): a judge that does not start fails the case's trials;
    /// otherwise they run without it, with a warning.
    pub required: bool,
}

impl JudgeSpec {
    /// The judge's `CUDA_VISIBLE_DEVICES` given the parent's value: each index picks an
    /// element of the parent's list; an index past its end is an error naming both.
    pub fn visible_devices(&self, parent: Option<&str>) -> Result<String, DeviceIndexError> {
        let picked: Result<Vec<String>, DeviceIndexError> = match parent.map(str::trim) {
            Some(p) if !p.is_empty() => {
                let list: Vec<&str> = p.split(',').map(str::trim).collect();
                self.device_indices
                    .iter()
                    .map(|&i| {
                        list.get(i)
                            .map(|d| d.to_string())
                            .ok_or_else(|| DeviceIndexError {
                                index: i,
                                parent: p.to_string(),
                            })
                    })
                    .collect()
            }
            _ => Ok(self.device_indices.iter().map(usize::to_string).collect()),
        };
        picked.map(|v| v.join(","))
    }
}

/// A judge's device index past the end of the parent's `CUDA_VISIBLE_DEVICES`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "judge_server_params.cuda_visible_devices index {index} is past the end of the parent's \
     CUDA_VISIBLE_DEVICES={parent}"
)]
pub struct DeviceIndexError {
    /// The offending index (0-based).
    pub index: usize,
    /// The parent's `CUDA_VISIBLE_DEVICES` value.
    pub parent: String,
}

/// Errors of starting, watching and stopping a server. Every message carries what the user
/// needs: the exit status or signal and the tail of the server log.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The launcher found no server executable to run (why, and how to configure one).
    #[error("server executable not found: {0}")]
    ExecutableMissing(Unavailable),
    /// Something already answers on the port before our server starts, or a process
    /// outside the server's group holds its listener.
    #[error(
        "port {port} on {host} already answers before the server was started (a stale server?); refusing to benchmark it"
    )]
    PortInUse {
        /// The host probed (the loopback address servers bind).
        host: String,
        /// The port that answered.
        port: u16,
    },
    /// The server process could not be spawned.
    #[error("could not start `{command}`: {source}")]
    Spawn {
        /// The command line, as shown in the message.
        command: String,
        /// The spawn's I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The process exited while the launcher waited for `GET /health` to return 200.
    #[error(
        "server exited with {status} before becoming ready\n--- server log tail ({log}) ---\n{log_tail}"
    )]
    ExitedBeforeReady {
        /// How it ended.
        status: ExitStatus,
        /// Its `server.log`.
        log: PathBuf,
        /// The log's last lines.
        log_tail: String,
    },
    /// The readiness timeout passed without `GET /health` returning 200.
    #[error(
        "server not ready after {waited:?} (GET /health never returned 200)\n--- server log tail ({log}) ---\n{log_tail}"
    )]
    NotReady {
        /// How long the launcher waited (the readiness timeout).
        waited: Duration,
        /// Its `server.log`.
        log: PathBuf,
        /// The log's last lines.
        log_tail: String,
    },
    /// A ready server exited while a trial was using it.
    #[error(
        "server exited with {status} during the benchmark\n--- server log tail ({log}) ---\n{log_tail}"
    )]
    DiedDuringTrial {
        /// How it ended.
        status: ExitStatus,
        /// Its `server.log`.
        log: PathBuf,
        /// The log's last lines.
        log_tail: String,
    },
    /// The spec cannot be turned into a command line or an attach target (the reason).
    #[error("invalid server configuration: {0}")]
    InvalidSpec(String),
    /// `--server-url`: the attached server's `GET /health` did not return 200 in time.
    #[error("attached server at {url} is not ready: {reason}")]
    AttachNotReady {
        /// The attached server's base URL.
        url: String,
        /// The last probe's outcome (`GET /health answered 503`, `GET /health failed: …`).
        reason: String,
    },
    /// Another I/O failure while preparing a start (its folder, the deploy copy, inline
    /// files, a free port).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Teardown of several groups left processes alive: each group with its pids.
    #[error("server processes survived SIGKILL ({})", survivors_text(.0))]
    SurvivedKill(Vec<(i32, Vec<i32>)>),
    /// Teardown of one group left processes alive.
    #[error("processes of group {pgid} survived SIGKILL: pids {pids:?}")]
    GroupSurvivedKill {
        /// The process group id (its leader's pid).
        pgid: i32,
        /// The pids still in the group.
        pids: Vec<i32>,
    },
    /// The SIGINT/SIGTERM handler could not be installed (the `ctrlc` error's text).
    #[error("cannot install the signal handler: {0}")]
    SignalHandler(String),
}

/// `group 12: pids [12, 13]; group 20: pids [21]`.
fn survivors_text(groups: &[(i32, Vec<i32>)]) -> String {
    let detail: Vec<String> = groups
        .iter()
        .map(|(g, pids)| format!("group {g}: pids {pids:?}"))
        .collect();
    detail.join("; ")
}

/// Per-start context the harness hands to a launcher.
#[derive(Debug, Clone)]
pub struct StartContext {
    /// Folder for this server start (`server.log`, `command.txt`, edited deploy copy,
    /// inline files).
    pub dir: PathBuf,
    /// `VLLM_OMNI_STORAGE_PATH` for the server (upstream: `<results>/storage`), unless the
    /// case's `env` or the suite's environment sets it. `None`: not set.
    pub storage_dir: Option<PathBuf>,
    /// Global readiness timeout; a spec's own `ready_timeout` wins.
    pub ready_timeout: Duration,
}

/// Starts servers for specs.
pub trait ServerLauncher {
    /// Short name for listings (`vllm-omni`, `sim`, `attach`, `fake`).
    fn name(&self) -> &str;
    /// Whether this launcher can start `spec` at all (e.g. executable present).
    fn availability(&self, spec: &ServerSpec) -> Result<(), Unavailable>;
    /// Starts a server and waits until it is ready.
    fn start(
        &mut self,
        spec: &ServerSpec,
        ctx: &StartContext,
    ) -> Result<Box<dyn RunningServer>, ServerError>;
    /// Hardware label this launcher implies when no flag and no GPU say otherwise
    /// (`SIM` for the simulator).
    fn implied_hardware(&self) -> Option<&str> {
        None
    }
}

/// A live (or attached) server.
pub trait RunningServer: Send {
    /// `http://host:port` without a trailing slash.
    fn base_url(&self) -> String;
    /// Host part of [`RunningServer::base_url`].
    fn host(&self) -> String;
    /// Port part of [`RunningServer::base_url`].
    fn port(&self) -> u16;
    /// `Some(status)` ("exit status 3", "signal 9 (SIGKILL)") once the process has exited.
    fn exit_status(&mut self) -> Option<ExitStatus>;
    /// The last `lines` lines of the server log ("" when there is none).
    fn log_tail(&self, lines: usize) -> String;
    /// The log file of this start, if any.
    fn log_path(&self) -> Option<PathBuf>;
    /// The process group of a server this machine runs (its leader's pid), for samples
    /// of its resources; `None` for attached or in-process servers.
    fn process_group(&self) -> Option<u32> {
        None
    }
    /// Tears the server down (process group: SIGTERM, grace, SIGKILL, sweep).
    fn stop(self: Box<Self>) -> Result<(), ServerError>;
}

fn is_true(b: &bool) -> bool {
    *b
}
