//! The suite binary's flow: flags → plan (config errors stop everything before any
//! server starts) → decisions → libtest-mimic trials → summary.json (always, after the
//! last trial) → exit status.
//!
//! Exit statuses: [`crate::exit::SuiteExit`] (0 passed, 101 a trial failed, 2 nothing
//! started, 3 a closing file not written, 130 interrupted: see [`crate::interrupt`]).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::Local;
use dfx_core::config::{LoadOptions, load_plan};
use dfx_core::hardware;
use dfx_core::server::ServerLauncher;
use libtest_mimic::{Arguments, Completion, Failed};

use crate::cli::Parsed;
use crate::eta::{Eta, TICK, Ticker};
use crate::finish::{CloseGate, Closer, Closing, TrialRef};
use crate::interrupt;
use crate::listing::{ListContext, render_verbose};
use crate::partition::{self, ShardRecord, Sharded};
use crate::pool::ServerPool;
use crate::progress::{self, Progress, SharedProgress};
use crate::results::{RunDir, RunInfo, config_hashes, git_sha, hostname};
use crate::runner::{Ran, Session};
use crate::select::{BenchSet, Disposition, PlannedTrial, plan_trials, preflight};
use crate::settings::{Project, ServerChoice, SuiteConfig};
use crate::summary::SummaryEntry;
use crate::wiring;
use dfx_core::artefact::ConfigFileRef;

/// Exit status for problems found before anything ran.
const USAGE: u8 = crate::exit::SuiteExit::Usage.code();

/// Plan warnings printed on stderr before "… and N more".
const SHOWN_WARNINGS: usize = 5;

/// Runs the suite with an already parsed command line.
pub(crate) fn run(parsed: Parsed, project: Project) -> ExitCode {
    let project = project.rooted(parsed.args.suite.root.as_deref());
    let prepared = match prepare(parsed, &project) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if prepared.cfg.list_verbose || prepared.cfg.libtest.list {
        return list(&prepared);
    }
    if prepared.cfg.assert_baseline && prepared.selected.is_empty() {
        return usage_error(&format!(
            "--assert-baseline: no trial selected out of {} (filter {:?}, --skip {:?}{}); a run that checks baselines must run something",
            prepared.planned.len(),
            prepared.cfg.libtest.filter.as_deref().unwrap_or(""),
            prepared.cfg.libtest.skip,
            shard_note(prepared.shard.record.as_ref()),
        ));
    }
    if !runs_anything(&prepared) {
        return dry_run(&prepared);
    }
    if let Err(e) = project.check_guard(&prepared.cfg.server) {
        return usage_error(&e);
    }
    if let Err(errors) = preflight(&prepared.planned, &prepared.selected, &prepared.benches) {
        eprint!("{errors}");
        eprintln!("dfx-perf: nothing was started.");
        return ExitCode::from(USAGE);
    }
    execute(prepared, &project)
}

/// `, --partition count:2/3: 0 of 2 server groups` for messages about the selection.
fn shard_note(record: Option<&ShardRecord>) -> String {
    record.map_or_else(String::new, |r| {
        format!(
            ", --partition {}: {} of {} server groups",
            r.spec, r.server_groups_in_shard, r.server_groups
        )
    })
}

/// Whether any selected trial will execute (libtest runs it rather than ignoring it).
fn runs_anything(p: &Prepared) -> bool {
    let probe = build_trials(&p.planned, p.cfg.assert_baseline, None);
    p.selected
        .iter()
        .any(|&i| !p.cfg.libtest.is_ignored(&probe[i]))
}

/// A run in which no trial executes: the ignored trials and their reasons and libtest's
/// summary line are printed, but no run folder is created and `latest` is left alone, so
/// an empty run never hides the last real one.
fn dry_run(p: &Prepared) -> ExitCode {
    statically_ignored(
        &p.cfg.libtest,
        p.cfg.assert_baseline,
        &p.planned,
        &p.selected,
    );
    let probe = build_trials(&p.planned, p.cfg.assert_baseline, None);
    let conclusion = libtest_mimic::run(&p.cfg.libtest, in_shard(probe, &p.shard.in_shard));
    eprintln!(
        "dfx-perf: no trial ran, so no run folder was written under {}",
        p.cfg.results_dir.display()
    );
    conclusion.exit_code()
}

/// Everything decided before anything starts.
struct Prepared {
    cfg: SuiteConfig,
    launcher: Box<dyn ServerLauncher + Send>,
    hardware: String,
    plan_warnings: Vec<String>,
    benches: BenchSet,
    planned: Vec<PlannedTrial>,
    /// Selected plan indices (name filter, `--skip`, `--ignored`, then `--partition`).
    selected: Vec<usize>,
    /// Which trials libtest-mimic is given (`--partition`), and the shard's record.
    shard: Sharded,
}

