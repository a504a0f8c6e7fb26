//! The one place where the harness meets the concrete implementations of the other
//! crates: the server launchers (dfx-server), the benches (dfx-bench) and the report
//! writer (dfx-report); signal handling is [`crate::interrupt`]. Everything else in the
//! harness only knows the dfx-core seams ([`ServerLauncher`], [`dfx_core::bench::Bench`]).
//!
//! A bench that cannot run an entry says why (its `supports`); such trials are listed as
//! ignored with that reason (failed under `--assert-baseline`), never silently passed.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dfx_bench::external::diffusion::{DiffusionBench, DiffusionSettings};
use dfx_bench::external::{ExternalSettings, VllmBench};
use dfx_bench::native::lapse::TimeLapse;
use dfx_bench::native::stall::StallRule;
use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::server::ServerLauncher;
use dfx_server::live::{self, LIVE_DIR_NAME};
use dfx_server::{AttachLauncher, LauncherConfig, ProcessLauncher, Supervision};

use crate::cli::BenchTool;
use crate::select::{BenchSet, BenchSlot};
use crate::settings::{Project, ServerChoice, SetupError, SuiteConfig, TestSeams};

/// The launcher for `--server` / `--server-url`: the process launcher for the real
/// executables (`vllm-omni` from `--server-bin` / `DFX_SERVER_BIN` /
/// `VLLM_OMNI_EXECUTABLE` / PATH; `sgl-omni` from `SGLANG_OMNI_EXECUTABLE` / PATH), the
/// same launcher pointed at the simulator binary, the attach launcher, or the fake. An
/// error is a bad setting (reported before anything starts).
pub(crate) fn launcher(
    cfg: &SuiteConfig,
    project: &Project,
) -> Result<Box<dyn ServerLauncher + Send>, SetupError> {
    let base = LauncherConfig {
        deploy_dir: cfg.deploy_dir.clone(),
        repo_root: project.root.clone(),
        grace: ms_knob(GRACE_ENV)?,
        ready_progress: ms_knob(READY_PROGRESS_ENV)?.unwrap_or(LauncherConfig::READY_PROGRESS),
        supervision: supervision(cfg, project),
        ..LauncherConfig::default()
    };
    Ok(match &cfg.server {
        ServerChoice::Fake => (seams(project, "--server")?.launcher)(),
        ServerChoice::Auto { server_bin } => Box::new(ProcessLauncher::new(LauncherConfig {
            server_bin: server_bin.clone(),
            ..base
        })),
        ServerChoice::Sim { speed, faults } => {
            let mut extra_env = BTreeMap::new();
            if let Some(k) = speed {
                extra_env.insert("DFX_SIM_SPEED".to_string(), k.to_string());
            }
            if let Some(f) = faults {
                extra_env.insert("DFX_SIM_FAULTS".to_string(), f.clone());
            }
            Box::new(ProcessLauncher::new(LauncherConfig {
                simulator: Some(project.sim_bin.clone()),
                extra_env,
                ..base
            }))
        }
        ServerChoice::Attach { url } => Box::new(AttachLauncher::new(url)?),
    })
}

/// The test fakes for `flag fake`, which only the suite's test binary has.
fn seams(project: &Project, flag: &'static str) -> Result<TestSeams, SetupError> {
    project.test_seams.ok_or(SetupError::NoTestSeams { flag })
}

/// Hidden test knob `DFX_SERVER_GRACE_MS`: the SIGTERM→SIGKILL grace of started servers
/// (and of their guards), instead of 15 s (30 s for sglang-omni).
pub(crate) const GRACE_ENV: &str = "DFX_SERVER_GRACE_MS";

/// Hidden test knob `DFX_READY_PROGRESS_MS`: how often the wait for a started server's
/// readiness is reported on stderr, instead of every 15 s.
pub(crate) const READY_PROGRESS_ENV: &str = "DFX_READY_PROGRESS_MS";

/// A hidden knob in whole milliseconds (`None` when unset).
fn ms_knob(name: &'static str) -> Result<Option<Duration>, SetupError> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<u64>()
            .map(|ms| Some(Duration::from_millis(ms)))
            .map_err(|source| SetupError::Knob {
                name,
                value: v.clone(),
                source,
            }),
        _ => Ok(None),
    }
}

/// The state folder of a results folder (absolute, since guards get paths into it).
pub(crate) fn live_dir(results_dir: &Path) -> PathBuf {
    std::path::absolute(results_dir)
        .unwrap_or_else(|_| results_dir.to_path_buf())
        .join(LIVE_DIR_NAME)
}

/// How the suite supervises the process groups it starts (servers, the external bench):
/// the project's guard, state files in the results folder's `.dfx-live-servers`.
pub(crate) fn supervision(cfg: &SuiteConfig, project: &Project) -> Supervision {
    Supervision {
        guard_bin: Some(project.guard_bin.clone()),
        live_dir: Some(live_dir(&cfg.results_dir)),
    }
}

