//! The diffusion driver: upstream's own `benchmarks/diffusion/diffusion_benchmark_serving.py`
//! (vllm-omni's repository), run with the argv upstream's `run_diffusion_benchmark.py`
//! builds, one fresh command per sweep step ([`command`]). It runs diffusion-dialect
//! entries only, and only when the user points dfx-perf at the script (`--diffusion-script
//! PATH` / `DFX_DIFFUSION_SCRIPT`, or a checkout with `--vllm-omni-dir DIR` /
//! `DFX_VLLM_OMNI_DIR`). See `crates/dfx-bench/EXTERNAL.md` ("The diffusion driver").
//!
//! The child is supervised like the `vllm bench` child (own process group, guard, state
//! file, time limit), its output goes to `<trial dir>/bench.log`, and its `--output-file`
//! is read as the result (`result`). As upstream, a non-zero exit discards the output
//! file: the harness then writes the template fallback and fails the trial with the exit
//! status and the log tail.

pub mod command;
pub(crate) mod result;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dfx_core::bench::{
    Bench, BenchContext, BenchExit, BenchKind, BenchOutcome, MissingProgram, Unsupported,
};
use dfx_core::plan::{BenchEntry, Dialect};

use super::process;
use super::result::{TAIL_LINES, log_tail};

/// Variable naming the diffusion benchmark script (same as `--diffusion-script`).
pub(crate) const SCRIPT_ENV: &str = "DFX_DIFFUSION_SCRIPT";
/// Variable naming a vllm-omni checkout (same as `--vllm-omni-dir`).
pub(crate) const VLLM_OMNI_DIR_ENV: &str = "DFX_VLLM_OMNI_DIR";
/// Variable naming the Python interpreter (same as `--python`).
pub(crate) const PYTHON_ENV: &str = "DFX_PYTHON";
/// The script's path inside a vllm-omni checkout.
pub const SCRIPT_IN_CHECKOUT: &str = "benchmarks/diffusion/diffusion_benchmark_serving.py";
/// How the child is named in messages (`diffusion benchmark exited with status 1`).
pub(crate) const WHAT: &str = "diffusion benchmark";

/// Settings of the diffusion driver.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffusionSettings {
    /// The script itself; wins over `vllm_omni_dir`.
    pub script: Option<PathBuf>,
    /// A vllm-omni checkout holding [`SCRIPT_IN_CHECKOUT`]; its `tests/` folder is the
    /// child's working folder (upstream's), so fixture paths such as
    /// `dfx/perf/fixtures/….jsonl` resolve.
    pub vllm_omni_dir: Option<PathBuf>,
    /// The interpreter; `None`: `python3` on `PATH`.
    pub python: Option<PathBuf>,
    /// Time limit of one run (default `super::DEFAULT_TIMEOUT`).
    pub timeout: Option<Duration>,
    /// Extra environment of the child.
    pub extra_env: BTreeMap<String, String>,
    /// How the child's process group is supervised.
    pub supervision: dfx_server::Supervision,
}

impl Default for DiffusionSettings {
    fn default() -> Self {
        DiffusionSettings {
            script: None,
            vllm_omni_dir: None,
            python: None,
            timeout: Some(super::DEFAULT_TIMEOUT),
            extra_env: BTreeMap::new(),
            supervision: dfx_server::Supervision::default(),
        }
    }
}

impl DiffusionSettings {
    /// Whether the user pointed dfx-perf at a script at all.
    pub fn configured(&self) -> bool {
        self.script.is_some() || self.vllm_omni_dir.is_some()
    }
}

/// What was resolved once: the interpreter, the script (absolute) and the working folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The Python interpreter, found on `PATH` (`--python`, default `python3`).
    pub python: PathBuf,
    /// The diffusion benchmark script, absolute.
    pub script: PathBuf,
    /// `<checkout>/tests` when it exists, else `None` (the suite's folder).
    pub cwd: Option<PathBuf>,
}

/// The diffusion benchmark driver.
#[derive(Debug, Clone)]
pub struct DiffusionBench {
    settings: DiffusionSettings,
    resolved: Result<Resolved, MissingProgram>,
}

impl DiffusionBench {
    /// Resolves the script (must be a file), the interpreter (an explicit path must be
    /// executable, a bare name is looked up on `PATH`) and the working folder once.
    pub fn new(settings: DiffusionSettings) -> Self {
        let resolved = resolve(&settings);
        DiffusionBench { settings, resolved }
    }

