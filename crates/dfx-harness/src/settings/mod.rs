//! Validation of the raw command line ([`crate::cli::SuiteArgs`]) into the
//! [`SuiteConfig`] the rest of the harness uses. Nothing downstream re-validates flags.

use std::fmt;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod bench;
mod error;
mod flags;
mod project;

pub(crate) use bench::BenchOptions;
pub(crate) use error::SetupError;
pub(crate) use flags::known_hardware;
use flags::{
    check_hardware, check_mark, check_ready_timeout, check_sim_speed, gpu_price_flag, history_flag,
    partition_flag,
};
pub use project::{FakeKnobError, Project, TestSeams};

use dfx_core::bounds::{self, MAX_TIMEOUT_SECONDS};

use crate::cli::{FlagRecord, Parsed, ServerMode};

/// How servers are obtained.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ServerChoice {
    /// Real executables; `server_bin` overrides `vllm-omni` on PATH.
    Auto { server_bin: Option<PathBuf> },
    /// The simulator binary with its options.
    Sim {
        speed: Option<f64>,
        faults: Option<String>,
    },
    /// In-process fake (test seam).
    Fake,
    /// An already running server.
    Attach { url: String },
}

impl ServerChoice {
    /// Short name for listings and run.json.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            ServerChoice::Auto { .. } => "auto",
            ServerChoice::Sim { .. } => "sim",
            ServerChoice::Fake => "fake",
            ServerChoice::Attach { .. } => "attach",
        }
    }
}

/// The validated suite configuration.
#[derive(Debug, Clone)]
pub(crate) struct SuiteConfig {
    /// libtest flags, with `test_threads` forced to 1 (trials run one at a time).
    pub libtest: libtest_mimic::Arguments,
    pub assert_baseline: bool,
    /// `--require-thresholds`: a trial without a threshold for the hardware fails.
    pub require_thresholds: bool,
    /// Config files in load order.
    pub config_files: Vec<PathBuf>,
    pub mark: Option<String>,
    /// `--hardware` as given (detection happens once the launcher is known).
    pub hardware: Option<String>,
    pub results_dir: PathBuf,
    pub server: ServerChoice,
    pub ready_timeout: Duration,
    pub bench: BenchOptions,
    pub deploy_dir: PathBuf,
    pub baselines_dir: PathBuf,
    /// `--upstream-results-dir`: a flat folder that also gets each result under
    /// upstream's file name.
    pub upstream_results_dir: Option<PathBuf>,
    /// `--history`: where each run is added when it ends.
    pub history: Option<dfx_history::HistorySpec>,
    /// `--quality-cmd`: the evaluator of `seed_tts_wer_eval` entries' kept audio.
    pub quality_cmd: Option<String>,
    /// `--repeats`: runs of each sweep step (1 to [`dfx_core::bounds::MAX_REPEATS`]).
    pub repeats: Option<NonZeroU32>,
    /// `--gpu-hour-price`: a positive finite price.
    pub gpu_hour_price: Option<f64>,
    pub list_verbose: bool,
    /// `--partition`: the one shard of the plan this run executes.
    pub partition: Option<crate::partition::Partition>,
    /// Every dfx-perf flag with a value and where it came from (run.json).
    pub flags: Vec<FlagRecord>,
    /// Non-fatal remarks about the flags (printed on stderr).
    pub notes: Vec<String>,
}

/// A flag whose value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlagError {
    /// `--sim-speed`.
    pub flag: &'static str,
    /// `DFX_SIM_SPEED`.
    pub env: &'static str,
    pub value: String,
    pub problem: String,
    pub accepted: String,
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid value `{}` for {} ({}): {} (accepted: {})",
            self.value, self.flag, self.env, self.problem, self.accepted
        )
    }
}

/// Every problem found in the flags.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) struct FlagErrors(pub Vec<FlagError>);

impl fmt::Display for FlagErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "error: {e}")?;
        }
        Ok(())
    }
}

