//! `--server fake`: an in-process launcher that starts nothing. Its servers answer to a
//! closed loopback port (only the fake bench can "use" them), write a `server.log` and
//! `command.txt` like a real start, and record every start and stop so tests can check
//! the order. Tests can also make a start fail or a live server "exit".

use std::collections::HashSet;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use dfx_core::server::{
    ExitStatus, RunningServer, ServerError, ServerLauncher, ServerSpec, StartContext, Unavailable,
};

/// One start or stop, identified by the spec's model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeEvent {
    /// A server for this model started.
    Start(String),
    /// The server of this model stopped.
    Stop(String),
}

/// Shared between the launcher, its servers and the test that inspects them.
#[derive(Debug, Default)]
pub struct FakeState {
    events: Mutex<Vec<FakeEvent>>,
    /// Server ids that "exited".
    exited: Mutex<HashSet<usize>>,
    next_id: Mutex<usize>,
    /// Starts of models containing this string fail.
    fail_start: Mutex<Option<String>>,
}

impl FakeState {
    /// Every start and stop so far, in order.
    pub fn events(&self) -> Vec<FakeEvent> {
        lock(&self.events).clone()
    }

    /// Makes the most recently started server report `exit status 137`.
    pub fn kill_latest(&self) {
        let id = *lock(&self.next_id);
        lock(&self.exited).insert(id);
    }

    /// Makes every later start of a model containing `model_part` fail.
    pub fn fail_starts_of(&self, model_part: &str) {
        *lock(&self.fail_start) = Some(model_part.to_string());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The fake launcher.
#[derive(Debug, Clone, Default)]
pub struct FakeLauncher {
    state: Arc<FakeState>,
}

impl FakeLauncher {
    /// A launcher whose every start succeeds.
    pub fn new() -> Self {
        Self::default()
    }

    /// A launcher steered by the environment: `DFX_FAKE_SERVER_FAIL_START=<model part>`
    /// makes starts of matching models fail (for end-to-end tests of the suite binary).
    pub fn from_env() -> Self {
        let launcher = Self::new();
        if let Ok(part) = std::env::var("DFX_FAKE_SERVER_FAIL_START")
            && !part.is_empty()
        {
            launcher.state.fail_starts_of(&part);
        }
        launcher
    }

    /// The state to inspect or steer from a test.
    pub fn state(&self) -> Arc<FakeState> {
        self.state.clone()
    }
}

impl ServerLauncher for FakeLauncher {
    fn name(&self) -> &str {
        "fake"
    }

    fn availability(&self, _spec: &ServerSpec) -> Result<(), Unavailable> {
        Ok(())
    }

    fn start(
        &mut self,
        spec: &ServerSpec,
        ctx: &StartContext,
    ) -> Result<Box<dyn RunningServer>, ServerError> {
        let id = {
            let mut n = lock(&self.state.next_id);
            *n += 1;
            *n
        };
        let command = format!("fake (in-process) serve {} --omni", spec.model);
        std::fs::write(ctx.dir.join("command.txt"), format!("{command}\n"))?;
        let log = ctx.dir.join("server.log");
        let fail = lock(&self.state.fail_start)
            .as_ref()
            .is_some_and(|part| spec.model.contains(part.as_str()));
        if fail {
            std::fs::write(&log, "fake server: refusing to start (test seam)\n")?;
            return Err(ServerError::ExitedBeforeReady {
                status: ExitStatus::Code(1),
                log,
                log_tail: "fake server: refusing to start (test seam)".into(),
            });
        }
        std::fs::write(
            &log,
            format!("fake server {id} for {}: ready\n", spec.model),
        )?;
        lock(&self.state.events).push(FakeEvent::Start(spec.model.clone()));
        Ok(Box::new(FakeServer {
            id,
            port: closed_port(),
            model: spec.model.clone(),
            log,
            state: self.state.clone(),
        }))
    }
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(9)
}

struct FakeServer {
    id: usize,
    port: u16,
    model: String,
    log: PathBuf,
    state: Arc<FakeState>,
}

impl RunningServer for FakeServer {
    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn host(&self) -> String {
        "127.0.0.1".into()
    }

    fn port(&self) -> u16 {
        self.port
    }

    fn exit_status(&mut self) -> Option<ExitStatus> {
        lock(&self.state.exited)
            .contains(&self.id)
            .then_some(ExitStatus::Code(137))
    }

    fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    fn log_path(&self) -> Option<PathBuf> {
        Some(self.log.clone())
    }

    fn stop(self: Box<Self>) -> Result<(), ServerError> {
        lock(&self.state.events).push(FakeEvent::Stop(self.model.clone()));
        Ok(())
    }
}