    /// What was resolved, or why the driver cannot run.
    pub fn resolved(&self) -> Result<&Resolved, &MissingProgram> {
        self.resolved.as_ref()
    }

    /// The command of `ctx`'s step (for tests and listings).
    pub fn build_command(
        &self,
        ctx: &BenchContext<'_>,
    ) -> Result<super::BenchCommand, command::CommandError> {
        let r = self.resolved.as_ref().map_err(Clone::clone)?;
        command::build(ctx, r, &self.settings.extra_env)
    }
}

fn resolve(s: &DiffusionSettings) -> Result<Resolved, MissingProgram> {
    let (script, checkout) = match (&s.script, &s.vllm_omni_dir) {
        (Some(p), _) => (p.clone(), checkout_of(p)),
        (None, Some(dir)) => (dir.join(SCRIPT_IN_CHECKOUT), Some(dir.clone())),
        (None, None) => {
            return Err(MissingProgram::NotConfigured {
                what: "diffusion benchmark script",
                hint: format!(
                    "pass --diffusion-script PATH ({SCRIPT_ENV}) or --vllm-omni-dir DIR \
                     ({VLLM_OMNI_DIR_ENV})"
                ),
            });
        }
    };
    if !script.is_file() {
        return Err(MissingProgram::NotAFile {
            what: "diffusion benchmark script",
            path: script,
            check: "--diffusion-script / --vllm-omni-dir",
        });
    }
    let script = std::path::absolute(&script).map_err(|e| MissingProgram::Path(e.to_string()))?;
    let python = s.python.clone().unwrap_or_else(|| PathBuf::from("python3"));
    let python = which::which(&python).map_err(|e| MissingProgram::Unusable {
        what: "Python interpreter",
        path: python.clone(),
        error: e.to_string(),
        check: format!("--python / {PYTHON_ENV}"),
    })?;
    let cwd = checkout
        .map(|c| c.join("tests"))
        .filter(|t| t.is_dir())
        .and_then(|t| std::path::absolute(t).ok());
    Ok(Resolved {
        python,
        script,
        cwd,
    })
}

/// The checkout a script at `<repo>/benchmarks/diffusion/<file>` belongs to.
fn checkout_of(script: &Path) -> Option<PathBuf> {
    let dir = script.parent()?;
    let benchmarks = dir.parent()?;
    (dir.file_name()? == "diffusion" && benchmarks.file_name()? == "benchmarks")
        .then(|| benchmarks.parent().map(Path::to_path_buf))
        .flatten()
}

impl Bench for DiffusionBench {
    fn kind(&self) -> BenchKind {
        BenchKind::Diffusion
    }

    fn supports(&self, entry: &BenchEntry) -> Result<(), Unsupported> {
        if entry.dialect != Dialect::Diffusion {
            return Err(Unsupported::DiffusionDialect {
                dialect: entry.dialect,
            });
        }
        if let Err(why) = &self.resolved {
            return Err(Unsupported::Program(why.clone()));
        }
        if entry.endpoint.is_none() {
            return Err(Unsupported::NoDiffusionEndpoint);
        }
        Ok(())
    }

    fn run(&self, ctx: &BenchContext<'_>) -> BenchOutcome {
        let not_run = |why: BenchExit| BenchOutcome {
            exit: Some(why),
            ..BenchOutcome::default()
        };
        let cmd = match self.build_command(ctx) {
            Ok(c) => c,
            Err(why) => return not_run(BenchExit::NotStarted(why.to_string())),
        };
        let _ = std::fs::remove_file(&cmd.result_path);
        let log_path = ctx.out_dir.join("bench.log");
        tracing::info!(trial = %ctx.trial.name, args = ?cmd.args, "diffusion benchmark");
        let exit = process::run_logged_as(
            WHAT,
            &cmd,
            None,
            &log_path,
            self.settings.timeout,
            &self.settings.supervision,
        );
        let tail = log_tail(&log_path, TAIL_LINES);
        let failure = exit.failure(WHAT);
        let outcome = match (&exit, failure) {
            (process::Exit::Code(0), None) => match result::read(&cmd.result_path) {
                Ok(doc) => BenchOutcome {
                    result: Some(doc),
                    ..BenchOutcome::default()
                },
                Err(e) => not_run(BenchExit::NoResult {
                    program: WHAT,
                    error: e.to_string(),
                }),
            },
            // Upstream discards the output of a failed run.
            (_, failure) => not_run(failure.unwrap_or(BenchExit::Failed { program: WHAT })),
        };
        BenchOutcome {
            log_tail: tail,
            ..outcome
        }
    }
}