impl SuiteConfig {
    /// Validates the parsed command line. Relative paths given by the user are taken as
    /// they are (relative to the working directory, which `cargo test` sets to the
    /// repository root); defaults are anchored at `project.root`.
    pub(crate) fn from_parsed(
        parsed: Parsed,
        project: &Project,
    ) -> Result<SuiteConfig, FlagErrors> {
        let Parsed { args, provenance } = parsed;
        let s = args.suite;
        let mut errors = Vec::new();
        let mut notes = Vec::new();

        let mut libtest = args.libtest.to_arguments();
        if libtest.test_threads.is_some_and(|n| n != 1) {
            notes.push("trials run one at a time: --test-threads is ignored".into());
        }
        libtest.test_threads = Some(1);
        let list_verbose = s.list_verbose || (s.verbose && libtest.list);

        project::check_root_given(s.root.as_deref(), &mut errors);
        let config_files = config_files(&s.test_config_file, &project.root, &mut errors);
        check_hardware(s.hardware.as_deref(), &mut errors);
        check_executable(&s.server_bin, "--server-bin", "DFX_SERVER_BIN", &mut errors);
        let bench = BenchOptions::from_flags(&s, |k| std::env::var(k).ok(), &mut errors);
        check_sim_speed(s.sim_speed, &mut errors);
        check_ready_timeout(s.ready_timeout, &mut errors);
        check_sim_faults(s.sim_faults.as_deref(), &mut errors);
        check_sglang_timeout(
            std::env::var("SGLANG_OMNI_SERVER_TIMEOUT").ok(),
            &mut errors,
        );
        let history = history_flag(s.history.as_deref(), &mut errors);
        let server = server_choice(&s, &mut errors, &mut notes);
        check_mark(s.mark.as_deref(), &mut errors);
        let partition = partition_flag(s.partition.as_deref(), &mut errors);
        let repeats = repeats_flag(s.repeats, &mut errors);
        let gpu_hour_price = gpu_price_flag(s.gpu_hour_price, &mut errors);
        if !errors.is_empty() {
            return Err(FlagErrors(errors));
        }
        Ok(SuiteConfig {
            libtest,
            assert_baseline: s.assert_baseline,
            require_thresholds: s.require_thresholds,
            config_files,
            mark: s.mark,
            hardware: s.hardware,
            results_dir: s
                .results_dir
                .unwrap_or_else(|| default_results_dir(&project.root)),
            server,
            ready_timeout: Duration::from_secs(s.ready_timeout),
            bench,
            deploy_dir: s.deploy_dir.unwrap_or_else(|| project.root.join("deploy")),
            baselines_dir: s
                .baselines_dir
                .unwrap_or_else(|| project.root.join("baselines")),
            history,
            quality_cmd: s.quality_cmd.clone().filter(|c| !c.trim().is_empty()),
            repeats,
            gpu_hour_price,
            upstream_results_dir: s.upstream_results_dir.clone(),
            list_verbose,
            partition,
            flags: provenance,
            notes,
        })
    }
}

/// `--repeats`: 1 to [`dfx_core::bounds::MAX_REPEATS`].
fn repeats_flag(n: Option<u32>, errors: &mut Vec<FlagError>) -> Option<NonZeroU32> {
    let max = dfx_core::bounds::MAX_REPEATS;
    match n.map(|k| (k, NonZeroU32::new(k))) {
        Some((_, Some(k))) if u64::from(k.get()) <= max => Some(k),
        Some((k, _)) => {
            let accepted = format!("an integer from 1 to {max}");
            errors.push(err(
                "--repeats",
                "DFX_REPEATS",
                k,
                "not a usable count",
                &accepted,
            ));
            None
        }
        None => None,
    }
}

fn err(
    flag: &'static str,
    env: &'static str,
    value: impl fmt::Display,
    problem: &str,
    accepted: &str,
) -> FlagError {
    FlagError {
        flag,
        env,
        value: value.to_string(),
        problem: problem.into(),
        accepted: accepted.into(),
    }
}

/// `--sim-faults` and the `DFX_SIM_FAULT*` variables (which reach the simulator through
/// its environment) are parsed with the simulator's own parser, so a bad spec stops the
/// run before a server starts.
fn check_sim_faults(flag: Option<&str>, errors: &mut Vec<FlagError>) {
    let mut faults = dfx_core::faults::Faults::default();
    if let Some(list) = flag
        && let Err(e) = faults.apply_list(list, "--sim-faults")
    {
        errors.push(err(
            "--sim-faults",
            "DFX_SIM_FAULTS",
            list,
            &e.reason.to_string(),
            &fault_syntax(),
        ));
    }
    if let Err(e) = faults.apply_env(&|k| std::env::var(k).ok()) {
        errors.push(FlagError {
            flag: "--sim-faults",
            env: "DFX_SIM_FAULT_*",
            value: e.spec,
            problem: format!("{} (from {})", e.reason, e.origin),
            accepted: fault_syntax(),
        });
    }
}

