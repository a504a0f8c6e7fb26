//! The suite's command line, shared by every test target of the root package: libtest's
//! flags (`libtest::LibtestFlags`, converted into `libtest_mimic::Arguments`) plus
//! dfx-perf's own, each of which can also come from an environment variable. This is the raw ("low") form; `crate::settings`
//! validates it into a `crate::settings::SuiteConfig`.
//!
//! `cargo test -- FLAGS` hands FLAGS to every test target, so every root target parses
//! argv with [`SuiteArgs`], even those that only need the libtest part.

mod help;
pub(crate) mod libtest;

pub use help::USAGE;
use help::{EXAMPLES, sim_faults_help};

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::parser::ValueSource;
use clap::{ArgAction, Args, CommandFactory, FromArgMatches, Parser, ValueEnum};
use serde::Serialize;

/// Which server the trials run against (`--server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerMode {
    /// The real executables: `vllm-omni` (or `--server-bin`) and `sgl-omni`.
    Auto,
    /// The built-in simulated vllm-omni server (`dfx-perf-sim`), no GPU needed.
    Sim,
    /// Test seam: an in-process fake that starts nothing (use with `--bench fake`; only the
    /// suite's test binary has it, through `Project::test_seams`).
    #[value(hide = true)]
    Fake,
}

/// Which load generator runs a trial (`--bench`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchTool {
    /// The native one when it supports the entry, else `vllm bench serve --omni` when
    /// available, else the trial is ignored with both reasons.
    Auto,
    /// dfx-perf's own streaming load generator.
    Native,
    /// The external `vllm bench serve --omni`.
    Vllm,
    /// Test seam: a deterministic in-process model of a step (dfx-testkit's `fake::bench`;
    /// only the suite's test binary has it, through `Project::test_seams`).
    #[value(hide = true)]
    Fake,
}

/// `--connection`: how the native bench's TTS requests get their TCP connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionArg {
    /// A new connection per request, as `vllm bench serve --omni` (its TTFP includes the
    /// connect).
    Fresh,
    /// Idle connections kept and reused (the warmups open them).
    Pooled,
}

impl ConnectionArg {
    /// The plan's [`ConnectionMode`](dfx_core::plan::ConnectionMode) for this flag value.
    pub fn mode(self) -> dfx_core::plan::ConnectionMode {
        match self {
            ConnectionArg::Fresh => dfx_core::plan::ConnectionMode::Fresh,
            ConnectionArg::Pooled => dfx_core::plan::ConnectionMode::Pooled,
        }
    }
}

/// The suite's command line (dfx-perf flags + libtest flags).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "perf",
    about = "dfx-perf suite: one test per perf-config sweep step",
    override_usage = USAGE,
    before_help = EXAMPLES,
    help_template = "{about-with-newline}\n{usage-heading} {usage}\n\n{before-help}{all-args}{after-help}",
    disable_version_flag = true,
    after_help = "Every dfx-perf flag can also be set through the environment variable shown \
                  in brackets (booleans accept 1/true/yes/on and 0/false/no/off)."
)]
pub struct SuiteArgs {
    /// dfx-perf's flags (listed first in `--help`).
    #[command(flatten)]
    pub suite: SuiteFlags,
    /// The libtest flags the suite accepts (`--list`, `--include-ignored`, the filter, …).
    #[command(flatten)]
    pub libtest: libtest::LibtestFlags,
}

