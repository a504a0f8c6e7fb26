//! The validated plan: what the suite will run, in order. Built only by
//! [`crate::config::load_plan`]; nothing downstream re-validates it.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::baseline::Thresholds;
use crate::server::ServerSpec;

pub use crate::goodput::GoodputSpec;
pub use crate::load::{Cohort, LoadShape, LoadSpec, Saturation};
pub use crate::percentiles::PercentileKeys;
pub use crate::runner_keys::{ContractKeys, DuplexKeys, RunnerKeys, SoakKeys};
pub use crate::step::{StepKind, SweepStep, python_float_str};

/// Every trial of every selected config file, in plan order (file order, then case order
/// with cases sharing a `test_name` concatenated at the position of the first one, then
/// entry order, then QPS steps before concurrency steps).
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Trials in the order they run.
    pub trials: Vec<Trial>,
    /// Warnings found while loading that are not errors (e.g. a hardware-nested baseline
    /// without a bucket for the current hardware label).
    pub warnings: Vec<String>,
    /// Hardware labels the loaded configs (hardware-nested baselines, `hardware_marks`)
    /// and baseline stores (`baselines/<label>.json`) name, sorted, each once: with the
    /// built-in ones, the labels a run may use ([`crate::hardware::check_label`]).
    pub hardware_labels: Vec<String>,
}

/// Where a trial came from, for error messages and listings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceRef {
    /// The config file.
    pub file: PathBuf,
    /// Index of the case object in that file's top-level array.
    pub case_index: usize,
    /// Index of the entry in that case's `benchmark_params` as written (disabled entries
    /// included), so the user can find it in the file.
    pub raw_entry_index: usize,
}

/// Which dialect an entry was written in (`docs/config.md` ("Dialects")).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// vllm-omni omni/TTS dialect (snake_case entry keys).
    Omni,
    /// Diffusion dialect (kebab-case entry keys, image/video generation).
    Diffusion,
    /// Upstream's native-duplex runner (`"benchmark_runner": "native-duplex"`): realtime
    /// duplex sessions, no sweep keys.
    NativeDuplex,
    /// Upstream's stability runner (soak entries with `duration_sec`).
    Stability,
    /// dfx-perf's own `contract` runner (`"benchmark_runner": "contract"`): API contract
    /// scenarios against the server under test, one trial per entry, no sweep.
    Contract,
}

/// One benchmark entry of a test, after `enabled: false` entries were dropped.
/// Shared by all of its sweep steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchEntry {
    /// Index among the enabled entries of its test (concatenated across cases).
    pub index: usize,
    /// The entry's identity inside its test: `name`, else `task_eval_phase_dataset`,
    /// else `case<idx>`, deduplicated with `_1`, `_2`, ….
    pub suffix: String,
    /// The dialect the entry was written in; decides which bench and runner take it.
    pub dialect: Dialect,
    /// `dataset_name` (diffusion dialect: `dataset`), e.g. `seed-tts`, `random-mm`.
    pub dataset_name: Option<String>,
    /// `backend`: the request protocol (`openai-audio-speech`, `openai-chat-omni`, a
    /// realtime backend).
    pub backend: Option<String>,
    /// `endpoint`: the request path (diffusion: the case's `benchmark_endpoint` or the
    /// task's default).
    pub endpoint: Option<String>,
    /// `dataset_path`: where the dataset's files are, as written.
    pub dataset_path: Option<String>,
    /// `seed_tts_locale`: the Seed-TTS prompt locale; the native bench defaults to `en`.
    pub seed_tts_locale: Option<String>,
    /// `percentile-metrics` / `percentile_metrics` and `metric-percentiles` /
    /// `metric_percentiles`, parsed at load (a bad percentile is a config error).
    pub percentiles: PercentileKeys,
    /// `goodput`: the SLOs a request must meet to count as good, parsed at load
    /// ([`crate::goodput`]); `None` when the entry has none.
    pub goodput: Option<GoodputSpec>,
    /// `extra_body`: fields merged into every request body.
    pub extra_body: Option<Map<String, Value>>,
    /// `num_warmups` override (metadata, never a bench flag).
    pub num_warmups: Option<u32>,
    /// `repeats` (dfx-perf key): runs of each sweep step on the same server; `None` when
    /// the entry does not say (the suite flag `--repeats` wins over it, default 1).
    pub repeats: Option<NonZeroU32>,
    /// `burstiness`: shape of the Gamma arrival gaps (1.0, the native default, is Poisson).
    pub burstiness: Option<f64>,
    /// `seed`: the entry's random seed; `None` falls back to the suite's `--seed`.
    pub seed: Option<u64>,
    /// `task` (`voice_clone`, diffusion `t2i`); part of the default suffix and, for
    /// diffusion, of the endpoint.
    pub task: Option<String>,
    /// `eval_phase`; part of the default suffix.
    pub eval_phase: Option<String>,
    /// `name`: the entry's explicit suffix, when set.
    pub name: Option<String>,
    /// From the case's `server_params.trust_remote_code`: adds `--trust-remote-code` to
    /// the external bench command.
    pub trust_remote_code: bool,
    /// The entry exactly as written (key order preserved), for the external bench, which
    /// turns every non-excluded key into a flag.
    pub raw: Map<String, Value>,
    /// Keys of the entry's case that bear on how it runs and is judged.
    pub case: CaseKeys,
    /// `connection` (dfx-perf key, native bench only): fresh or pooled connections.
    /// `None` when the entry does not say; the suite flag `--connection` wins over it.
    pub connection: Option<ConnectionMode>,
    /// Load shape, open-loop cap and saturation gate of the entry's request-rate steps
    /// (dfx-perf keys, native bench only; default: upstream's schedule, no cap).
    pub load: LoadSpec,
    /// `capacity` (dfx-perf key): search the highest open-loop rate meeting these
    /// criteria instead of sweeping; the entry is one trial labelled `capacity`.
    pub capacity: Option<CapacitySpec>,
    /// Keys of the contract, stability and native-duplex runners, parsed at load
    /// ([`RunnerKeys::None`] for sweep entries).
    pub runner: RunnerKeys,
    /// Upstream's runner checks of the entry's results, parsed at load.
    pub gates: ResultGates,
}

