//! External bench: `vllm bench serve --omni`, one fresh command per sweep step
//! (`docs/bench.md` ("External bench")).
//!
//! The command is built the way vllm-omni's DFX perf runner builds it (flag spelling,
//! excluded keys, booleans, compact JSON objects, `--trust-remote-code`, warmups,
//! `--save-result` with the upstream file name), except that every step starts from a
//! fresh argument list (upstream appended each step's flags to the previous step's list).
//! The run's stdout and stderr go to `<out_dir>/bench.log`; its exit status is recorded;
//! the result file is parsed in key order and marked `result_source: "vllm"`. A missing or
//! malformed result file gives `result: None` (the harness writes the template fallback).
//!
//! Decisions (see `EXTERNAL.md`):
//! - `VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE` is set whenever the rate is known (settings
//!   override, else [`dfx_core::models::sample_rate`]), 24 kHz models included, so a value
//!   inherited from the shell cannot skew durations. Upstream never set it, so its VoxCPM2
//!   (48 kHz) durations were doubled.
//! - The token travels only in the child's environment (`OPENAI_API_KEY`); it is in no
//!   argument, no log line, and not in [`VllmBench::command`]'s environment.
//! - Diffusion-dialect entries are [`Unsupported`]: upstream runs them with a different
//!   client (`run_diffusion_benchmark.py` → `diffusion_benchmark_serving.py`).

mod command;
pub mod diffusion;
mod flags;
pub mod parity;
mod process;
mod pyfmt;
mod result;
mod soak;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use dfx_core::bench::{
    Bench, BenchContext, BenchExit, BenchKind, BenchOutcome, MissingProgram, PreflightError,
    Unsupported,
};
use dfx_core::plan::{BenchEntry, Dialect, GoodputSpec, Trial};

pub use command::{BenchCommand, SAMPLE_RATE_ENV, TOKEN_ENV, stamp_now, upstream_file_name};
pub use flags::EXCLUDED_KEYS;
pub use result::{ResultFileError, read_result, request_errors};

/// Environment variable naming the `vllm` executable (same as `--vllm-bin`).
pub(crate) const VLLM_BIN_ENV: &str = "DFX_VLLM_BIN";
/// Environment variable naming the tokenizer (same as `--tokenizer`).
pub(crate) const TOKENIZER_ENV: &str = "DFX_TOKENIZER";
/// Default time limit of one `vllm bench` run.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2 * 3600);

/// Settings of the external bench that do not come from the perf-config.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalSettings {
    /// The `vllm` executable (`--vllm-bin` / `DFX_VLLM_BIN`); a bare name is looked up on
    /// `PATH`. `None`: `vllm` on `PATH`.
    pub vllm_bin: Option<PathBuf>,
    /// Passed as `--tokenizer` (`--tokenizer` / `DFX_TOKENIZER`), unless the entry sets
    /// `tokenizer` itself.
    pub tokenizer: Option<String>,
    /// Name of the environment variable holding the API token. Its value is handed to the
    /// bench as `OPENAI_API_KEY` in the child's environment only: never on argv, never
    /// logged. `None`: the inherited environment is left as is.
    pub auth_token_env: Option<String>,
    /// Output sample rate override; else [`dfx_core::models::sample_rate`] of the model.
    /// Sets `VLLM_OMNI_BENCH_AUDIO_SAMPLE_RATE` when known.
    pub sample_rate: Option<u32>,
    /// Passed as `--seed` unless the entry sets `seed` (vllm's own default is 0).
    pub seed: u64,
    /// Extra environment for the bench process (wins over the sample-rate variable).
    pub extra_env: BTreeMap<String, String>,
    /// Time limit of one run; the process group is killed when it is exceeded.
    /// `None`: no limit. Default `DEFAULT_TIMEOUT`.
    pub timeout: Option<Duration>,
    /// How the bench's process group is supervised (guard, state file) besides the
    /// registry that the suite's signal handler tears down.
    pub supervision: dfx_server::Supervision,
    /// Stability entries: factor applied to `duration_sec` (`--duration-scale`).
    pub duration_scale: f64,
}

