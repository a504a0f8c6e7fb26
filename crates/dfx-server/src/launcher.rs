//! [`ProcessLauncher`]: starts `vllm-omni serve` / `sgl-omni serve` (or the simulator) as a
//! supervised child in its own process group.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use dfx_core::fsutil::{sanitize_component, write_atomic};
use dfx_core::server::{
    RunningServer, ServeArgs, ServerError, ServerLauncher, ServerSpec, ServerType, StartContext,
    Unavailable,
};

use dfx_core::server::inline;
use serde_json::Value;

use crate::command::{self, CommandInputs, HOST, ServerCommand};
use crate::exe::{self, ExeLookup};
use crate::managed::ManagedServer;
use crate::probe;
use crate::supervise::Supervision;

/// Default SIGTERM→SIGKILL grace (upstream: 15 s for vllm-omni, 30 s for sglang-omni).
pub(crate) const DEFAULT_GRACE: Duration = Duration::from_secs(15);
/// Default grace for sglang-omni.
pub(crate) const SGLANG_GRACE: Duration = Duration::from_secs(30);
/// sglang-omni's readiness floor (upstream default of `SGLANG_OMNI_SERVER_TIMEOUT`).
pub(crate) const SGLANG_READY_TIMEOUT: Duration = Duration::from_secs(1800);

/// How the process launcher finds and supervises servers.
#[derive(Debug, Clone)]
pub struct LauncherConfig {
    /// vllm-omni executable (`--server-bin`); else env `DFX_SERVER_BIN`, then
    /// `VLLM_OMNI_EXECUTABLE`, then `vllm-omni` on PATH.
    pub server_bin: Option<PathBuf>,
    /// sgl-omni executable; else env `SGLANG_OMNI_EXECUTABLE`, then `sgl-omni` on PATH.
    pub sglang_bin: Option<PathBuf>,
    /// When set, every spec (any server type) is launched with this executable in the
    /// vllm-omni command form, and the implied hardware label is `SIM`.
    pub simulator: Option<PathBuf>,
    /// Added to every server's environment (a case's own `env` wins on the same key).
    pub extra_env: BTreeMap<String, String>,
    /// SIGTERM→SIGKILL grace; `None` = 15 s (30 s for sglang-omni).
    pub grace: Option<Duration>,
    /// Readiness poll interval.
    pub poll_interval: Duration,
    /// How often the wait for readiness is reported on stderr (time waited, the log's
    /// last line).
    pub ready_progress: Duration,
    /// Fixed port instead of a free one (refused if something already answers there).
    pub port: Option<u16>,
    /// Deploy folder, where a relative sglang-omni `serve_args.config` is looked up by name
    /// when the repository root does not hold it (default `deploy`, like the config
    /// loader's).
    pub deploy_dir: PathBuf,
    /// Repository root (default `.`): a relative sglang-omni `serve_args.config` is
    /// resolved against it first, and sglang-omni runs there (upstream's adapter).
    pub repo_root: PathBuf,
    /// Guard executable and state folder for every started server (none by default).
    pub supervision: Supervision,
}

impl LauncherConfig {
    /// The default [`LauncherConfig::ready_progress`].
    pub const READY_PROGRESS: Duration = Duration::from_secs(15);
}

impl Default for LauncherConfig {
    fn default() -> Self {
        LauncherConfig {
            server_bin: None,
            sglang_bin: None,
            simulator: None,
            extra_env: BTreeMap::new(),
            grace: None,
            poll_interval: Duration::from_millis(200),
            ready_progress: LauncherConfig::READY_PROGRESS,
            port: None,
            deploy_dir: PathBuf::from("deploy"),
            repo_root: PathBuf::from("."),
            supervision: Supervision::default(),
        }
    }
}

/// sglang-omni's readiness timeout: `SGLANG_OMNI_SERVER_TIMEOUT` seconds (`env`), else
/// upstream's 1800 s, or the suite's `--ready-timeout` when that is longer. The variable is
/// validated with the flags (dfx-harness settings); a value outside the bounds falls back
/// to the default here rather than panicking.
pub fn sglang_ready_timeout(env: Option<&str>, global: Duration) -> Duration {
    env.and_then(|s| s.trim().parse::<f64>().ok())
        .and_then(dfx_core::bounds::timeout)
        .unwrap_or(global.max(SGLANG_READY_TIMEOUT))
}

/// Launches servers as child processes (see the crate docs for the lifecycle).
#[derive(Debug, Clone)]
pub struct ProcessLauncher {
    config: LauncherConfig,
}

