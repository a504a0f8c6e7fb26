//! The benches' settings: validation of `--bench`, `--vllm-bin`, `--diffusion-script`,
//! `--vllm-omni-dir`, `--python`, `--tokenizer`,
//! `--dataset-root`, `--seed`, `--auth-token-env`, `--sample-rate`, `--request-timeout`,
//! `--read-timeout`, `--stall-window`, `--stall-floor` into [`BenchOptions`].

use std::path::PathBuf;
use std::time::Duration;

use dfx_core::bounds::{self, MAX_SAMPLE_RATE, MIN_SAMPLE_RATE};

use super::{FlagError, check_executable, err, split_paths};
use crate::cli::{BenchTool, SuiteFlags};

/// Settings of the benches (what the native and the external bench need besides the
/// trial). `None` leaves a bench's own default.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BenchOptions {
    pub tool: BenchTool,
    pub vllm_bin: Option<PathBuf>,
    /// `--diffusion-script` (checked to be a file).
    pub diffusion_script: Option<PathBuf>,
    /// `--vllm-omni-dir` (checked to hold the diffusion script).
    pub vllm_omni_dir: Option<PathBuf>,
    /// `--python` for the diffusion script.
    pub python: Option<PathBuf>,
    pub tokenizer: Option<String>,
    /// The local `tokenizer.json` that `--tokenizer` names (a file, or a folder holding
    /// one), checked to load; `None` for a hub id, which only the external bench uses.
    pub native_tokenizer: Option<PathBuf>,
    pub dataset_roots: Vec<PathBuf>,
    pub seed: Option<u64>,
    /// Name of the variable holding the API token (checked to be set).
    pub auth_token_env: Option<String>,
    pub sample_rate: Option<u32>,
    pub request_timeout: Option<Duration>,
    pub read_timeout: Option<Duration>,
    /// `--stall-window`: the stall rule's window.
    pub stall_window: Option<Duration>,
    /// `--stall-floor`: the fewest body bytes per stall window.
    pub stall_floor: Option<u64>,
    /// `--duration-scale`: factor on every soak entry's `duration_sec`.
    pub duration_scale: Option<f64>,
    /// `--connection` (native bench): wins over the entries' `connection` key.
    pub connection: Option<dfx_core::plan::ConnectionMode>,
}

impl BenchOptions {
    /// Validates the bench flags; problems go to `errors`. `lookup` reads the
    /// environment (tests pass their own).
    pub(crate) fn from_flags(
        s: &SuiteFlags,
        lookup: impl Fn(&str) -> Option<String>,
        errors: &mut Vec<FlagError>,
    ) -> BenchOptions {
        let dataset_roots = split_paths(&s.dataset_root);
        for d in &dataset_roots {
            if !d.is_dir() {
                errors.push(err(
                    "--dataset-root",
                    "DFX_DATASET_ROOT",
                    d.display(),
                    "not a folder",
                    "existing folders",
                ));
            }
        }
        check_executable(&s.vllm_bin, "--vllm-bin", "DFX_VLLM_BIN", errors);
        check_executable(&s.python, "--python", "DFX_PYTHON", errors);
        check_diffusion(s, errors);
        if let Some(var) = &s.auth_token_env {
            check_token_var(var, &lookup, errors);
        }
        if let Some(hz) = s.sample_rate
            && !(MIN_SAMPLE_RATE..=MAX_SAMPLE_RATE).contains(&u64::from(hz))
        {
            errors.push(err(
                "--sample-rate",
                "DFX_SAMPLE_RATE",
                hz,
                "not a usable sample rate",
                &format!("Hz from {MIN_SAMPLE_RATE} to {MAX_SAMPLE_RATE}, e.g. 24000 or 48000"),
            ));
        }
        if let Some(f) = s.duration_scale
            && !(f > 0.0 && f <= 1000.0)
        {
            errors.push(err(
                "--duration-scale",
                "DFX_DURATION_SCALE",
                f,
                "not a usable factor",
                "a number > 0 and at most 1000, e.g. 0.001",
            ));
        }
        let native_tokenizer = local_tokenizer(s.tokenizer.as_deref(), errors);
        BenchOptions {
            tool: s.bench,
            vllm_bin: s.vllm_bin.clone(),
            diffusion_script: s.diffusion_script.clone(),
            vllm_omni_dir: s.vllm_omni_dir.clone(),
            python: s.python.clone(),
            tokenizer: s.tokenizer.clone(),
            native_tokenizer,
            dataset_roots,
            seed: s.seed,
            auth_token_env: s.auth_token_env.clone(),
            sample_rate: s.sample_rate,
            request_timeout: seconds(
                s.request_timeout,
                "--request-timeout",
                "DFX_REQUEST_TIMEOUT",
                errors,
            ),
            read_timeout: seconds(s.read_timeout, "--read-timeout", "DFX_READ_TIMEOUT", errors),
            stall_window: seconds(s.stall_window, "--stall-window", "DFX_STALL_WINDOW", errors),
            stall_floor: super::flags::stall_floor(s.stall_floor, errors),
            duration_scale: s.duration_scale,
            connection: s.connection.map(|c| c.mode()),
        }
    }
}

