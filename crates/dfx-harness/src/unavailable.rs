//! A launcher that can start nothing and says why: used when the configured server
//! program cannot be found or is not built in, so every trial is listed as ignored (or
//! failed under `--assert-baseline`) with that reason.

use dfx_core::server::{
    RunningServer, ServerError, ServerLauncher, ServerSpec, StartContext, Unavailable,
};

/// Launcher with a fixed unavailability reason.
#[derive(Debug, Clone)]
pub struct UnavailableLauncher {
    /// Name shown in listings (`vllm-omni`, `sim`).
    pub name: String,
    /// Why nothing can be started.
    pub reason: String,
}

impl ServerLauncher for UnavailableLauncher {
    fn name(&self) -> &str {
        &self.name
    }

    fn availability(&self, _spec: &ServerSpec) -> Result<(), Unavailable> {
        Err(Unavailable(self.reason.clone()))
    }

    fn start(
        &mut self,
        _spec: &ServerSpec,
        _ctx: &StartContext,
    ) -> Result<Box<dyn RunningServer>, ServerError> {
        Err(ServerError::ExecutableMissing(self.reason.clone()))
    }
}