/// Flags → launcher → hardware label → plan → decisions. Any error ends the run here,
/// before a server starts (status 2).
fn prepare(parsed: Parsed, project: &Project) -> Result<Prepared, ExitCode> {
    let cfg = SuiteConfig::from_parsed(parsed, project).map_err(|e| usage_error(&e.to_string()))?;
    for note in &cfg.notes {
        eprintln!("dfx-perf: note: {note}");
    }
    let launcher = wiring::launcher(&cfg, project).map_err(|e| usage_error(&e))?;
    let simulated = matches!(cfg.server, ServerChoice::Sim { .. })
        || launcher.implied_hardware() == Some(hardware::SIM);
    let hw = match &cfg.server {
        ServerChoice::Sim { .. } if cfg.hardware.is_none() => {
            hardware::sim_label(wiring::wall_clock_speed(&cfg))
        }
        _ => hardware::detect(cfg.hardware.as_deref(), simulated),
    };
    let plan = load_plan(&LoadOptions {
        files: cfg.config_files.clone(),
        hardware: hw.clone(),
        deploy_dir: cfg.deploy_dir.clone(),
        baselines_dir: cfg.baselines_dir.clone(),
        mark: cfg.mark.clone(),
    })
    .map_err(|errors| {
        eprint!("{errors}");
        eprintln!("dfx-perf: nothing was started.");
        ExitCode::from(USAGE)
    })?;
    super::settings::known_hardware(cfg.hardware.is_some(), &hw, &plan.hardware_labels)
        .map_err(|e| usage_error(&e))?;
    print_warnings(&plan.warnings);
    let benches = wiring::benches(&cfg, project).map_err(|e| usage_error(&e))?;
    let planned = plan_trials(&plan, &*launcher, &benches);
    let filtered = selection(
        &cfg.libtest,
        &build_trials(&planned, cfg.assert_baseline, None),
    );
    let shard = partition::apply(cfg.partition.as_ref(), &planned, &filtered);
    if let Some(r) = &shard.record {
        eprintln!(
            "dfx-perf: --partition {}: {} of {} server group(s), {} of {} selected trial(s)",
            r.spec,
            r.server_groups_in_shard,
            r.server_groups,
            shard.selected.len(),
            filtered.len()
        );
    }
    let selected = shard.selected.clone();
    Ok(Prepared {
        cfg,
        launcher,
        hardware: hw,
        plan_warnings: plan.warnings,
        benches,
        planned,
        selected,
        shard,
    })
}

/// `--list` (libtest's own output) or `--list-verbose`.
fn list(p: &Prepared) -> ExitCode {
    if p.cfg.list_verbose {
        let ctx = ListContext {
            benches: &p.benches,
            launcher: p.launcher.name(),
            hardware: &p.hardware,
            assert_baseline: p.cfg.assert_baseline,
            shard: p.shard.record.as_ref(),
        };
        print!("{}", render_verbose(&p.planned, &p.selected, &ctx));
    } else {
        let probe = build_trials(&p.planned, p.cfg.assert_baseline, None);
        let _ = libtest_mimic::run(&p.cfg.libtest, in_shard(probe, &p.shard.in_shard));
    }
    ExitCode::SUCCESS
}