/// `--tokenizer` for the native bench: a `tokenizer.json` file, or a folder holding one,
/// that loads. A value that is no local path and does not look like one (a hub id such
/// as `Qwen/Qwen3-Omni-30B-A3B-Instruct`) is left to the external bench.
fn local_tokenizer(value: Option<&str>, errors: &mut Vec<FlagError>) -> Option<PathBuf> {
    let v = value?;
    let p = PathBuf::from(v);
    let file = if p.is_dir() {
        p.join("tokenizer.json")
    } else {
        p.clone()
    };
    let looks_local = v.starts_with(['/', '.', '~']) || v.ends_with(".json") || p.is_dir();
    if !file.is_file() && !looks_local {
        return None;
    }
    let problem = if file.is_file() {
        match dfx_bench::native::random::text::Counter::load(&file) {
            Ok(_) => return Some(file),
            Err(e) => e.to_string(),
        }
    } else {
        format!("no tokenizer file at {}", file.display())
    };
    errors.push(err(
        "--tokenizer",
        "DFX_TOKENIZER",
        v,
        &problem,
        "a Hugging Face tokenizer.json (or a folder holding one), or a hub id for the external bench",
    ));
    None
}

/// `--diffusion-script` must be a file; `--vllm-omni-dir` a folder holding the script.
fn check_diffusion(s: &SuiteFlags, errors: &mut Vec<FlagError>) {
    use dfx_bench::external::diffusion::SCRIPT_IN_CHECKOUT;
    if let Some(p) = &s.diffusion_script
        && !p.is_file()
    {
        errors.push(err(
            "--diffusion-script",
            "DFX_DIFFUSION_SCRIPT",
            p.display(),
            "no such file",
            "the path of benchmarks/diffusion/diffusion_benchmark_serving.py in a vllm-omni checkout",
        ));
    }
    if let Some(d) = &s.vllm_omni_dir
        && s.diffusion_script.is_none()
        && !d.join(SCRIPT_IN_CHECKOUT).is_file()
    {
        errors.push(err(
            "--vllm-omni-dir",
            "DFX_VLLM_OMNI_DIR",
            d.display(),
            &format!("holds no {SCRIPT_IN_CHECKOUT}"),
            "the root folder of a vllm-omni checkout",
        ));
    }
}

fn check_token_var(
    var: &str,
    lookup: &impl Fn(&str) -> Option<String>,
    errors: &mut Vec<FlagError>,
) {
    let name_ok = var
        .chars()
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && var.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    let (problem, accepted) = if !name_ok {
        (
            "not an environment variable name",
            "a name such as OPENAI_API_KEY (letters, digits, `_`)",
        )
    } else if lookup(var).is_none_or(|v| v.is_empty()) {
        (
            "that variable is not set (or empty), so no token would be sent",
            "the name of a variable that holds the token",
        )
    } else {
        return;
    };
    errors.push(err(
        "--auth-token-env",
        "DFX_AUTH_TOKEN_ENV",
        var,
        problem,
        accepted,
    ));
}