/// dfx-perf's own flags. Field doc comments are the `--help` texts.
#[derive(Debug, Clone, Args, Serialize)]
#[command(next_help_heading = "dfx-perf options")]
pub struct SuiteFlags {
    /// Fail a trial on any baseline breach (otherwise breaches are warnings), and fail
    /// trials that cannot run instead of ignoring them.
    #[arg(long, env = "DFX_ASSERT_BASELINE", action = ArgAction::SetTrue,
          value_parser = BoolishValueParser::new())]
    pub assert_baseline: bool,

    /// Fail every trial that has no threshold for the run's hardware label (default: such
    /// a trial passes on completion with a "needs data" warning).
    #[arg(long, env = "DFX_REQUIRE_THRESHOLDS", action = ArgAction::SetTrue,
          value_parser = BoolishValueParser::new())]
    pub require_thresholds: bool,

    /// Perf-config JSON file (repeatable; comma/colon separated lists accepted).
    /// Default: every perf-configs/*.json.
    #[arg(
        long,
        value_name = "PATH",
        env = "DFX_TEST_CONFIG_FILE",
        value_delimiter = ','
    )]
    pub test_config_file: Vec<PathBuf>,

    /// Select cases by their `mark` tags (e.g. `tts`, `tts and not slow`).
    #[arg(long, value_name = "EXPR", env = "DFX_MARK")]
    pub mark: Option<String>,

    /// Hardware label (H100, H20, …): picks hardware-nested baselines and
    /// `baselines/<LABEL>.json`. Default: `SIM` for the simulator (time-lapsed runs too;
    /// `SIMx<K>` when `--bench vllm` runs it sped up), else detected from nvidia-smi, else `na`.
    #[arg(long, value_name = "LABEL", env = "DFX_HARDWARE")]
    pub hardware: Option<String>,

    /// Folder receiving one run folder per run. Default: target/dfx-perf.
    #[arg(long, value_name = "DIR", env = "DFX_RESULTS_DIR")]
    pub results_dir: Option<PathBuf>,

    /// Server to benchmark: auto (real vllm-omni / sgl-omni executables) or sim.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        env = "DFX_SERVER",
        default_value = "auto"
    )]
    pub server: ServerMode,

    /// The vllm-omni executable (default: `vllm-omni` on PATH).
    #[arg(long, value_name = "PATH", env = "DFX_SERVER_BIN")]
    pub server_bin: Option<PathBuf>,

    /// Benchmark an already running server at this URL instead of starting one.
    #[arg(long, value_name = "URL", env = "DFX_SERVER_URL")]
    pub server_url: Option<String>,

    /// Seconds to wait for a started server to become ready.
    #[arg(
        long,
        value_name = "SECS",
        env = "DFX_READY_TIMEOUT",
        default_value_t = 1200
    )]
    pub ready_timeout: u64,

    /// Simulator speed factor K: all simulated delays are divided by K (`--server sim`), and
    /// the native bench runs the workload time-lapsed by K, reporting on the real-time scale
    /// (label `SIM`; the main job uses 8).
    #[arg(long, value_name = "K", env = "DFX_SIM_SPEED")]
    pub sim_speed: Option<f64>,

    /// Simulator fault specification, passed to the simulator unchanged (specs listed in
    /// `--help`).
    #[arg(long, value_name = "SPEC", env = "DFX_SIM_FAULTS", help = sim_faults_help())]
    pub sim_faults: Option<String>,

    /// Load generator: native (dfx-perf's own), vllm (`vllm bench serve --omni`) or auto
    /// (native where it implements the entry, else vllm when available, else the trial
    /// is ignored with both reasons). Replaces libtest's boolean `--bench`.
    #[arg(
        long,
        alias = "bench-tool",
        value_enum,
        value_name = "TOOL",
        env = "DFX_BENCH",
        default_value = "auto"
    )]
    pub bench: BenchTool,

    /// The `vllm` executable for the external bench (default: `vllm` on PATH).
    #[arg(long, value_name = "PATH", env = "DFX_VLLM_BIN")]
    pub vllm_bin: Option<PathBuf>,

    /// Upstream's diffusion benchmark script
    /// (`benchmarks/diffusion/diffusion_benchmark_serving.py` of a vllm-omni checkout):
    /// diffusion-dialect entries run through it (else they are ignored with the reason).
    #[arg(long, value_name = "PATH", env = "DFX_DIFFUSION_SCRIPT")]
    pub diffusion_script: Option<PathBuf>,

    /// A vllm-omni checkout: its diffusion benchmark script runs the diffusion entries,
    /// from its `tests/` folder (where upstream runs it).
    #[arg(long, value_name = "DIR", env = "DFX_VLLM_OMNI_DIR")]
    pub vllm_omni_dir: Option<PathBuf>,

    /// Python interpreter for the diffusion benchmark script (default: `python3` on PATH).
    #[arg(long, value_name = "PATH", env = "DFX_PYTHON")]
    pub python: Option<PathBuf>,

    /// Tokenizer for token counts: a local `tokenizer.json` (or a folder holding one; the
    /// native bench loads it for the random datasets) or a hub id (external bench only).
    #[arg(long, value_name = "NAME|PATH", env = "DFX_TOKENIZER")]
    pub tokenizer: Option<String>,

    /// Local folder where the benches look up datasets named by an entry's
    /// `dataset_path`; repeatable, comma/colon separated lists accepted.
    #[arg(
        long,
        value_name = "DIR",
        env = "DFX_DATASET_ROOT",
        value_delimiter = ','
    )]
    pub dataset_root: Vec<PathBuf>,

    /// Seed for prompt shuffling and arrival schedules.
    #[arg(long, value_name = "N", env = "DFX_SEED")]
    pub seed: Option<u64>,

    /// Name of the environment variable holding the server's API token, sent as a
    /// bearer token (never logged or written). Default: OPENAI_API_KEY when it is set.
    #[arg(long, value_name = "VAR", env = "DFX_AUTH_TOKEN_ENV")]
    pub auth_token_env: Option<String>,

    /// Sample rate (Hz) of the model's audio output, for models dfx-perf does not know.
    /// Default: from the model name, else 24000.
    #[arg(long, value_name = "HZ", env = "DFX_SAMPLE_RATE")]
    pub sample_rate: Option<u32>,

    /// Native bench: longest time one request may take, in seconds. Default: 900.
    #[arg(long, value_name = "SECS", env = "DFX_REQUEST_TIMEOUT")]
    pub request_timeout: Option<f64>,

    /// Native bench: longest wait for the next byte of a response (stall detection), in
    /// seconds. Default: 60.
    #[arg(long, value_name = "SECS", env = "DFX_READ_TIMEOUT")]
    pub read_timeout: Option<f64>,

    /// Native bench: the stall window, in seconds. A stream whose body brings fewer than
    /// --stall-floor bytes in a window is stalled; a step where no stream progressed for a
    /// window (or 3 streams stalled in a row) ends early as "server stalled". Default: 20.
    #[arg(long, value_name = "SECS", env = "DFX_STALL_WINDOW")]
    pub stall_window: Option<f64>,

    /// Native bench: the fewest body bytes a streaming response must bring per stall
    /// window (a body that only trickles is stalled). Default: 1024.
    #[arg(long, value_name = "BYTES", env = "DFX_STALL_FLOOR")]
    pub stall_floor: Option<u64>,

    /// Native bench: `fresh` (a new TCP connection per request, as vllm bench) or `pooled`
    /// connections for every TTS step; wins over an entry's `connection` key. Default:
    /// the entry's key, else fresh.
    #[arg(long, value_name = "MODE", env = "DFX_CONNECTION")]
    pub connection: Option<ConnectionArg>,

    /// Run every sweep step N times on the same server (repeat k with seed + k − 1) and
    /// judge the median of the repeats; wins over an entry's `repeats` key. Default: the
    /// entry's key, else 1. Soaks and native-duplex entries run once.
    #[arg(long, value_name = "N", env = "DFX_REPEATS")]
    pub repeats: Option<u32>,

    /// Capacity searches: the price of one GPU-hour (any currency), for the cost per
    /// million input characters at the rate found.
    #[arg(long, value_name = "PRICE", env = "DFX_GPU_HOUR_PRICE")]
    pub gpu_hour_price: Option<f64>,

    /// Stability (soak) entries: multiply every `duration_sec` by this factor, so CI can
    /// shorten a day to seconds (`--duration-scale 0.0001`). Default: 1.
    #[arg(long, value_name = "FACTOR", env = "DFX_DURATION_SCALE")]
    pub duration_scale: Option<f64>,

    /// The project folder: default `perf-configs/`, `deploy/`, `baselines/` and the
    /// results folder (`target/dfx-perf`) are found here. Default: the repository for
    /// `cargo test`, the current folder for `dfx-perf run`.
    #[arg(long, value_name = "DIR", env = "DFX_ROOT")]
    pub root: Option<PathBuf>,

    /// Folder holding the deploy YAML files. Default: deploy.
    #[arg(long, value_name = "DIR", env = "DFX_DEPLOY_DIR")]
    pub deploy_dir: Option<PathBuf>,

    /// Folder holding `baselines/<hardware>.json` stores. Default: baselines.
    #[arg(long, value_name = "DIR", env = "DFX_BASELINES_DIR")]
    pub baselines_dir: Option<PathBuf>,

    /// Also copy every trial's result, under upstream's file name, into this flat folder
    /// (upstream's nightly report tools read such a folder; it may gather many runs).
    /// Every run folder has its own `upstream/` copy regardless.
    #[arg(long, value_name = "DIR", env = "DFX_UPSTREAM_RESULTS_DIR")]
    pub upstream_results_dir: Option<PathBuf>,

    /// Run history to add this run to when it ends (also after an interruption): a
    /// SQLite file or postgres://user@host/db. Read before the first trial: a breach
    /// inside its cell's noise there is breach_within_noise. A failure to read or write
    /// it is a warning.
    #[arg(long, value_name = "DB", env = "DFX_HISTORY")]
    #[serde(serialize_with = "redacted")]
    pub history: Option<String>,

    /// Entries with `seed_tts_wer_eval`: after each step, run `sh -c 'CMD "$1"'` on the
    /// kept audio's manifest (quality/manifest.jsonl) and merge the `seed_tts_*` keys of
    /// the JSON object it prints (WER / SIM / UTMOS) into the result.
    #[arg(long, value_name = "CMD", env = "DFX_QUALITY_CMD")]
    pub quality_cmd: Option<String>,

    /// Run one shard of the plan: `count:K/N` (server groups dealt round-robin in plan
    /// order) or `hash:K/N` (by a stable hash of each group's test and server
    /// parameters). Trials that share a server stay in one shard; `dfx-perf merge`
    /// combines the shards' run folders.
    #[arg(long, value_name = "METHOD:K/N", env = "DFX_PARTITION")]
    pub partition: Option<String>,

    /// List the selected trials with their step, server, bench, thresholds and the
    /// reason a trial is ignored, then exit (`--list` keeps libtest's format).
    #[arg(long, env = "DFX_LIST_VERBOSE", action = ArgAction::SetTrue,
          value_parser = BoolishValueParser::new())]
    pub list_verbose: bool,

    /// With `--list`: the verbose listing (same as `--list-verbose`).
    #[arg(long, action = ArgAction::SetTrue)]
    pub verbose: bool,
}