/// Upstream's runner checks of an entry's results (runner-only keys, never bench flags),
/// parsed at load so that a mistyped value is a config error rather than a skipped check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ResultGates {
    /// `expected_duplex_audio_turns_per_session`: every session of a realtime duplex step
    /// must report this many audio turns (in `duplex_session_metrics`).
    pub expected_duplex_turns: Option<u64>,
    /// `omniinteract_min_ia_qtf1`: the floor of the OmniInteract subset's IA-QTF1 score.
    pub min_ia_qtf1: Option<f64>,
}

/// A capacity search (`capacity` entry key, checked at load): the highest open-loop
/// arrival rate at which every request completes, `audio_continuity_ok_rate` stays at
/// least `min_continuity` and `p99_audio_ttfp_ms` at most `max_p99_ttfp_ms`, found by
/// bracketing from `start_rate` (doubling / halving within `[min_rate, max_rate]`) and
/// bisecting until the bracket is narrower than `tolerance` (relative), the boundary
/// confirmed by `boundary_repeats` repeats, in at most `max_probes` probes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CapacitySpec {
    /// Ceiling of `p99_audio_ttfp_ms` at an accepted rate, milliseconds (required, > 0).
    pub max_p99_ttfp_ms: f64,
    /// Floor of `audio_continuity_ok_rate` at an accepted rate, a fraction in `[0, 1]`
    /// (default 0.95).
    pub min_continuity: f64,
    /// First rate probed, requests per second (default 1.0).
    pub start_rate: f64,
    /// Lowest rate the bracket may reach, requests per second (default 0.01).
    pub min_rate: f64,
    /// Highest rate the bracket may reach, requests per second (default 1024).
    pub max_rate: f64,
    /// Relative bracket width at which bisection stops, in `[0.01, 1]` (default 0.1).
    pub tolerance: f64,
    /// Repeats confirming the boundary rate, 1 to 20 (default 3).
    pub boundary_repeats: NonZeroU32,
    /// Most probes the search may run, 4 to 64 (default 24).
    pub max_probes: u32,
}

/// How the native bench's requests get their TCP connections (`--connection`, entry key
/// `connection`). `vllm bench serve --omni` opens a new connection per request
/// (`force_close=True` in its aiohttp connector), so its TTFP includes a connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionMode {
    /// A new TCP connection per request, closed after its response (upstream's client;
    /// the connect is inside TTFP and recorded as `connect_s`).
    Fresh,
    /// Idle HTTP/1.1 connections are kept and reused (the warmups open them).
    Pooled,
}

impl ConnectionMode {
    /// The default when neither the flag nor the entry says: fresh, as the upstream client
    /// that recorded the shipped baselines (`docs/bench.md` ("Connections")).
    pub const DEFAULT: ConnectionMode = ConnectionMode::Fresh;
    /// Accepted spellings, for error messages.
    pub const ACCEPTED: &str = "\"fresh\" or \"pooled\"";

    /// Parses `fresh` / `pooled` (exactly, lowercase).
    pub fn parse(s: &str) -> Option<ConnectionMode> {
        match s {
            "fresh" => Some(ConnectionMode::Fresh),
            "pooled" => Some(ConnectionMode::Pooled),
            _ => None,
        }
    }

    /// `fresh` / `pooled`: the spelling `parse` accepts.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionMode::Fresh => "fresh",
            ConnectionMode::Pooled => "pooled",
        }
    }

    /// The mode a run uses: the flag (`--connection`) wins over the entry's key, which
    /// wins over [`ConnectionMode::DEFAULT`].
    pub fn resolve(flag: Option<ConnectionMode>, entry: Option<ConnectionMode>) -> ConnectionMode {
        flag.or(entry).unwrap_or(ConnectionMode::DEFAULT)
    }
}