/// Stops what earlier runs left behind, creates the run folder, runs the selected trials,
/// closes the run (summary.json, run.json, reports). From the moment the run folder
/// exists, SIGINT / SIGTERM close the run instead ([`interrupt`]); the [`CloseGate`]
/// makes sure only one of the two does.
fn execute(p: Prepared, project: &Project) -> ExitCode {
    let swept = wiring::sweep_leftovers(&p.cfg.results_dir);
    let started = Local::now();
    let run = match RunDir::create(&p.cfg.results_dir, &p.hardware, started) {
        Ok(r) => r,
        Err(e) => {
            return usage_error(&format!(
                "cannot create a run folder under {}: {e}",
                p.cfg.results_dir.display()
            ));
        }
    };
    let mut info = run_info(&p, project, &run, started);
    info.warnings.extend(swept);
    let history_runs = history_runs(&p.cfg, &info, &p.hardware);
    if let Err(w) = &history_runs {
        eprintln!("dfx-perf: warning: {w}");
        info.warnings.push(w.to_string());
    }
    let Prepared {
        cfg,
        launcher,
        hardware: hw,
        benches,
        planned,
        selected,
        shard,
        ..
    } = p;
    let progress = Progress::shared(statically_ignored(
        &cfg.libtest,
        cfg.assert_baseline,
        &planned,
        &selected,
    ));
    let known = history_durations(&planned, history_runs.as_deref().unwrap_or_default());
    let lapse = wiring::time_lapse(&cfg).map_or(1.0, |k| k.factor());
    progress::lock(&progress).eta =
        run_eta(&progress, &planned, &selected, lapse).with_known(known);
    let closing = Arc::new(Closing {
        run: run.clone(),
        info: info.clone(),
        hardware: hw.clone(),
        assert_baseline: cfg.assert_baseline,
        trials: planned
            .iter()
            .map(|p| TrialRef {
                trial: Arc::clone(&p.trial),
                dir_name: p.dir_name.clone(),
            })
            .collect(),
        selected,
        history: cfg.history.clone(),
        gate: CloseGate::default(),
    });
    crate::reserve::hold();
    // Before run.json exists: a signal from then on always closes the run.
    if let Err(e) = interrupt::install(closing.clone(), progress.clone()) {
        eprintln!("dfx-perf: warning: {e}; an interrupted run leaves no summary.json");
    }
    if let Err(e) = run.write_run_info(&info) {
        return usage_error(&format!("cannot write run.json: {e}"));
    }
    let session = Arc::new(Mutex::new(Session {
        run: run.clone(),
        pool: ServerPool::new(launcher, run.servers_dir(), cfg.ready_timeout),
        benches,
        planned,
        hardware: hw,
        assert_baseline: cfg.assert_baseline,
        require_thresholds: cfg.require_thresholds,
        progress: progress.clone(),
        upstream_results_dir: cfg.upstream_results_dir.clone(),
        gpu_absent_said: false,
        quality_cmd: cfg
            .quality_cmd
            .clone()
            .map(|cmd| crate::quality::QualityHook {
                cmd,
                supervision: wiring::supervision(&cfg, project),
            }),
        quality_said: false,
        ia_counts: Default::default(),
        trial_started: chrono::Local::now(),
        repeats: cfg.repeats,
        seed: cfg.bench.seed.unwrap_or(0),
        gpu_hour_price: cfg.gpu_hour_price,
        history: history_runs.unwrap_or_default(),
    }));
    let trials = build_trials(
        &lock(&session).planned,
        cfg.assert_baseline,
        Some(session.clone()),
    );
    let ticking = progress.clone();
    let ticker = Ticker::start(
        move || crate::progress::running_line(&ticking),
        TICK,
        true,
        std::io::stderr(),
    );
    let conclusion = libtest_mimic::run(&cfg.libtest, in_shard(trials, &shard.in_shard));
    drop(ticker);

    if closing.gate.claim(Closer::Main).is_err() {
        // A signal came first: its handler closes the run and exits with status 130.
        return interrupt::await_handler(&closing.gate);
    }
    crate::reserve::release();
    let mut s = lock(&session);
    s.pool.shutdown();
    let mut p = progress::lock(&progress);
    if !p.frozen {
        p.server_starts = s.pool.starts();
        p.notes.clone_from(&s.pool.notes);
    }
    let mut failed_writes = closing.close(&mut p, None);
    failed_writes.extend(closing.seal());
    closing.gate.finish();
    if !failed_writes.is_empty() {
        eprintln!(
            "dfx-perf: {} of the run's closing file(s) could not be written (above); exit status {}",
            failed_writes.len(),
            crate::finish::EXIT_WRITE_FAILED
        );
        return ExitCode::from(crate::finish::EXIT_WRITE_FAILED);
    }
    conclusion.exit_code()
}

/// The `--history` runs of this run's hardware identity (none without the flag), read
/// before the first trial; `Err` is the warning of a store that could not be read.
fn history_runs(
    cfg: &SuiteConfig,
    info: &RunInfo,
    hw: &str,
) -> Result<Vec<dfx_history::RunRecord>, crate::history::NotRead> {
    let Some(spec) = &cfg.history else {
        return Ok(Vec::new());
    };
    let identity = dfx_report::run::hardware_identity(hw, info.sim_speed);
    crate::history::read_runs(spec, &identity)
}

/// Summary entries of the selected trials libtest will not run (ignored flag, no
/// `--ignored` / `--include-ignored`); their reasons are printed, grouped.
fn statically_ignored(
    args: &Arguments,
    assert_baseline: bool,
    planned: &[PlannedTrial],
    selected: &[usize],
) -> Vec<Option<SummaryEntry>> {
    let probe = build_trials(planned, assert_baseline, None);
    let mut entries: Vec<Option<SummaryEntry>> = vec![None; planned.len()];
    let mut by_reason: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in selected {
        if let Disposition::Skip { reason } = &planned[i].disposition
            && args.is_ignored(&probe[i])
        {
            entries[i] = Some(SummaryEntry::ignored(&planned[i].trial, reason));
            *by_reason.entry(reason).or_default() += 1;
        }
    }
    for (reason, n) in by_reason {
        eprintln!("dfx-perf: {n} trial(s) ignored: {reason}");
    }
    entries
}

