//! Builders for the harness's unit tests: specs, trials and stub benches without a config
//! file.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use dfx_core::baseline::{Direction, Threshold, ThresholdSource, Thresholds};
use dfx_core::bench::{Bench, BenchContext, BenchKind, BenchOutcome, Unsupported};
use dfx_core::plan::{BenchEntry, Dialect, PercentileKeys, SourceRef, StepKind, SweepStep, Trial};
use dfx_core::server::{
    RunningServer, ServeArgs, ServerError, ServerLauncher, ServerSpec, ServerType, StartContext,
    Unavailable,
};
use serde_json::Map;

/// A vllm-omni spec for `model` with nothing else set.
pub fn spec(model: &str) -> ServerSpec {
    ServerSpec {
        server_type: ServerType::VllmOmni,
        model: model.into(),
        deploy: None,
        stage_overrides: None,
        serve_args: ServeArgs::default(),
        extra_cli_args: Vec::new(),
        use_omni: true,
        default_timeouts: true,
        env: BTreeMap::new(),
        ready_timeout: None,
        judge: None,
    }
}

/// An omni-dialect TTS entry with suffix `suffix`.
pub fn entry(suffix: &str) -> BenchEntry {
    BenchEntry {
        index: 0,
        suffix: suffix.into(),
        dialect: Dialect::Omni,
        dataset_name: Some("seed-tts".into()),
        backend: Some("openai-audio-speech".into()),
        endpoint: Some("/v1/audio/speech".into()),
        dataset_path: None,
        seed_tts_locale: Some("en".into()),
        percentiles: PercentileKeys::parse(
            Some("ttft,e2el,audio_rtf,audio_ttfp,audio_duration"),
            None,
        )
        .expect("valid percentile keys"),
        goodput: None,
        extra_body: None,
        num_warmups: None,
        repeats: None,
        capacity: None,
        burstiness: None,
        seed: None,
        task: None,
        eval_phase: None,
        name: None,
        trust_remote_code: false,
        raw: Map::new(),
        case: Default::default(),
        connection: None,
        load: Default::default(),
        runner: Default::default(),
        gates: Default::default(),
    }
}

/// `<test>::<suffix>::<label>` with `n` prompts on spec `A`.
fn trial(test: &str, suffix: &str, kind: StepKind, label: String, n: u64) -> Trial {
    Trial {
        name: format!("{test}::{suffix}::{label}"),
        test_name: test.into(),
        marks: vec!["tts".into()],
        hardware_marks: vec!["H100".into()],
        source: SourceRef {
            file: PathBuf::from("fixture.json"),
            case_index: 0,
            raw_entry_index: 0,
        },
        server: Arc::new(spec("A")),
        entry: Arc::new(entry(suffix)),
        step: SweepStep {
            kind,
            index: 0,
            num_prompts: std::num::NonZeroU64::new(n).unwrap(),
            label,
        },
        thresholds: Thresholds::default(),
        unsupported: None,
    }
}

/// `<test>::<suffix>::c<c>` with `n` prompts on spec `A`.
pub fn concurrency_trial(test: &str, suffix: &str, c: u32, n: u64) -> Trial {
    trial(
        test,
        suffix,
        StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(c).unwrap(),
        },
        format!("c{c}"),
        n,
    )
}

/// `<test>::<suffix>::qps<rate>` with `n` prompts on spec `A`.
pub fn rate_trial(test: &str, suffix: &str, rate: f64, n: u64) -> Trial {
    let label = format!("qps{}", dfx_core::plan::python_float_str(rate));
    trial(
        test,
        suffix,
        StepKind::RequestRate { request_rate: rate },
        label,
        n,
    )
}

/// An inline threshold.
pub fn threshold(metric: &str, value: f64, direction: Direction) -> Threshold {
    Threshold {
        metric: metric.into(),
        value,
        direction,
        source: ThresholdSource::Inline,
    }
}

/// A bench that only answers `supports` (and panics or returns nothing when run, on
/// request).
pub struct StubBench {
    refuse: Option<String>,
    /// `run` panics (a bench that blows up mid-trial).
    pub panic_on_run: bool,
}

impl StubBench {
    /// A bench that runs every entry (and returns an empty outcome).
    pub fn accepting() -> Self {
        StubBench {
            refuse: None,
            panic_on_run: false,
        }
    }

    /// A bench that refuses every entry, saying `why`.
    pub fn refusing(why: &str) -> Self {
        StubBench {
            refuse: Some(why.into()),
            panic_on_run: false,
        }
    }
}

impl Bench for StubBench {
    fn kind(&self) -> BenchKind {
        BenchKind::Vllm
    }

    fn supports(&self, _entry: &BenchEntry) -> Result<(), Unsupported> {
        match &self.refuse {
            Some(why) => Err(Unsupported::InvalidEntry(why.clone())),
            None => Ok(()),
        }
    }

    fn run(&self, _ctx: &BenchContext<'_>) -> BenchOutcome {
        if self.panic_on_run {
            panic!("stub bench exploded");
        }
        BenchOutcome::default()
    }
}

/// Launcher with a fixed unavailability reason.
#[derive(Debug, Clone)]
pub struct UnavailableLauncher {
    /// Name shown in listings (`vllm-omni`, `sim`).
    pub name: String,
    /// Why nothing can be started.
    pub reason: Unavailable,
}

impl ServerLauncher for UnavailableLauncher {
    fn name(&self) -> &str {
        &self.name
    }

    fn availability(&self, _spec: &ServerSpec) -> Result<(), Unavailable> {
        Err(self.reason.clone())
    }

    fn start(
        &mut self,
        _spec: &ServerSpec,
        _ctx: &StartContext,
    ) -> Result<Box<dyn RunningServer>, ServerError> {
        Err(ServerError::ExecutableMissing(self.reason.clone()))
    }
}