/// Where a flag's value came from, and one flag as given (recorded in run.json).
pub use dfx_core::artefact::{FlagRecord, FlagSource as Source};

/// Parsed command line plus the source of every dfx-perf flag that has a value.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The parsed arguments.
    pub args: SuiteArgs,
    /// Each dfx-perf flag that has a value, with where it came from (run.json's `flags`).
    pub provenance: Vec<FlagRecord>,
}

/// Parses an explicit argument list (first element: program name). Errors are clap's
/// (they name the flag and, for enums, the accepted values).
pub(crate) fn try_parse_from<I, T>(argv: I) -> Result<Parsed, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = SuiteArgs::command().try_get_matches_from(argv)?;
    let args = SuiteArgs::from_arg_matches(&matches)?;
    let provenance = provenance(&matches, &args.suite);
    Ok(Parsed { args, provenance })
}

/// Parses `std::env::args_os()`, printing clap's message and exiting (status 2, 0 for
/// `--help`) on error, like any clap program.
pub fn parse_env() -> Parsed {
    parse_from(std::env::args_os())
}

/// [`parse_env`] for an explicit argument list (first element: the program name shown
/// in usage lines, e.g. `dfx-perf run`).
pub fn parse_from<I, T>(argv: I) -> Parsed
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    try_parse_from(argv).unwrap_or_else(|e| exit_clap(&e))
}

