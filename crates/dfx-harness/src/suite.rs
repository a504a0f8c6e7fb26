//! The suite binary's flow: flags → plan (config errors stop everything before any
//! server starts) → decisions → libtest-mimic trials → summary.json (always, after the
//! last trial) → exit status.
//!
//! Exit status: 0 all selected trials passed or were ignored; 101 a trial failed
//! (libtest's convention); 2 bad flags, config errors, or the results folder cannot be
//! created (nothing was started).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::Local;
use dfx_core::config::{LoadOptions, load_plan};
use dfx_core::fsutil::write_json_atomic;
use dfx_core::hardware;
use libtest_mimic::{Arguments, Completion, Failed};

use crate::cli::Parsed;
use crate::listing::{ListContext, render_verbose};
use crate::pool::ServerPool;
use crate::results::{RunDir, RunInfo, git_sha, hostname};
use crate::runner::{Ran, Session};
use crate::select::{Disposition, PlannedTrial, plan_trials};
use crate::settings::{Project, ServerChoice, SuiteConfig};
use crate::summary::{Summary, SummaryEntry};
use crate::wiring;

/// Exit status for problems found before anything ran.
const USAGE: u8 = 2;

/// Plan warnings printed on stderr before "… and N more".
const SHOWN_WARNINGS: usize = 5;

/// Runs the suite with an already parsed command line.
pub fn run(parsed: Parsed, project: Project) -> ExitCode {
    let cfg = match SuiteConfig::from_parsed(parsed, &project) {
        Ok(c) => c,
        Err(e) => return usage_error(&e.to_string()),
    };
    for note in &cfg.notes {
        eprintln!("dfx-perf: note: {note}");
    }
    let launcher = match wiring::launcher(&cfg, &project) {
        Ok(l) => l,
        Err(e) => return usage_error(&e),
    };
    let simulated = matches!(cfg.server, ServerChoice::Sim { .. })
        || launcher.implied_hardware() == Some(hardware::SIM);
    let hw = hardware::detect(cfg.hardware.as_deref(), simulated);
    let plan = match load_plan(&LoadOptions {
        files: cfg.config_files.clone(),
        hardware: hw.clone(),
        deploy_dir: cfg.deploy_dir.clone(),
        baselines_dir: cfg.baselines_dir.clone(),
        mark: cfg.mark.clone(),
    }) {
        Ok(p) => p,
        Err(errors) => {
            eprint!("{errors}");
            eprintln!("dfx-perf: nothing was started.");
            return ExitCode::from(USAGE);
        }
    };
    print_warnings(&plan.warnings);
    let benches = match wiring::benches(&cfg) {
        Ok(b) => b,
        Err(e) => return usage_error(&e),
    };
    let planned = plan_trials(&plan, &*launcher, &benches);
    let probe = build_trials(&planned, cfg.assert_baseline, None);
    let selected = selection(&cfg.libtest, &probe);

    if cfg.list_verbose {
        let ctx = ListContext {
            benches: &benches,
            launcher: launcher.name(),
            hardware: &hw,
            assert_baseline: cfg.assert_baseline,
        };
        print!("{}", render_verbose(&planned, &selected, &ctx));
        return ExitCode::SUCCESS;
    }
    if cfg.libtest.list {
        let _ = libtest_mimic::run(&cfg.libtest, probe);
        return ExitCode::SUCCESS;
    }
    if cfg.assert_baseline && selected.is_empty() {
        return usage_error(&format!(
            "--assert-baseline: no trial selected out of {} (filter {:?}, --skip {:?}); a run that checks baselines must run something",
            planned.len(),
            cfg.libtest.filter.as_deref().unwrap_or(""),
            cfg.libtest.skip
        ));
    }

    let started = Local::now();
    let run = match RunDir::create(&cfg.results_dir, &hw, started) {
        Ok(r) => r,
        Err(e) => {
            return usage_error(&format!(
                "cannot create a run folder under {}: {e}",
                cfg.results_dir.display()
            ));
        }
    };
    let mut info = run_info(
        &cfg,
        &project,
        &run,
        &hw,
        launcher.name(),
        &plan.warnings,
        started,
    );
    info.trials_planned = planned.len();
    info.trials_selected = selected.len();
    if let Err(e) = run.write_run_info(&info) {
        return usage_error(&format!("cannot write run.json: {e}"));
    }

    let mut entries: Vec<Option<SummaryEntry>> = vec![None; planned.len()];
    let mut ignored_by_reason: BTreeMap<String, usize> = BTreeMap::new();
    for &i in &selected {
        if let Disposition::Skip { reason } = &planned[i].disposition
            && cfg.libtest.is_ignored(&probe[i])
        {
            entries[i] = Some(SummaryEntry::ignored(&planned[i].trial, reason));
            *ignored_by_reason.entry(reason.clone()).or_default() += 1;
        }
    }
    for (reason, n) in &ignored_by_reason {
        eprintln!("dfx-perf: {n} trial(s) ignored: {reason}");
    }
    let filtered_out = planned.len() - selected.len();
    let session = Arc::new(Mutex::new(Session {
        run: run.clone(),
        pool: ServerPool::new(launcher, run.servers_dir(), cfg.ready_timeout),
        benches,
        planned,
        hardware: hw.clone(),
        assert_baseline: cfg.assert_baseline,
        entries,
    }));
    let trials = build_trials(
        &lock(&session).planned,
        cfg.assert_baseline,
        Some(session.clone()),
    );
    wiring::install_signal_handlers();
    let conclusion = libtest_mimic::run(&cfg.libtest, trials);

    let mut s = lock(&session);
    s.pool.shutdown();
    let summary = Summary::new(
        &run.id,
        &hw,
        cfg.assert_baseline,
        filtered_out,
        s.pool.starts(),
        std::mem::take(&mut s.pool.notes),
        s.entries.iter().flatten().cloned().collect(),
    );
    if let Err(e) = write_json_atomic(&run.path.join("summary.json"), &summary) {
        eprintln!("dfx-perf: cannot write summary.json: {e}");
    }
    info.finished = Some(Local::now().to_rfc3339());
    if let Err(e) = run.write_run_info(&info) {
        eprintln!("dfx-perf: cannot update run.json: {e}");
    }
    if let Err(e) = wiring::write_reports(&run.path) {
        eprintln!("dfx-perf: reports not written: {e}");
    }
    eprintln!("dfx-perf: results in {}", run.path.display());
    conclusion.exit_code()
}