impl Default for ExternalSettings {
    fn default() -> Self {
        ExternalSettings {
            vllm_bin: None,
            tokenizer: None,
            auth_token_env: None,
            sample_rate: None,
            seed: 0,
            extra_env: BTreeMap::new(),
            timeout: Some(DEFAULT_TIMEOUT),
            supervision: dfx_server::Supervision::default(),
            duration_scale: 1.0,
        }
    }
}

impl ExternalSettings {
    /// Defaults with `vllm_bin` and `tokenizer` taken from `DFX_VLLM_BIN` and
    /// `DFX_TOKENIZER` when those are set and non-empty.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        ExternalSettings {
            vllm_bin: var(VLLM_BIN_ENV).map(PathBuf::from),
            tokenizer: var(TOKENIZER_ENV),
            ..ExternalSettings::default()
        }
    }
}

/// The `vllm bench serve --omni` driver.
#[derive(Debug, Clone)]
pub struct VllmBench {
    settings: ExternalSettings,
    /// The executable, or why it cannot be used.
    program: Result<PathBuf, MissingProgram>,
}

impl VllmBench {
    /// Resolves the executable once (an explicit path must exist and be executable; a
    /// bare name or the default `vllm` is looked up on `PATH`).
    pub fn new(settings: ExternalSettings) -> Self {
        let program = resolve_program(settings.vllm_bin.as_deref());
        VllmBench { settings, program }
    }

    /// The settings this bench was built with.
    pub fn settings(&self) -> &ExternalSettings {
        &self.settings
    }

    /// The executable, or why the bench cannot run.
    pub fn program(&self) -> Result<&std::path::Path, &MissingProgram> {
        self.program.as_deref()
    }

    /// The program, arguments and extra environment of `ctx`'s step, stamped with the
    /// current time (for `--list` and tests). The token is never part of it.
    pub fn command(
        &self,
        ctx: &BenchContext<'_>,
    ) -> (PathBuf, Vec<String>, BTreeMap<String, String>) {
        let c = self.build_command(ctx, &command::stamp_now());
        (c.program, c.args, c.env)
    }

    /// The full command of `ctx`'s step with `stamp` (`YYYYmmdd-HHMMSS`) in the result
    /// file name, and where the result will be.
    pub fn build_command(&self, ctx: &BenchContext<'_>, stamp: &str) -> BenchCommand {
        self.with_inputs(ctx, stamp, |inputs| command::build(ctx, inputs))
    }

    /// Calls `f` with the command inputs of `ctx` (program, tokenizer, seed, sample rate,
    /// environment) and `stamp`.
    fn with_inputs<T>(
        &self,
        ctx: &BenchContext<'_>,
        stamp: &str,
        f: impl FnOnce(&command::CommandInputs<'_>) -> T,
    ) -> T {
        let fallback = self
            .settings
            .vllm_bin
            .clone()
            .unwrap_or_else(|| PathBuf::from("vllm"));
        let program = self.program.as_ref().unwrap_or(&fallback);
        let model = &ctx.trial.server.model;
        let inputs = command::CommandInputs {
            program,
            tokenizer: self.settings.tokenizer.as_deref(),
            seed: self.settings.seed,
            sample_rate: self
                .settings
                .sample_rate
                .or_else(|| dfx_core::models::sample_rate(model)),
            extra_env: &self.settings.extra_env,
            stamp,
        };
        f(&inputs)
    }

    /// The token's variable name and value, or the reason the run cannot start.
    fn token(&self) -> Result<Option<(String, String)>, BenchExit> {
        let Some(name) = &self.settings.auth_token_env else {
            return Ok(None);
        };
        match std::env::var(name) {
            Ok(v) if !v.is_empty() => Ok(Some((name.clone(), v))),
            _ => Err(BenchExit::TokenMissing { var: name.clone() }),
        }
    }
}

fn resolve_program(bin: Option<&std::path::Path>) -> Result<PathBuf, MissingProgram> {
    match bin {
        Some(p) => which::which(p).map_err(|e| MissingProgram::Unusable {
            what: "vllm executable",
            path: p.to_path_buf(),
            error: e.to_string(),
            check: format!("--vllm-bin / {VLLM_BIN_ENV}"),
        }),
        None => which::which("vllm").map_err(|_| MissingProgram::NotOnPath {
            what: "`vllm` (vllm-omni's bench)",
            hint: format!("install it or pass --vllm-bin / {VLLM_BIN_ENV}"),
        }),
    }
}

impl Bench for VllmBench {
    fn kind(&self) -> BenchKind {
        BenchKind::Vllm
    }