/// Prints a clap error with every line clipped ([`dfx_core::diag::clip_lines`]: a 10 MB
/// flag value is cut, not echoed) and exits with clap's status; help and version go to
/// stdout as usual.
pub fn exit_clap(e: &clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit()
    }
    let text = dfx_core::diag::clip_lines(&e.render().to_string());
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
    std::process::exit(e.exit_code())
}

/// The history location without a password (run.json records the flags).
fn redacted<S: serde::Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(url) => s.serialize_str(&dfx_history::store::redact(url)),
        None => s.serialize_none(),
    }
}

fn provenance(matches: &clap::ArgMatches, flags: &SuiteFlags) -> Vec<FlagRecord> {
    let values = match serde_json::to_value(flags) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    for (id, value) in values {
        let source = match matches.value_source(&id) {
            Some(ValueSource::CommandLine) => Source::Cli,
            Some(ValueSource::EnvVariable) => Source::Env,
            Some(ValueSource::DefaultValue) => Source::Default,
            Some(_) | None => continue,
        };
        out.push(FlagRecord {
            flag: format!("--{}", id.replace('_', "-")),
            value,
            source,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str]) -> Parsed {
        try_parse_from(std::iter::once("perf").chain(argv.iter().copied())).unwrap()
    }

    #[test]
    fn cli_definition_is_consistent() {
        SuiteArgs::command().debug_assert();
    }

    #[test]
    fn libtest_and_suite_flags_mix() {
        let p = parse(&[
            "--assert-baseline",
            "test_qwen3_tts_base",
            "--exact",
            "--skip",
            "c64",
        ]);
        assert!(p.args.suite.assert_baseline);
        assert_eq!(
            p.args.libtest.filter.as_deref(),
            Some("test_qwen3_tts_base")
        );
        assert!(p.args.libtest.exact);
        assert_eq!(p.args.libtest.skip, vec!["c64".to_string()]);
        let rec = p
            .provenance
            .iter()
            .find(|r| r.flag == "--assert-baseline")
            .unwrap();
        assert_eq!(rec.source, Source::Cli);
    }

    #[test]
    fn repeatable_and_comma_separated_paths() {
        let p = parse(&[
            "--test-config-file",
            "a.json,b.json",
            "--test-config-file=c.json",
        ]);
        let files: Vec<_> = p
            .args
            .suite
            .test_config_file
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(files, ["a.json", "b.json", "c.json"]);
    }

    #[test]
    fn bad_enum_names_flag_and_accepted_values_but_hides_fakes() {
        let err = try_parse_from(["perf", "--server", "gpu"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--server"), "{err}");
        assert!(err.contains("auto") && err.contains("sim"), "{err}");
        assert!(!err.contains("fake"), "{err}");
        // The hidden seam still parses.
        assert_eq!(
            parse(&["--server", "fake"]).args.suite.server,
            ServerMode::Fake
        );
        assert_eq!(
            parse(&["--bench", "fake"]).args.suite.bench,
            BenchTool::Fake
        );
    }

    #[test]
    fn bench_takes_the_load_generator_and_keeps_the_old_spelling_hidden() {
        assert_eq!(parse(&[]).args.suite.bench, BenchTool::Auto);
        assert_eq!(
            parse(&["--bench", "native"]).args.suite.bench,
            BenchTool::Native
        );
        assert_eq!(parse(&["--bench=vllm"]).args.suite.bench, BenchTool::Vllm);
        assert_eq!(
            parse(&["--bench-tool", "vllm"]).args.suite.bench,
            BenchTool::Vllm
        );
        let rec = parse(&["--bench", "native"]).provenance;
        let rec = rec.iter().find(|r| r.flag == "--bench").unwrap();
        assert_eq!(
            (rec.source, &rec.value),
            (Source::Cli, &serde_json::json!("native"))
        );
        // libtest's boolean form is not accepted: the error names the accepted values.
        let err = try_parse_from(["perf", "--bench"]).unwrap_err().to_string();
        assert!(err.contains("--bench"), "{err}");
        assert!(err.contains("native") && err.contains("vllm"), "{err}");
        // Nothing reaches libtest-mimic as "run benchmarks".
        assert!(
            !parse(&["--bench", "vllm"])
                .args
                .libtest
                .to_arguments()
                .bench
        );
    }

    #[test]
    fn help_hides_fakes() {
        let help = SuiteArgs::command().render_long_help().to_string();
        assert!(help.contains("--assert-baseline"));
        assert!(help.contains("DFX_ASSERT_BASELINE"));
        assert!(help.contains("--bench <TOOL>") && help.contains("DFX_BENCH"));
        assert!(help.contains("--include-ignored") && help.contains("--exact"));
        assert!(!help.contains("bench-tool"), "{help}");
        assert!(!help.contains("fake"), "{help}");
    }

    #[test]
    fn defaults_are_recorded_as_defaults() {
        let p = parse(&[]);
        let rec = p
            .provenance
            .iter()
            .find(|r| r.flag == "--ready-timeout")
            .unwrap();
        assert_eq!(rec.source, Source::Default);
        assert_eq!(rec.value, serde_json::json!(1200));
        assert!(!p.provenance.iter().any(|r| r.flag == "--server-url"));
    }
}
