//! [`SimOptions`]: everything a simulator instance is started with (raw, as given), and
//! [`SimConfig`]: the same, validated and resolved (profile, deploy file, overrides).

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::SimError;
use crate::deploy::DeploySettings;
use crate::engine::EngineConfig;
use crate::faults::Faults;
use crate::profile::{self, Profile};

/// Options of one simulator instance. Build with [`SimOptions::new`] and the builder
/// methods, or parse a command line with `crate::args::parse`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimOptions {
    /// Positional model id or path (`serve <model>`).
    pub model: String,
    /// `--served-model-name`: the id `/v1/models` reports (default: the model).
    pub served_model_name: Option<String>,
    /// `--host` (default 127.0.0.1).
    pub host: String,
    /// `--port` (default 8000; 0 picks a free port).
    pub port: u16,
    /// `--omni` was given.
    pub omni: bool,
    /// `--deploy-config PATH`.
    pub deploy_config: Option<PathBuf>,
    /// Deploy YAML given inline (in-process use); wins over `deploy_config`.
    #[serde(skip)]
    pub deploy_yaml: Option<String>,
    /// `--stage-overrides JSON`.
    pub stage_overrides: Option<Value>,
    /// `--stage-init-timeout` (recorded only).
    pub stage_init_timeout: Option<f64>,
    /// `--init-timeout` (recorded only).
    pub init_timeout: Option<f64>,
    /// Simulated time runs `speed` times faster than the wall clock (all delays ÷ speed).
    pub speed: f64,
    /// Seed of every random choice (audio lengths, 500 draws).
    pub seed: u64,
    /// `--sim-profile`: force a profile instead of choosing by model name.
    pub profile: Option<String>,
    /// Faults switched on.
    pub faults: Faults,
    /// The command line as received (empty for in-process instances).
    pub argv: Vec<String>,
    /// Flags the simulator does not interpret, recorded in order (`--flag`, value).
    pub extra_flags: Vec<(String, Option<String>)>,
}

impl SimOptions {
    /// Defaults: 127.0.0.1:8000, speed 1, seed 0, no deploy file, no faults.
    pub fn new(model: impl Into<String>) -> Self {
        SimOptions {
            model: model.into(),
            served_model_name: None,
            host: "127.0.0.1".into(),
            port: 8000,
            omni: false,
            deploy_config: None,
            deploy_yaml: None,
            stage_overrides: None,
            stage_init_timeout: None,
            init_timeout: None,
            speed: 1.0,
            seed: 0,
            profile: None,
            faults: Faults::default(),
            argv: Vec::new(),
            extra_flags: Vec::new(),
        }
    }

    /// Sets the speed factor.
    pub fn speed(mut self, speed: f64) -> Self {
        self.speed = speed;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Adds faults from a spec list such as `"error500=0.2,odd-bytes"`.
    pub fn fault(mut self, specs: &str) -> Result<Self, SimError> {
        self.faults.apply_list(specs, "SimOptions::fault")?;
        Ok(self)
    }

    /// Uses a deploy file.
    pub fn deploy_config(mut self, path: impl Into<PathBuf>) -> Self {
        self.deploy_config = Some(path.into());
        self
    }

    /// Uses deploy YAML given as text.
    pub fn deploy_yaml(mut self, yaml: impl Into<String>) -> Self {
        self.deploy_yaml = Some(yaml.into());
        self
    }

    /// Sets `--stage-overrides`.
    pub fn stage_overrides(mut self, overrides: Value) -> Self {
        self.stage_overrides = Some(overrides);
        self
    }

    /// Forces a profile by name (see `profile::NAMES`).
    pub fn profile(mut self, name: impl Into<String>) -> Self {
        self.profile = Some(name.into());
        self
    }

    /// Validates and resolves the options.
    pub fn resolve(&self) -> Result<SimConfig, SimError> {
        SimConfig::resolve(self)
    }
}

/// Validated options: the profile, the effective deploy values and engine parameters.
#[derive(Debug, Clone, Serialize)]
pub struct SimConfig {
    /// The options as given.
    pub options: SimOptions,
    /// The model profile in use.
    pub profile: Profile,
    /// What the deploy file and the overrides said.
    pub deploy: DeploySettings,
    /// The effective model parameters.
    pub engine: EngineConfig,
    /// The omni profile and engine, for omni models (`POST /v1/chat/completions`).
    pub omni: Option<crate::omni::OmniConfig>,
}

/// Speed factor range (the suite's `--sim-speed` bounds: dfx-core's `bounds`).
pub(crate) const MIN_SPEED: f64 = 0.01;
/// See [`MIN_SPEED`].
pub(crate) const MAX_SPEED: f64 = 1_000.0;

impl SimConfig {
    fn resolve(o: &SimOptions) -> Result<SimConfig, SimError> {
        if !(MIN_SPEED..=MAX_SPEED).contains(&o.speed) {
            return Err(SimError::Args(format!(
                "speed factor must be from {MIN_SPEED} to {MAX_SPEED}, got {}",
                o.speed
            )));
        }
        if o.model.trim().is_empty() {
            return Err(SimError::Args("the model (serve <model>) is empty".into()));
        }
        let profile = match &o.profile {
            // An omni profile serves chat; its speech route falls back to `generic`.
            Some(name) if crate::omni::is_omni_profile(name) => profile::for_model("generic"),
            Some(name) => profile::by_name(name).ok_or_else(|| {
                SimError::Args(format!(
                    "unknown profile `{name}`; known: {}, {}",
                    profile::NAMES.join(", "),
                    crate::omni::profile::NAMES.join(", ")
                ))
            })?,
            None => profile::for_model(&o.model),
        };
        let mut deploy = match (&o.deploy_yaml, &o.deploy_config) {
            (Some(y), _) => DeploySettings::from_yaml(y, std::path::Path::new("<inline deploy>"))?,
            (None, Some(p)) => DeploySettings::from_file(p)?,
            (None, None) => DeploySettings::default(),
        };
        if let Some(ov) = &o.stage_overrides {
            deploy.apply_overrides(ov)?;
        }
        let engine = engine_config(&profile, &deploy, o.faults.service_factor());
        let choice = crate::omni::OmniChoice {
            profile: o.profile.as_deref(),
            model: &o.model,
            extra_flags: &o.extra_flags,
        };
        let omni = crate::omni::resolve(choice, &deploy, o.faults.service_factor());
        Ok(SimConfig {
            options: o.clone(),
            profile,
            deploy,
            engine,
            omni,
        })
    }