    fn supports(&self, entry: &BenchEntry) -> Result<(), Unsupported> {
        if entry.dialect == Dialect::NativeDuplex {
            return Err(Unsupported::NativeDuplexExternal);
        }
        if entry.dialect == Dialect::Contract {
            return Err(Unsupported::ContractExternal);
        }
        if entry.is_diffusion_soak() {
            return Err(Unsupported::DiffusionSoak);
        }
        if !entry.load.is_upstream() {
            return Err(Unsupported::LoadKeysExternal);
        }
        if entry.dialect == Dialect::Diffusion {
            return Err(Unsupported::DiffusionOnVllm);
        }
        self.program
            .as_ref()
            .map(|_| ())
            .map_err(|why| Unsupported::Program(why.clone()))
    }

    /// `vllm bench serve --goodput` knows `ttft`, `tpot` and `e2el` only (its
    /// `check_goodput_args`): dfx-perf's speech SLOs are refused before any server starts.
    fn preflight(&self, trial: &Trial) -> Result<Option<String>, PreflightError> {
        let speech = trial
            .entry
            .goodput
            .as_ref()
            .and_then(GoodputSpec::first_non_vllm);
        match speech {
            Some(slo) => Err(PreflightError::Goodput(format!(
                "`goodput` SLO `{}` is dfx-perf's, measured by the native bench only: \
                 `vllm bench serve --goodput` accepts ttft, tpot, e2el (run with --bench \
                 native, or drop the SLO)",
                slo.name()
            ))),
            None => Ok(None),
        }
    }

    fn run(&self, ctx: &BenchContext<'_>) -> BenchOutcome {
        let not_run = |why: BenchExit| BenchOutcome {
            exit: Some(why),
            ..BenchOutcome::default()
        };
        if let Err(why) = &self.program {
            return not_run(Unsupported::Program(why.clone()).into());
        }
        let token = match self.token() {
            Ok(t) => t,
            Err(why) => return not_run(why),
        };
        if ctx.trial.entry.dialect == Dialect::Stability {
            return soak::run(self, ctx, token.as_ref());
        }
        let cmd = self.build_command(ctx, &command::stamp_now());
        // A file of the same name can only be stale (same step, same second).
        let _ = std::fs::remove_file(&cmd.result_path);
        let log_path = ctx.out_dir.join("bench.log");
        tracing::info!(trial = %ctx.trial.name, program = %cmd.program.display(), args = ?cmd.args, "vllm bench");
        let secret = token
            .as_ref()
            .map(|(from_var, value)| process::Secret { from_var, value });
        let exit = process::run_logged(
            &cmd,
            secret,
            &log_path,
            self.settings.timeout,
            &self.settings.supervision,
        );
        outcome(exit, &cmd, &log_path)
    }
}

/// Combines how the process ended with what it left.
fn outcome(exit: process::Exit, cmd: &BenchCommand, log_path: &std::path::Path) -> BenchOutcome {
    let log_tail = result::log_tail(log_path, result::TAIL_LINES);
    let failure = exit.failure("vllm bench");
    if let process::Exit::NotStarted(_) = exit {
        return BenchOutcome {
            exit: failure,
            log_tail,
            ..BenchOutcome::default()
        };
    }
    match result::read_result(&cmd.result_path) {
        Ok(doc) => BenchOutcome {
            errors: result::request_errors(&doc),
            result: Some(doc),
            exit: failure,
            log_tail,
            invalid_load: None,
        },
        Err(e) => BenchOutcome {
            exit: Some(failure.unwrap_or_else(|| BenchExit::NoResult {
                program: "vllm bench",
                error: e.to_string(),
            })),
            log_tail,
            ..BenchOutcome::default()
        },
    }
}