/// Plan warnings on stderr, at most [`SHOWN_WARNINGS`] of them (all go into run.json).
fn print_warnings(warnings: &[String]) {
    for w in warnings.iter().take(SHOWN_WARNINGS) {
        eprintln!("dfx-perf: warning: {w}");
    }
    if warnings.len() > SHOWN_WARNINGS {
        eprintln!(
            "dfx-perf: … and {} more warning(s) (all are listed in the run's run.json)",
            warnings.len() - SHOWN_WARNINGS
        );
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("{}", prefixed(message));
    eprintln!("dfx-perf: nothing was started.");
    ExitCode::from(USAGE)
}

fn prefixed(message: &str) -> String {
    if message.starts_with("error:") {
        message.to_string()
    } else {
        format!("error: {message}")
    }
}

fn lock(s: &Mutex<Session>) -> MutexGuard<'_, Session> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// One libtest-mimic trial per plan trial, named exactly as the plan names it, in plan
/// order. Trials that cannot run carry libtest's ignored flag (so `--ignored` and
/// `--include-ignored` behave as usual) unless `--assert-baseline` turns them into
/// failures. Without a session the runners are never meant to be called (listing).
pub fn build_trials(
    planned: &[PlannedTrial],
    assert_baseline: bool,
    session: Option<Arc<Mutex<Session>>>,
) -> Vec<libtest_mimic::Trial> {
    planned
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let ignored = !assert_baseline && matches!(p.disposition, Disposition::Skip { .. });
            let session = session.clone();
            libtest_mimic::Trial::ignorable_test(p.trial.name.clone(), move || {
                let Some(session) = session else {
                    return Err(Failed::from("internal: trial run without a session"));
                };
                let result = lock(&session).run_trial(i);
                match result {
                    Ok(Ran::Passed) => Ok(Completion::Completed),
                    Ok(Ran::Ignored(reason)) => Ok(Completion::ignored_with(reason)),
                    Err(msg) => Err(Failed::from(msg)),
                }
            })
            .with_ignored_flag(ignored)
        })
        .collect()
}

/// The selected trial indices for `args` (libtest-mimic's own filter logic).
pub fn selection(args: &Arguments, trials: &[libtest_mimic::Trial]) -> Vec<usize> {
    (0..trials.len())
        .filter(|&i| !args.is_filtered_out(&trials[i]))
        .collect()
}

fn run_info(
    cfg: &SuiteConfig,
    project: &Project,
    run: &RunDir,
    hw: &str,
    launcher: &str,
    warnings: &[String],
    started: chrono::DateTime<Local>,
) -> RunInfo {
    let sim_speed = match &cfg.server {
        ServerChoice::Sim { speed, .. } => *speed,
        _ => None,
    };
    RunInfo {
        run_id: run.id.clone(),
        dfx_perf_version: env!("CARGO_PKG_VERSION").into(),
        git_sha: git_sha(&project.root),
        hardware: hw.into(),
        server: cfg.server.label().into(),
        launcher: launcher.into(),
        sim_speed,
        bench_tool: format!("{:?}", cfg.bench.tool).to_lowercase(),
        assert_baseline: cfg.assert_baseline,
        flags: cfg.flags.clone(),
        argv: std::env::args().collect(),
        config_files: cfg.config_files.clone(),
        hostname: hostname(),
        started: started.to_rfc3339(),
        finished: None,
        trials_planned: 0,
        trials_selected: 0,
        warnings: warnings.iter().chain(&cfg.notes).cloned().collect(),
    }
}