impl ProcessLauncher {
    /// A launcher with `config` (nothing is checked or started yet).
    pub fn new(config: LauncherConfig) -> Self {
        ProcessLauncher { config }
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &LauncherConfig {
        &self.config
    }

    /// Whether `spec` is launched with the sgl-omni command form.
    fn sglang_form(&self, spec: &ServerSpec) -> bool {
        spec.server_type == ServerType::SglangOmni && self.config.simulator.is_none()
    }

    /// The executable `spec` would be started with, or why there is none.
    pub fn executable(&self, spec: &ServerSpec) -> Result<PathBuf, Unavailable> {
        let c = &self.config;
        let lookup = if let Some(sim) = &c.simulator {
            ExeLookup {
                program: "dfx-perf-sim",
                configured: Some((sim, "the simulator setting")),
                env_vars: &[],
                hint: "",
            }
        } else if self.sglang_form(spec) {
            ExeLookup {
                program: "sgl-omni",
                configured: c
                    .sglang_bin
                    .as_deref()
                    .map(|p| (p, "the sglang-omni executable setting")),
                env_vars: &["SGLANG_OMNI_EXECUTABLE"],
                hint: "set SGLANG_OMNI_EXECUTABLE or put sgl-omni on PATH",
            }
        } else {
            ExeLookup {
                program: "vllm-omni",
                configured: c.server_bin.as_deref().map(|p| (p, "--server-bin")),
                env_vars: &["DFX_SERVER_BIN", "VLLM_OMNI_EXECUTABLE"],
                hint: "pass --server-bin, set DFX_SERVER_BIN, or put vllm-omni on PATH",
            }
        };
        exe::find(&lookup)
    }

    /// Readiness timeout: the spec's own, else for sglang-omni `SGLANG_OMNI_SERVER_TIMEOUT`
    /// seconds or at least 1800 s, else the global one.
    pub fn ready_timeout(&self, spec: &ServerSpec, ctx: &StartContext) -> Duration {
        if let Some(t) = spec.ready_timeout {
            return t;
        }
        if self.sglang_form(spec) {
            let env = std::env::var("SGLANG_OMNI_SERVER_TIMEOUT").ok();
            return sglang_ready_timeout(env.as_deref(), ctx.ready_timeout);
        }
        ctx.ready_timeout
    }

    /// SIGTERM→SIGKILL grace for `spec`.
    pub fn grace(&self, spec: &ServerSpec) -> Duration {
        self.config.grace.unwrap_or(if self.sglang_form(spec) {
            SGLANG_GRACE
        } else {
            DEFAULT_GRACE
        })
    }

    /// The command `spec` would be started with on `port` (writes the edited deploy copy
    /// into `dir` when there are edits).
    pub fn command(
        &self,
        spec: &ServerSpec,
        port: u16,
        dir: &Path,
    ) -> Result<ServerCommand, ServerError> {
        let exe = self
            .executable(spec)
            .map_err(ServerError::ExecutableMissing)?;
        let deploy_config = match &spec.deploy {
            Some(d) if d.edited => {
                let stem = d.name.trim_end_matches(".yaml").trim_end_matches(".yml");
                let path = dir.join(format!("deploy-{}.yaml", sanitize_component(stem)));
                write_atomic(&path, d.contents.as_bytes())?;
                Some(path)
            }
            Some(d) => Some(d.source.clone()),
            None => None,
        };
        let with_files = write_inline_files(spec, dir)?;
        let spec = with_files.as_ref().unwrap_or(spec);
        let mut cmd = command::build(
            spec,
            CommandInputs {
                exe: &exe,
                port,
                deploy_config: deploy_config.as_deref(),
                deploy_dir: &self.config.deploy_dir,
                repo_root: &self.config.repo_root,
                force_vllm_form: self.config.simulator.is_some(),
            },
        )?;
        for (k, v) in &self.config.extra_env {
            if !spec.env.contains_key(k) {
                cmd.env.insert(k.clone(), v.clone());
            }
        }
        Ok(cmd)
    }

    fn pick_port(&self) -> Result<u16, ServerError> {
        match self.config.port {
            Some(port) if probe::answers(HOST, port, Duration::from_millis(500)) => {
                Err(ServerError::PortInUse {
                    host: HOST.into(),
                    port,
                })
            }
            Some(port) => Ok(port),
            None => Ok(probe::free_port()?),
        }
    }

    /// Starts `spec` and waits until it is ready; the concrete server (with its group id).
    ///
    /// A port we chose ourselves can be taken by another process between our check and the
    /// server's bind; then the server is stopped and started again on another port (at most
    /// [`PORT_RACE_ATTEMPTS`] times). The log of each lost attempt is kept as
    /// `server.port-<port>.log`. A port fixed by configuration is never changed.
    pub fn start_managed(
        &mut self,
        spec: &ServerSpec,
        ctx: &StartContext,
    ) -> Result<ManagedServer, ServerError> {
        std::fs::create_dir_all(&ctx.dir)?;
        let mut attempt = 1;
        loop {
            let port = self.pick_port()?;
            match self.start_on(spec, ctx, port) {
                Err(ServerError::PortInUse { .. })
                    if self.config.port.is_none() && attempt < PORT_RACE_ATTEMPTS =>
                {
                    let kept = ctx.dir.join(format!("server.port-{port}.log"));
                    let _ = std::fs::rename(ctx.dir.join(SERVER_LOG), &kept);
                    tracing::warn!(
                        port,
                        log = %kept.display(),
                        "another process took the port before the server bound it; starting again on another port"
                    );
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// One start of `spec` on `port`, up to readiness.
    fn start_on(
        &mut self,
        spec: &ServerSpec,
        ctx: &StartContext,
        port: u16,
    ) -> Result<ManagedServer, ServerError> {
        let mut cmd = self.command(spec, port, &ctx.dir)?;
        if let Some(storage) = &ctx.storage_dir
            && !cmd.env.contains_key(STORAGE_ENV)
            && std::env::var_os(STORAGE_ENV).is_none()
        {
            std::fs::create_dir_all(storage)?;
            let storage = std::path::absolute(storage).unwrap_or_else(|_| storage.clone());
            cmd.env
                .insert(STORAGE_ENV.into(), storage.display().to_string());
        }
        let line = cmd.shell_line();
        write_atomic(&ctx.dir.join("command.txt"), cmd.describe().as_bytes())?;
        let log_path = ctx.dir.join(SERVER_LOG);
        let log = File::create(&log_path)?;
        tracing::info!(command = %line, env = ?cmd.env_lines(), log = %log_path.display(), "starting server");
        let mut command = std::process::Command::new(&cmd.program);
        if let Some(cwd) = &cmd.cwd {
            command.current_dir(cwd);
        }
        let child = command
            .args(&cmd.args)
            .envs(&cmd.env)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .map_err(|source| ServerError::Spawn {
                command: line,
                source,
            })?;
        let mut server = ManagedServer::adopt(
            child,
            port,
            log_path,
            self.grace(spec),
            &self.config.supervision,
        );
        let every = (self.config.poll_interval, self.config.ready_progress);
        server.wait_ready(self.ready_timeout(spec, ctx), every)?;
        tracing::info!(port, pgid = server.pgid(), "server ready");
        Ok(server)
    }
}

/// The server's stdout and stderr, in the start's folder.
const SERVER_LOG: &str = "server.log";

/// Starts of a server on a port we chose, when other processes keep taking it first.
pub const PORT_RACE_ATTEMPTS: u32 = 3;

/// Where vllm-omni stores generated media; upstream's runner points it at
/// `<results>/storage`.
pub(crate) const STORAGE_ENV: &str = "VLLM_OMNI_STORAGE_PATH";

/// When `serve_args` has `*-inline` keys: a copy of `spec` where each is replaced, in
/// place, by its base key naming the file written into `dir` (`deploy-config-inline` →
/// `deploy-config: <dir>/deploy-config.yaml`). `None` when there are none.
fn write_inline_files(spec: &ServerSpec, dir: &Path) -> Result<Option<ServerSpec>, ServerError> {
    let ServeArgs::Map(map) = &spec.serve_args else {
        return Ok(None);
    };
    if !map.keys().any(|k| k.ends_with(inline::INLINE_SUFFIX)) {
        return Ok(None);
    }
    let mut out = serde_json::Map::new();
    for (k, v) in map {
        match inline::render(k, v) {
            None => {
                out.insert(k.clone(), v.clone());
            }
            Some(Err(why)) => {
                return Err(ServerError::InvalidSpec(format!(
                    "serve_args.{k}: invalid inline file: {why}"
                )));
            }
            Some(Ok(file)) => {
                std::fs::create_dir_all(dir)?;
                let name = format!("{}.{}", sanitize_component(&file.base), file.ext);
                let path = std::path::absolute(dir.join(name))?;
                write_atomic(&path, file.text.as_bytes())?;
                out.insert(file.base, Value::String(path.display().to_string()));
            }
        }
    }
    Ok(Some(ServerSpec {
        serve_args: ServeArgs::Map(out),
        ..spec.clone()
    }))
}

impl ServerLauncher for ProcessLauncher {
    fn name(&self) -> &str {
        if self.config.simulator.is_some() {
            "sim"
        } else {
            "vllm-omni"
        }
    }

    fn availability(&self, spec: &ServerSpec) -> Result<(), Unavailable> {
        self.executable(spec)?;
        if self.sglang_form(spec) {
            let (root, deploy) = (&self.config.repo_root, &self.config.deploy_dir);
            command::sglang_serve_args(&spec.serve_args, root, deploy).map_err(|e| {
                match e {
                    // The only error of sglang_serve_args.
                    ServerError::InvalidSpec(why) => Unavailable::InvalidSpec(why),
                    other => Unavailable::InvalidSpec(other.to_string()),
                }
            })?;
        }
        Ok(())
    }

    fn start(
        &mut self,
        spec: &ServerSpec,
        ctx: &StartContext,
    ) -> Result<Box<dyn RunningServer>, ServerError> {
        Ok(Box::new(self.start_managed(spec, ctx)?))
    }

    fn implied_hardware(&self) -> Option<&str> {
        self.config
            .simulator
            .as_ref()
            .map(|_| dfx_core::hardware::SIM)
    }
}