    /// Names a request's `model` field may use.
    pub(crate) fn model_names(&self) -> Vec<String> {
        let mut v = vec![self.served_name().to_string(), self.options.model.clone()];
        v.dedup();
        v
    }

    /// The id `/v1/models` reports.
    pub(crate) fn served_name(&self) -> &str {
        self.options
            .served_model_name
            .as_deref()
            .unwrap_or(&self.options.model)
    }
}

/// Profile defaults with the deploy values on top.
fn engine_config(p: &Profile, d: &DeploySettings, slowdown: f64) -> EngineConfig {
    let mut talker = p.talker.clone();
    if let Some(n) = d.talker_max_num_seqs {
        talker.max_num_seqs = n;
    }
    let codec = p.codec.clone().map(|mut c| {
        // An explicit stage-1 max_num_seqs means today's code2wav: the running set is
        // decoded as one batch.
        if let Some(n) = d.codec_max_num_seqs {
            c.max_num_seqs = n;
            c.decode_batch = n;
        }
        if let Some(n) = d.left_context_frames {
            c.left_context_frames = n;
        }
        c
    });
    let mut chunking = p.chunking.clone();
    if let Some(n) = d.initial_chunk_frames {
        chunking.initial_frames = n;
    }
    if let Some(n) = d.chunk_frames {
        chunking.chunk_frames = n;
    }
    if let Some(r) = &d.chunk_ramp {
        chunking.ramp = r.clone();
    }
    if let Some(a) = d.async_chunk {
        chunking.async_chunk = a;
    }
    let contention = if d.stages_share_device() {
        p.contention
    } else {
        0.0
    };
    EngineConfig {
        talker,
        codec,
        chunking,
        slowdown,
        contention,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deploy_and_overrides_reach_the_engine() {
        let yaml = include_str!("../tests/data/qwen3_tts.yaml");
        let cfg = SimOptions::new("Qwen/Qwen3-TTS-12Hz-1.7B-Base")
            .deploy_yaml(yaml)
            .stage_overrides(serde_json::json!({"1": {"max_num_seqs": 2}}))
            .resolve()
            .unwrap();
        assert_eq!(cfg.profile.name, "qwen3-tts-1.7b-base");
        assert_eq!(cfg.engine.talker.max_num_seqs, 64);
        assert_eq!(cfg.engine.codec.as_ref().unwrap().max_num_seqs, 2);
        assert_eq!(cfg.engine.codec.as_ref().unwrap().decode_batch, 2);
        let plain = SimOptions::new("Qwen/Qwen3-TTS-12Hz-1.7B-Base")
            .resolve()
            .unwrap();
        let codec = plain.engine.codec.as_ref().unwrap();
        assert_eq!(codec.decode_batch, 1, "stock codec batch");
        assert_eq!(codec.max_num_seqs, 4, "fitted resident requests");
        assert_eq!(
            plain.engine.contention, plain.profile.contention,
            "stages share GPU 0 by default"
        );
        assert!(plain.engine.contention > 0.0);
        let split = SimOptions::new("Qwen/Qwen3-TTS-12Hz-1.7B-Base")
            .stage_overrides(serde_json::json!({"1": {"devices": "1"}}))
            .resolve()
            .unwrap();
        assert_eq!(split.engine.contention, 0.0);
    }

    #[test]
    fn bad_options_are_refused() {
        assert!(SimOptions::new("m").speed(0.0).resolve().is_err());
        let e = SimOptions::new("m").profile("nope").resolve().unwrap_err();
        assert!(e.to_string().contains("voxcpm2"), "{e}");
        let e = SimOptions::new("m")
            .deploy_config("/nonexistent/x.yaml")
            .resolve()
            .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x.yaml"), "{e}");
    }

    #[test]
    fn slowdown_fault_scales_service_times() {
        let cfg = SimOptions::new("m")
            .fault("slowdown=1.5")
            .unwrap()
            .resolve()
            .unwrap();
        assert_eq!(cfg.engine.slowdown, 1.5);
    }
}