fn seconds(
    value: Option<f64>,
    flag: &'static str,
    env: &'static str,
    errors: &mut Vec<FlagError>,
) -> Option<Duration> {
    let v = value?;
    match bounds::timeout(v) {
        Some(d) => Some(d),
        None => {
            errors.push(err(
                flag,
                env,
                v,
                "must be a positive number of seconds, at most a week",
                &format!(
                    "seconds > 0 and at most {}, fractions allowed (e.g. 900 or 0.5)",
                    bounds::MAX_TIMEOUT_SECONDS
                ),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::try_parse_from;

    fn options(argv: &[&str], env: &[(&str, &str)]) -> Result<BenchOptions, Vec<FlagError>> {
        let parsed = try_parse_from(std::iter::once("perf").chain(argv.iter().copied())).unwrap();
        let mut errors = Vec::new();
        let lookup = |k: &str| {
            env.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        };
        let o = BenchOptions::from_flags(&parsed.args.suite, lookup, &mut errors);
        if errors.is_empty() {
            Ok(o)
        } else {
            Err(errors)
        }
    }

    #[test]
    fn defaults_leave_the_benches_their_own() {
        let o = options(&[], &[]).unwrap();
        assert_eq!(o.tool, BenchTool::Auto);
        assert_eq!(
            (
                o.auth_token_env,
                o.sample_rate,
                o.request_timeout,
                o.read_timeout
            ),
            (None, None, None, None)
        );
    }

    #[test]
    fn values_are_taken() {
        let o = options(
            &[
                "--bench",
                "native",
                "--auth-token-env",
                "MY_TOKEN",
                "--sample-rate",
                "48000",
                "--request-timeout",
                "30",
                "--read-timeout",
                "0.5",
                "--seed",
                "7",
            ],
            &[("MY_TOKEN", "secret")],
        )
        .unwrap();
        assert_eq!(o.tool, BenchTool::Native);
        assert_eq!(o.auth_token_env.as_deref(), Some("MY_TOKEN"));
        assert_eq!(o.sample_rate, Some(48_000));
        assert_eq!(o.request_timeout, Some(Duration::from_secs(30)));
        assert_eq!(o.read_timeout, Some(Duration::from_millis(500)));
        assert_eq!(o.seed, Some(7));
    }

    #[test]
    fn connection_flag_is_taken_and_bad_values_refused() {
        use dfx_core::plan::ConnectionMode;
        assert_eq!(options(&[], &[]).unwrap().connection, None);
        let o = options(&["--connection", "pooled"], &[]).unwrap();
        assert_eq!(o.connection, Some(ConnectionMode::Pooled));
        let o = options(&["--connection", "fresh"], &[]).unwrap();
        assert_eq!(o.connection, Some(ConnectionMode::Fresh));
        let Err(e) = try_parse_from(["perf", "--connection", "keepalive"]) else {
            panic!("--connection keepalive was accepted");
        };
        let e = e.to_string();
        assert!(
            e.contains("--connection") && e.contains("fresh") && e.contains("pooled"),
            "{e}"
        );
    }

    #[test]
    fn tokenizer_paths_are_checked_and_hub_ids_left_alone() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../dfx-bench/tests/fixtures/tokenizer"
        );
        let o = options(&["--tokenizer", fixture], &[]).unwrap();
        assert_eq!(
            o.native_tokenizer,
            Some(PathBuf::from(fixture).join("tokenizer.json"))
        );
        let o = options(&["--tokenizer", "Qwen/Qwen3-Omni-30B-A3B-Instruct"], &[]).unwrap();
        assert_eq!(o.native_tokenizer, None);
        assert_eq!(
            o.tokenizer.as_deref(),
            Some("Qwen/Qwen3-Omni-30B-A3B-Instruct")
        );
        let e = options(&["--tokenizer", "/nonexistent/tokenizer.json"], &[]).unwrap_err();
        assert_eq!((e[0].flag, e[0].env), ("--tokenizer", "DFX_TOKENIZER"));
        assert!(e[0].problem.contains("no tokenizer file"), "{:?}", e[0]);
        let tmp = tempfile::tempdir().unwrap();
        let bad = tmp.path().join("tokenizer.json");
        std::fs::write(&bad, "{}").unwrap();
        let e = options(&["--tokenizer", bad.to_str().unwrap()], &[]).unwrap_err();
        assert!(e[0].problem.contains("cannot load"), "{:?}", e[0]);
    }

    #[test]
    fn bad_values_name_the_flag_its_variable_and_what_is_accepted() {
        let errors = options(
            &[
                "--auth-token-env",
                "UNSET_TOKEN",
                "--sample-rate",
                "0",
                "--request-timeout=-1",
                "--read-timeout",
                "inf",
            ],
            &[],
        )
        .unwrap_err();
        let flags: Vec<_> = errors.iter().map(|e| e.flag).collect();
        assert_eq!(
            flags,
            [
                "--auth-token-env",
                "--sample-rate",
                "--request-timeout",
                "--read-timeout"
            ]
        );
        assert!(errors[0].problem.contains("not set"), "{:?}", errors[0]);
        assert_eq!(errors[0].env, "DFX_AUTH_TOKEN_ENV");
        let e = options(&["--auth-token-env", "not a name"], &[]).unwrap_err();
        assert!(e[0].problem.contains("not an environment variable name"));
        let e = options(&["--auth-token-env", "EMPTY"], &[("EMPTY", "")]).unwrap_err();
        assert!(e[0].problem.contains("not set (or empty)"));
    }

    #[test]
    fn stall_flags_are_taken_and_bounded() {
        let o = options(&["--stall-window", "2.5", "--stall-floor", "64"], &[]).unwrap();
        assert_eq!(o.stall_window, Some(Duration::from_millis(2500)));
        assert_eq!(o.stall_floor, Some(64));
        let errors = options(&["--stall-window", "0", "--stall-floor", "0"], &[]).unwrap_err();
        let named: Vec<_> = errors.iter().map(|e| (e.flag, e.env)).collect();
        assert_eq!(
            named,
            [
                ("--stall-window", "DFX_STALL_WINDOW"),
                ("--stall-floor", "DFX_STALL_FLOOR")
            ]
        );
        assert!(errors[1].accepted.contains("from 1 to"), "{:?}", errors[1]);
    }
}