/// Case-level keys an entry needs (validated at load).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CaseKeys {
    /// `benchmark_endpoint` (legacy `benchmark_backend`) as written: the diffusion
    /// endpoint of every entry of the case.
    pub benchmark_endpoint: Option<String>,
    /// `omniinteract_aggregate_min_ia_qtf1`: the floor of the IA-QTF1 pooled over every
    /// evaluated OmniInteract subset of the test.
    pub omniinteract_aggregate_min_ia_qtf1: Option<f64>,
    /// With that floor: the `omniinteract_subsets` of every entry of the case with
    /// `omniinteract_evaluate` (checked at load: non-empty strings, no duplicates), whose
    /// counts are pooled once each has a result.
    pub omniinteract_aggregate_subsets: Vec<String>,
}

impl BenchEntry {
    /// Warmup requests before `step`'s measured ones, the one rule both benches follow:
    /// the entry's `num_warmups`, else 2 for rate steps and `max(2, max_concurrency)` for
    /// concurrency steps (upstream moved to this because 2 warmups at c=4 let cold batches
    /// into the measurement). Bounded at load by `crate::bounds::MAX_WARMUPS`.
    pub fn warmups(&self, step: &SweepStep) -> u32 {
        self.num_warmups.unwrap_or(match step.kind {
            StepKind::RequestRate { .. } => 2,
            StepKind::Concurrency { max_concurrency } => max_concurrency.get().max(2),
        })
    }

    /// Whether this is a diffusion soak: a stability entry for a diffusion server (its
    /// case names a `benchmark_endpoint`, or it writes the diffusion script's kebab-case
    /// keys such as `max-concurrency`, `random-request-config`). Upstream soaks those with
    /// `diffusion_benchmark_serving.py` batches; no bench of dfx-perf runs them.
    pub fn is_diffusion_soak(&self) -> bool {
        self.dialect == Dialect::Stability
            && (self.case.benchmark_endpoint.is_some()
                || crate::diffusion_keys::is_diffusion_entry(&self.raw, &[]))
    }

    /// How many times each step of this entry runs: the flag (`--repeats`) wins over the
    /// entry's key, default 1. Soaks and native-duplex entries always run once (a soak
    /// is its own duration; the native-duplex runner has its own `repeats`; a contract
    /// trial checks replies, it measures nothing).
    pub fn repeats(&self, flag: Option<NonZeroU32>) -> NonZeroU32 {
        match self.dialect {
            Dialect::Stability | Dialect::NativeDuplex | Dialect::Contract => NonZeroU32::MIN,
            // Neither the flag nor the key given: the step runs once.
            Dialect::Omni | Dialect::Diffusion => flag.or(self.repeats).unwrap_or(NonZeroU32::MIN),
        }
    }

    /// `seed_tts_wer_eval: true`: keep each request's audio for a quality evaluation (WER,
    /// SIM, UTMOS). The key is checked to be a boolean at load.
    pub fn seed_tts_wer_eval(&self) -> bool {
        self.raw.get("seed_tts_wer_eval") == Some(&Value::Bool(true))
    }
}

/// One test of the suite binary: one sweep step of one entry of one test.
#[derive(Debug, Clone)]
pub struct Trial {
    /// `<test_name>::<suffix>::<step>`, unique in the plan.
    pub name: String,
    /// The case's `test_name` (cases sharing one form one test).
    pub test_name: String,
    /// Selection tags from the case's `mark` (strings only).
    pub marks: Vec<String>,
    /// Hardware marks of the case (`res` values such as `H100`, `A3`), informational.
    pub hardware_marks: Vec<String>,
    /// The file, case and entry the trial was read from.
    pub source: SourceRef,
    /// The server this trial needs; trials with equal specs share a live server.
    pub server: Arc<ServerSpec>,
    /// The entry, shared by all of its steps.
    pub entry: Arc<BenchEntry>,
    /// This trial's load: its sweep step.
    pub step: SweepStep,
    /// Thresholds resolved for the run's hardware label.
    pub thresholds: Thresholds,
    /// When set, the trial cannot run at all (e.g. diffusion dialect) and is listed as
    /// ignored with this reason.
    pub unsupported: Option<String>,
}

#[cfg(test)]
mod connection_tests {
    use super::ConnectionMode::{self, Fresh, Pooled};

    #[test]
    fn the_flag_wins_over_the_entry_which_wins_over_the_default() {
        assert_eq!(ConnectionMode::resolve(None, None), Fresh);
        assert_eq!(ConnectionMode::resolve(None, Some(Pooled)), Pooled);
        assert_eq!(ConnectionMode::resolve(Some(Fresh), Some(Pooled)), Fresh);
        assert_eq!(ConnectionMode::resolve(Some(Pooled), Some(Fresh)), Pooled);
        assert_eq!(ConnectionMode::parse("pooled"), Some(Pooled));
        assert_eq!(ConnectionMode::parse("Pooled"), None);
    }
}