fn fault_syntax() -> String {
    format!(
        "SPEC[,SPEC…] with SPEC one of {}",
        dfx_core::faults::FAULT_NAMES.join(", ")
    )
}

/// `SGLANG_OMNI_SERVER_TIMEOUT` (sglang-omni's readiness timeout, read by dfx-server).
fn check_sglang_timeout(value: Option<String>, errors: &mut Vec<FlagError>) {
    let Some(v) = value.filter(|v| !v.trim().is_empty()) else {
        return;
    };
    if v.trim()
        .parse::<f64>()
        .ok()
        .and_then(bounds::timeout)
        .is_none()
    {
        errors.push(FlagError {
            flag: "--ready-timeout",
            env: "SGLANG_OMNI_SERVER_TIMEOUT",
            value: v,
            problem: "not a usable readiness timeout for sglang-omni".into(),
            accepted: format!("seconds > 0 and at most {MAX_TIMEOUT_SECONDS}"),
        });
    }
}

/// `a:b` entries are split too (the env var is a PATH-like list).
fn split_paths(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .flat_map(|p| {
            p.to_string_lossy()
                .split(':')
                .filter(|s| !s.trim().is_empty())
                .map(|s| PathBuf::from(s.trim()))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn config_files(given: &[PathBuf], root: &Path, errors: &mut Vec<FlagError>) -> Vec<PathBuf> {
    let given = split_paths(given);
    if !given.is_empty() {
        // Unreadable files are reported by the config loader with the other config errors.
        return given;
    }
    let dir = root.join("perf-configs");
    if !dir.is_dir() {
        // A `--root` that is no folder at all is reported once, by `check_root_given`.
        if !errors.iter().any(|e| e.flag == "--root") {
            errors.push(project::no_configs_folder(root, &dir));
        }
        return Vec::new();
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        errors.push(err(
            "--test-config-file",
            "DFX_TEST_CONFIG_FILE",
            "",
            &format!("no file given and no *.json in {}", dir.display()),
            "paths of perf-config JSON files",
        ));
    }
    files
}

fn check_executable(
    path: &Option<PathBuf>,
    flag: &'static str,
    env: &'static str,
    errors: &mut Vec<FlagError>,
) {
    // A bare name is looked up on PATH by the launcher / bench (and reported there).
    if let Some(p) = path
        && p.components().count() > 1
        && !p.is_file()
    {
        errors.push(err(
            flag,
            env,
            p.display(),
            "no such file",
            "the path of an executable file",
        ));
    }
}

fn server_choice(
    s: &crate::cli::SuiteFlags,
    errors: &mut Vec<FlagError>,
    notes: &mut Vec<String>,
) -> ServerChoice {
    if s.server != ServerMode::Sim && (s.sim_speed.is_some() || s.sim_faults.is_some()) {
        notes.push("--sim-speed / --sim-faults only apply with --server sim".into());
    }
    if let Some(url) = &s.server_url {
        if s.server != ServerMode::Auto {
            errors.push(err(
                "--server-url",
                "DFX_SERVER_URL",
                url,
                &format!(
                    "attaches to a running server and cannot be combined with --server {}",
                    match s.server {
                        ServerMode::Sim => "sim",
                        _ => "fake",
                    }
                ),
                "either --server-url or --server sim",
            ));
        }
        match url.strip_prefix("http://") {
            Some(hostport) if !hostport.trim_end_matches('/').is_empty() => {}
            _ => errors.push(err(
                "--server-url",
                "DFX_SERVER_URL",
                url,
                "not an http:// URL",
                "http://host:port",
            )),
        }
        if s.server_bin.is_some() {
            notes.push("--server-bin is not used with --server-url (nothing is started)".into());
        }
        return ServerChoice::Attach {
            url: url.trim_end_matches('/').to_string(),
        };
    }
    match s.server {
        ServerMode::Auto => ServerChoice::Auto {
            server_bin: s.server_bin.clone(),
        },
        ServerMode::Sim => ServerChoice::Sim {
            speed: s.sim_speed,
            faults: s.sim_faults.clone(),
        },
        ServerMode::Fake => ServerChoice::Fake,
    }
}

/// `$CARGO_TARGET_DIR/dfx-perf` when set, else `<root>/target/dfx-perf`.
fn default_results_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) if !t.is_empty() => PathBuf::from(t).join("dfx-perf"),
        _ => root.join("target").join("dfx-perf"),
    }
}

#[cfg(test)]
mod tests;