/// The trials that will execute (selected, not statically ignored), in plan order, with
/// every trial's name and plan estimate.
/// Each planned trial's bench duration in the history (the median of its last three clean
/// runs), when the history knows it: the time-left estimate's first guess.
fn history_durations(
    planned: &[PlannedTrial],
    runs: &[dfx_history::RunRecord],
) -> Vec<Option<f64>> {
    planned
        .iter()
        .map(|p| {
            let mut seen: Vec<f64> = runs
                .iter()
                .rev()
                .filter_map(|r| r.trials.iter().find(|t| t.name == p.trial.name))
                .filter(|t| t.outcome == dfx_history::TrialOutcome::Passed && t.unclean.is_none())
                .filter_map(|t| t.metrics.get("duration").copied())
                .filter(|d| d.is_finite() && *d > 0.0)
                .take(3)
                .collect();
            seen.sort_by(f64::total_cmp);
            seen.get(seen.len() / 2).copied()
        })
        .collect()
}

/// The run's progress estimate: each trial's plan bound, its load part ÷ `lapse` in a
/// time-lapsed run (the schedule runs K times faster).
fn run_eta(
    progress: &SharedProgress,
    planned: &[PlannedTrial],
    selected: &[usize],
    lapse: f64,
) -> Eta {
    let entries = &progress::lock(progress).entries;
    let order = selected
        .iter()
        .copied()
        .filter(|&i| entries[i].is_none())
        .collect();
    let names = planned.iter().map(|p| p.trial.name.clone()).collect();
    let estimates = planned
        .iter()
        .map(|p| crate::estimate::trial_seconds_lapsed(&p.trial, lapse))
        .collect();
    Eta::new(order, names, estimates)
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

fn usage_error(message: &dyn std::fmt::Display) -> ExitCode {
    let message = message.to_string();
    let message = message.as_str();
    eprintln!("{}", dfx_core::diag::clip_lines(&prefixed(message)));
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
pub(crate) fn build_trials(
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
                if dfx_core::stop::requested() {
                    return Err(Failed::from("not run: the run was interrupted"));
                }
                let result = lock(&session).run_trial(i);
                match result {
                    Ok(Ran::Passed) => Ok(Completion::Completed),
                    Ok(Ran::Ignored(reason)) => Ok(Completion::ignored_with(reason)),
                    Err(e) => Err(Failed::from(e.to_string())),
                }
            })
            .with_ignored_flag(ignored)
        })
        .collect()
}

/// The trials of the shard (all of them without `--partition`); the others are not given
/// to libtest-mimic at all, so they are neither listed nor counted.
fn in_shard(trials: Vec<libtest_mimic::Trial>, keep: &[bool]) -> Vec<libtest_mimic::Trial> {
    trials
        .into_iter()
        .zip(keep)
        .filter_map(|(t, &k)| k.then_some(t))
        .collect()
}

/// The selected trial indices for `args` (libtest-mimic's own filter logic).
pub(crate) fn selection(args: &Arguments, trials: &[libtest_mimic::Trial]) -> Vec<usize> {
    (0..trials.len())
        .filter(|&i| !args.is_filtered_out(&trials[i]))
        .collect()
}

fn run_info(
    p: &Prepared,
    project: &Project,
    run: &RunDir,
    started: chrono::DateTime<Local>,
) -> RunInfo {
    let cfg = &p.cfg;
    let sim_speed = match &cfg.server {
        ServerChoice::Sim { speed, .. } => *speed,
        _ => None,
    };
    RunInfo {
        run_id: Some(run.id.clone()),
        dfx_perf_version: Some(env!("CARGO_PKG_VERSION").into()),
        git_sha: git_sha(&project.root),
        hardware: Some(p.hardware.clone()),
        server: Some(cfg.server.label().into()),
        launcher: Some(p.launcher.name().into()),
        sim_speed,
        bench_tool: Some(format!("{:?}", cfg.bench.tool).to_lowercase()),
        assert_baseline: cfg.assert_baseline,
        flags: cfg.flags.clone(),
        argv: std::env::args().collect(),
        config_files: cfg
            .config_files
            .iter()
            .map(|f| ConfigFileRef::Path(f.display().to_string()))
            .collect(),
        config_hashes: config_hashes(&cfg.config_files),
        partition: p.shard.record.clone(),
        hostname: Some(hostname()),
        started: Some(started.to_rfc3339()),
        finished: None,
        interrupted: false,
        trials_planned: p.planned.len(),
        trials_selected: p.selected.len(),
        warnings: p.plan_warnings.iter().chain(&cfg.notes).cloned().collect(),
        gpu: crate::fingerprint::gpu(),
        server_versions: Default::default(),
        merged_from: Vec::new(),
        shards_missing: Vec::new(),
    }
}