/// Stops the server (and bench) groups that earlier runs into `results_dir` left behind
/// and are provably theirs ([`dfx_server::live::sweep`]); the lines saying what was found,
/// each already printed on stderr, for run.json's warnings.
pub(crate) fn sweep_leftovers(results_dir: &Path) -> Vec<String> {
    live::sweep(&live_dir(results_dir))
        .into_iter()
        .filter(live::Found::worth_telling)
        .map(|f| {
            let line = f.to_string();
            eprintln!("dfx-perf: {line}");
            line
        })
        .collect()
}

/// The bench slots `--bench` allows, in order of preference (`auto`: native, then
/// vllm; each bench's `supports` says which entries it implements), followed by the
/// diffusion driver when `--diffusion-script` / `--vllm-omni-dir` is given (it runs
/// diffusion-dialect entries only, whichever bench `--bench` names). An error is a problem with the settings (reported like a flag error,
/// before anything starts).
pub(crate) fn benches(cfg: &SuiteConfig, project: &Project) -> Result<BenchSet, SetupError> {
    let native = || BenchSlot {
        label: "native",
        bench: Ok(Box::new(native_bench(cfg)) as Box<dyn dfx_core::bench::Bench + Send>),
    };
    let lapse = time_lapse(cfg);
    let vllm = || BenchSlot {
        label: "vllm",
        bench: match lapse {
            Some(k) => Err(not_time_lapsed(k)),
            None => Ok(Box::new(VllmBench::new(ExternalSettings {
                vllm_bin: cfg.bench.vllm_bin.clone(),
                tokenizer: cfg.bench.tokenizer.clone(),
                seed: cfg.bench.seed.unwrap_or(0),
                auth_token_env: cfg.bench.auth_token_env.clone(),
                sample_rate: cfg.bench.sample_rate,
                supervision: supervision(cfg, project),
                duration_scale: cfg.bench.duration_scale.unwrap_or(1.0),
                ..ExternalSettings::default()
            })) as Box<dyn dfx_core::bench::Bench + Send>),
        },
    };
    let diffusion_settings = DiffusionSettings {
        script: cfg.bench.diffusion_script.clone(),
        vllm_omni_dir: cfg.bench.vllm_omni_dir.clone(),
        python: cfg.bench.python.clone(),
        supervision: supervision(cfg, project),
        ..DiffusionSettings::default()
    };
    let mut slots = match cfg.bench.tool {
        BenchTool::Fake => vec![BenchSlot {
            label: "fake",
            bench: Ok((seams(project, "--bench")?.bench)().map_err(SetupError::FakeKnob)?),
        }],
        BenchTool::Native => vec![native()],
        BenchTool::Vllm => vec![vllm()],
        BenchTool::Auto => vec![native(), vllm()],
    };
    if diffusion_settings.configured() {
        slots.push(BenchSlot {
            label: "diffusion",
            bench: match lapse {
                Some(k) => Err(not_time_lapsed(k)),
                None => Ok(Box::new(DiffusionBench::new(diffusion_settings))),
            },
        });
    }
    Ok(BenchSet { slots })
}

/// The time-lapse of this run: against the simulator at `--sim-speed K` (K ≠ 1) with the
/// native bench (`--bench native` or `auto`), every trial runs time-lapsed by K and reports
/// on the real-time scale; `None` otherwise (real time, a real server, `--bench vllm`).
pub(crate) fn time_lapse(cfg: &SuiteConfig) -> Option<TimeLapse> {
    match (&cfg.server, cfg.bench.tool) {
        (ServerChoice::Sim { speed: Some(k), .. }, BenchTool::Native | BenchTool::Auto) => {
            TimeLapse::new(*k).filter(|t| !t.is_real_time())
        }
        _ => None,
    }
}

/// The simulator speed the run's figures are measured at on the wall clock: `None` for real
/// time and for a time-lapsed run (its figures are on the real-time scale, so the `SIM`
/// baselines judge it), `Some(K)` when a bench measures the sped-up simulator as it is.
pub(crate) fn wall_clock_speed(cfg: &SuiteConfig) -> Option<f64> {
    match &cfg.server {
        ServerChoice::Sim { speed, .. } if time_lapse(cfg).is_none() => *speed,
        _ => None,
    }
}

/// Why a bench that does not time-lapse may not run a trial of a time-lapsed run: its
/// figures would be wall-clock figures of the sped-up simulator, judged on the real-time
/// scale.
fn not_time_lapsed(k: TimeLapse) -> String {
    format!(
        "it does not time-lapse: at --sim-speed {} the native bench runs every trial on the \
         real-time scale (label SIM); run this trial at real time or with --bench vllm",
        k.factor()
    )
}

/// The native bench for the suite's bench flags; unset flags keep the bench's defaults.
/// Its progress line is only drawn when stderr is a terminal. Against the simulator at
/// `--sim-speed K` it runs the workload time-lapsed by K ([`TimeLapse`], [`time_lapse`]).
pub(crate) fn native_bench(cfg: &SuiteConfig) -> NativeBench {
    let (o, d) = (&cfg.bench, NativeSettings::default());
    let time_lapse = time_lapse(cfg).unwrap_or(d.time_lapse);
    NativeBench::new(NativeSettings {
        dataset_roots: o.dataset_roots.clone(),
        seed: o.seed.unwrap_or(d.seed),
        auth_token_env: o.auth_token_env.clone().or(d.auth_token_env),
        sample_rate: o.sample_rate,
        request_timeout: o.request_timeout.unwrap_or(d.request_timeout),
        read_timeout: o.read_timeout.unwrap_or(d.read_timeout),
        stall: StallRule {
            window: o.stall_window.unwrap_or(d.stall.window),
            floor: o.stall_floor.unwrap_or(d.stall.floor),
            ..d.stall
        },
        duration_scale: o.duration_scale.unwrap_or(d.duration_scale),
        tokenizer: o.native_tokenizer.clone(),
        connection: o.connection,
        progress: std::io::stderr().is_terminal(),
        time_lapse,
        ..d
    })
}

/// Writes the run's reports (report.md / report.html / junit.xml) from the run folder,
/// after summary.json.
pub(crate) fn write_reports(run_dir: &Path) -> Result<(), dfx_report::ReportError> {
    dfx_report::write_run_reports(run_dir).map(|_| ())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cli::try_parse_from;

    fn project(dir: &Path) -> Project {
        Project {
            root: dir.to_path_buf(),
            sim_bin: dir.join("sim"),
            guard_bin: dir.join("guard"),
            test_seams: None,
        }
    }

    fn config(argv: &[&str]) -> SuiteConfig {
        let dir = tempfile::tempdir().unwrap();
        let parsed = try_parse_from(
            ["perf", "--test-config-file", "x.json"]
                .into_iter()
                .chain(argv.iter().copied()),
        )
        .unwrap();
        SuiteConfig::from_parsed(parsed, &project(dir.path())).unwrap()
    }

    #[test]
    fn native_settings_come_from_the_suite_flags() {
        let roots = tempfile::tempdir().unwrap();
        let root = roots.path().display().to_string();
        let cfg = config(&[
            "--dataset-root",
            &root,
            "--seed",
            "42",
            "--sample-rate",
            "48000",
            "--request-timeout",
            "12.5",
            "--read-timeout",
            "3",
        ]);
        let bench = native_bench(&cfg);
        let s = bench.settings();
        assert_eq!(s.dataset_roots, [roots.path().to_path_buf()]);
        assert_eq!(s.seed, 42);
        assert_eq!(s.sample_rate, Some(48_000));
        assert_eq!(s.request_timeout, Duration::from_millis(12_500));
        assert_eq!(s.read_timeout, Duration::from_secs(3));
        // Tests do not run on a terminal: no progress line.
        assert!(!s.progress);
    }

    #[test]
    fn unset_flags_keep_the_native_defaults() {
        let s = native_bench(&config(&[])).settings().clone();
        let d = NativeSettings::default();
        assert_eq!(
            (s.seed, s.request_timeout, s.read_timeout, s.sample_rate),
            (d.seed, d.request_timeout, d.read_timeout, d.sample_rate)
        );
        assert_eq!(s.auth_token_env, d.auth_token_env);
    }

    /// `dfx-perf run` has no fakes: `--server fake` / `--bench fake` name the test binary;
    /// with the seams `tests/perf.rs` plugs in they are the fakes.
    #[test]
    fn the_fakes_exist_only_where_the_test_binary_plugs_them_in() {
        let bare = project(Path::new("/p"));
        let e = launcher(&config(&["--server", "fake"]), &bare)
            .err()
            .expect("no fake launcher without seams")
            .to_string();
        assert!(
            e.contains("--server fake is a test seam") && e.contains("cargo test --test perf"),
            "{e}"
        );
        let e = benches(&config(&["--bench", "fake"]), &bare)
            .err()
            .expect("no fake bench without seams")
            .to_string();
        assert!(e.contains("--bench fake is a test seam"), "{e}");

        let seamed = Project {
            test_seams: Some(TestSeams {
                launcher: dfx_testkit::fake::launcher_from_env,
                bench: dfx_testkit::fake::bench_from_env,
            }),
            ..bare
        };
        let fake = launcher(&config(&["--server", "fake"]), &seamed).expect("fake launcher");
        assert_eq!(fake.name(), "fake");
        let set = benches(&config(&["--bench", "fake"]), &seamed).expect("fake bench");
        assert_eq!(set.slots[0].label, "fake");
        assert!(set.slots[0].bench.is_ok());
    }

    #[test]
    fn bench_choice_gives_the_slots_in_order_of_preference() {
        let labels = |tool: &str| -> Vec<&'static str> {
            benches(&config(&["--bench", tool]), &project(Path::new("/p")))
                .unwrap()
                .slots
                .iter()
                .map(|s| s.label)
                .collect()
        };
        assert_eq!(labels("auto"), ["native", "vllm"]);
        assert_eq!(labels("native"), ["native"]);
        assert_eq!(labels("vllm"), ["vllm"]);
        let set = benches(&config(&["--bench", "native"]), &project(Path::new("/p"))).unwrap();
        assert!(set.slots[0].bench.is_ok(), "the native bench is wired");
    }
}
