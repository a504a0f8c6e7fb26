//! Running one trial: get a server from the pool, run the bench into the trial folder,
//! complete the result document with the runner's keys, judge it, write `result.json`
//! and `verdict.json`, and record the summary entry. A trial that fails still writes its
//! result (the template fallback when the bench left none).

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use dfx_core::artefact::VerdictFile;
use dfx_core::bench::BenchContext;
use dfx_core::checks;
use dfx_core::fsutil::write_json_atomic;
use dfx_core::result::{ResultDoc, template_fallback};
use dfx_core::verdict::{FailureClass, Verdict, completion_failure, judge, template_failure};
use serde_json::{Value, json};

use crate::pool::{ServerInfo, ServerPool};
use crate::progress::{Current, SharedProgress, lock};
use crate::result_keys::add_runner_keys;
use crate::results::RunDir;
use crate::select::{BenchSet, Disposition, PlannedTrial};
use crate::summary::{Outcome, SummaryEntry};

mod capacity;
mod classify;
mod error;
pub(crate) mod failure;
mod repeat;

pub(crate) use error::TrialError;
use failure::{Fallback, NotRun, TrialFailure, render};
pub(crate) mod upstream;

/// How long a trial that saw failures waits for its server to finish exiting before the
/// failures are classified (a crash is then named with its exit status and log tail).
const EXIT_SETTLE: Duration = Duration::from_secs(5);

/// How a trial that did not fail ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ran {
    Passed,
    /// Cannot run (plain run only), with the reason.
    Ignored(String),
}

/// Everything the trials of one run share. Trials run one at a time, in plan order.
pub(crate) struct Session {
    pub run: RunDir,
    pub pool: ServerPool,
    pub benches: BenchSet,
    pub planned: Vec<PlannedTrial>,
    /// Hardware label of the run (`H100`, `SIM`, `na`).
    pub hardware: String,
    pub assert_baseline: bool,
    /// `--require-thresholds`: a judged trial without a threshold for the hardware fails.
    pub require_thresholds: bool,
    /// Summary entries, the trial in progress, server starts (shared with the signal
    /// handler).
    pub progress: SharedProgress,
    /// `--upstream-results-dir`: a flat folder that also gets each upstream-named result.
    pub upstream_results_dir: Option<PathBuf>,
    /// Whether the run already said that `nvidia-smi` is missing.
    pub gpu_absent_said: bool,
    /// `--quality-cmd`: the evaluator run on the kept audio of `seed_tts_wer_eval` entries.
    pub quality_cmd: Option<crate::quality::QualityHook>,
    /// Whether the run already said that a quality was not evaluated.
    pub quality_said: bool,
    /// OmniInteract subsets' counts for the pooled IA-QTF1 gate.
    pub ia_counts: checks::SubsetCounts,
    /// When the running trial started (the `upstream/` file name's time).
    pub trial_started: chrono::DateTime<chrono::Local>,
    /// `--repeats`: runs of each step, over the entries' `repeats` key.
    pub repeats: Option<NonZeroU32>,
    /// The run's seed (`--seed`, default 0), the first repeat's when the entry has none.
    pub seed: u64,
    /// `--gpu-hour-price`: price of one GPU-hour, for a capacity search's cost.
    pub gpu_hour_price: Option<f64>,
    /// `--history`'s runs of this run's hardware identity, read before the first trial
    /// (empty without it, or when it could not be read): a breach inside its cell's noise
    /// in them is `breach_within_noise`.
    pub history: Vec<dfx_history::RunRecord>,
}

/// What the bench side of a trial produced, before judging.
struct Produced {
    doc: ResultDoc,
    /// Failures the verdict cannot see (bench exit status, server death, invalid load).
    failures: Vec<TrialFailure>,
    /// Why the document is the template fallback (also stored in it as
    /// `fallback_reason`), when it is.
    fallback: Option<Fallback>,
    /// Bench log tail shown with a fallback.
    log_tail: String,
    /// False when no bench ran at all (server failed to start, trial cannot run): the
    /// reason is the whole verdict.
    judged: bool,
    errors: Vec<String>,
    bench: Option<&'static str>,
    server: Option<ServerInfo>,
}

/// After a signal the handler owns the run folder (it closes and seals it): the runner
/// writes nothing more there.
fn interrupted() -> Result<(), TrialError> {
    if dfx_core::stop::requested() {
        return Err(TrialError::Interrupted);
    }
    Ok(())
}

impl Session {
    /// Runs trial `idx`: `Ok(Passed)`, `Ok(Ignored(reason))` when it cannot run on a plain
    /// run, `Err(message)` when it failed. Panics are caught and recorded as
    /// failures.
    pub(crate) fn run_trial(&mut self, idx: usize) -> Result<Ran, TrialError> {
        let started = Instant::now();
        self.trial_started = chrono::Local::now();
        {
            let mut progress = lock(&self.progress);
            if let Some(line) = progress.eta.line(idx, None).filter(|_| !progress.frozen) {
                eprintln!("dfx-perf: {line}");
            }
            if !progress.frozen {
                progress.current = Some(Current {
                    idx,
                    started,
                    bench: None,
                    server: None,
                });
            }
        }
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_inner(idx)));
        let result = caught.unwrap_or_else(|payload| {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            let err = TrialError::Panicked(msg);
            let msg = err.to_string();
            let mut entry = SummaryEntry::new(&self.planned[idx].trial, Outcome::Failed);
            entry.failures.push(msg.clone());
            entry.failure_class = Some(FailureClass::Harness);
            entry.failure_detail = Some(msg.clone());
            match self.write_panicked(idx, &msg) {
                Ok(rel) => entry.result = Some(rel),
                Err(e) => entry.failures.push(e.to_string()),
            }
            self.record(idx, entry);
            Err(err)
        });
        let mut progress = lock(&self.progress);
        if progress.frozen {
            return result;
        }
        let seconds = started.elapsed().as_secs_f64();
        if let Some(e) = progress.entries[idx].as_mut() {
            e.seconds = Some(seconds);
        }
        progress.eta.finished(idx, seconds);
        progress.current = None;
        progress.server_starts = self.pool.starts();
        progress.notes.clone_from(&self.pool.notes);
        result
    }

    /// After a panic inside trial `idx`: the template `result.json` and a `verdict.json`
    /// saying why, so the trial folder holds a result like every failed trial's (its
    /// partial `records.jsonl` and `bench.log` stay). Returns the result's relative path.
    fn write_panicked(&self, idx: usize, msg: &str) -> Result<String, TrialError> {
        let p = &self.planned[idx];
        let dir = self.run.trial_dir(&p.dir_name);
        std::fs::create_dir_all(&dir).map_err(|source| TrialError::CreateDir {
            dir: dir.clone(),
            source,
        })?;
        let mut doc = template_fallback(msg);
        add_runner_keys(&mut doc, &p.trial, &self.hardware, None);
        let mut verdict = Verdict::failed(vec![msg.to_string()]);
        verdict.classify(FailureClass::Harness, msg.to_string());
        doc.insert("verdict".into(), json!(verdict));
        let file = VerdictFile::new(&p.trial.name, verdict, &p.trial.thresholds);
        write_json_atomic(&dir.join("result.json"), &doc)
            .and_then(|()| write_json_atomic(&dir.join("verdict.json"), &file))
            .map_err(TrialError::WritePanicked)?;
        Ok(format!("trials/{}/result.json", p.dir_name))
    }

    /// A copy of trial `idx`'s summary entry, once recorded.
    #[cfg(test)]
    pub(crate) fn entry(&self, idx: usize) -> Option<SummaryEntry> {
        lock(&self.progress).entries[idx].clone()
    }

    fn record(&self, idx: usize, entry: SummaryEntry) {
        let mut progress = lock(&self.progress);
        if !progress.frozen {
            progress.entries[idx] = Some(entry);
        }
    }

    /// Tells the progress which bench and server the running trial uses.
    fn running_on(&self, bench: &'static str, server: Option<&ServerInfo>) {
        let mut progress = lock(&self.progress);
        if progress.frozen {
            return;
        }
        progress.server_starts = self.pool.starts();
        if let Some(c) = progress.current.as_mut() {
            c.bench = Some(bench);
            c.server = server.cloned();
        }
    }

    fn run_inner(&mut self, idx: usize) -> Result<Ran, TrialError> {
        let dir = self.run.trial_dir(&self.planned[idx].dir_name);
        let slot = match &self.planned[idx].disposition {
            Disposition::Run { slot } => *slot,
            Disposition::Skip { reason } if !self.assert_baseline => {
                let reason = reason.clone();
                self.record(
                    idx,
                    SummaryEntry::ignored(&self.planned[idx].trial, &reason),
                );
                return Ok(Ran::Ignored(reason));
            }
            Disposition::Skip { reason } => {
                let why = NotRun::Forbidden {
                    reason: reason.clone(),
                };
                let produced = Produced::fallback(why, None, None);
                return self.conclude(idx, dir, produced);
            }
        };
        interrupted()?;
        if let Err(source) = std::fs::create_dir_all(&dir) {
            return Err(TrialError::CreateDir { dir, source });
        }
        let trial = &self.planned[idx].trial;
        let label = self.benches.label(slot);
        let acquired = self.pool.acquire(&trial.server, &trial.test_name);
        self.running_on(label, acquired.as_ref().ok());
        let server = match acquired {
            Ok(s) => s,
            Err(e) => {
                let (class, detail) = classify::start_failure(&e);
                let message = e.to_string();
                let why = NotRun::ServerStart {
                    message,
                    class,
                    detail,
                };
                let produced = Produced::fallback(why, Some(label), None);
                return self.conclude(idx, dir, produced);
            }
        };
        interrupted()?;
        let produced = self.bench(idx, slot, &dir, server);
        self.conclude(idx, dir, produced)
    }

    fn bench(
        &mut self,
        idx: usize,
        slot: usize,
        dir: &std::path::Path,
        server: ServerInfo,
    ) -> Produced {
        let trial = &self.planned[idx].trial;
        let label = self.benches.label(slot);
        let Some(bench) = self.benches.get(slot) else {
            return Produced::fallback(NotRun::BenchMissing { label }, Some(label), Some(server));
        };
        let ctx = BenchContext {
            trial,
            base_url: server.base_url.clone(),
            host: server.host.clone(),
            port: server.port,
            out_dir: dir.to_path_buf(),
            hardware: self.hardware.clone(),
            judge_url: server.judge_url.clone(),
            server_group: server.process_group,
        };
        let sampler = gpu_sampler(&mut self.gpu_absent_said, &trial.server.env, dir, &server);
        let repeats = trial.entry.repeats(self.repeats);
        let base_seed = trial.entry.seed.unwrap_or(self.seed);
        let (cmd, said) = (self.quality_cmd.as_ref(), &mut self.quality_said);
        let piece = match trial.entry.capacity {
            Some(spec) => {
                let search = capacity::Search {
                    spec,
                    repeats,
                    base_seed,
                    label,
                    cmd,
                    said,
                };
                capacity::run(bench, &ctx, search)
            }
            None => {
                let quality = repeat::QualityStep { cmd, said };
                repeat::run(bench, &ctx, label, repeats, base_seed, quality)
            }
        };
        let gpu = sampler.map(crate::gpu::GpuSampler::finish);
        let mut failures = Vec::new();
        // A server that crashed mid-trial may still be exiting when the bench returns:
        // a trial that saw failures gives it a few seconds, so the crash is named.
        let troubled = !piece.failures.is_empty() || !piece.errors.is_empty();
        let settle = if troubled {
            EXIT_SETTLE
        } else {
            Duration::ZERO
        };
        if let Err(died) = self.pool.check_after_trial(settle) {
            failures.push(TrialFailure::ServerDied(died));
        }
        failures.extend(piece.failures);
        let mut doc = piece.doc;
        if let Some(g) = &gpu {
            g.insert_into(&mut doc);
        }
        if trial.entry.capacity.is_some() {
            let visible = trial.server.env.get("CUDA_VISIBLE_DEVICES");
            let gpus = visible.map(|v| v.split(',').filter(|d| !d.trim().is_empty()).count());
            capacity::add_cost(&mut doc, self.gpu_hour_price, gpus);
        }
        let (fallback, log_tail) = (piece.fallback.map(Fallback::NoResult), piece.log_tail);
        Produced {
            doc,
            failures,
            fallback,
            log_tail,
            judged: true,
            errors: piece.errors,
            bench: Some(label),
            server: Some(server),
        }
    }

    /// Completes the document, judges it, writes result.json / verdict.json, records the
    /// summary entry.
    fn conclude(&mut self, idx: usize, dir: PathBuf, mut p: Produced) -> Result<Ran, TrialError> {
        interrupted()?;
        let trial = &self.planned[idx].trial;
        let mut doc = std::mem::take(&mut p.doc);
        add_runner_keys(&mut doc, trial, &self.hardware, p.bench);
        // A soak sends batches until its time is over: every request it sent must have
        // completed (upstream: failed == 0), however many that was.
        let expected = match trial.entry.dialect {
            dfx_core::plan::Dialect::Stability => doc
                .get("num_prompts")
                .and_then(Value::as_u64)
                .filter(|n| *n > 0)
                .unwrap_or(trial.step.num_prompts.get()),
            _ => trial.step.num_prompts.get(),
        };
        let verdict = if p.judged {
            let mut v = judge(
                &doc,
                expected,
                &trial.thresholds,
                &p.errors,
                self.assert_baseline,
            );
            if p.fallback.is_none() {
                v.failures.extend(checks::fixed_length_failures(
                    &trial.entry,
                    &doc,
                    trial.step.num_prompts.get(),
                ));
                v.failures
                    .extend(checks::tpot_failures(&trial.thresholds, &doc));
                let own = checks::omniinteract_failures(&trial.entry, &doc, expected);
                if own.is_empty() {
                    let name = &trial.test_name;
                    let pooled = checks::pooled_gate(&mut self.ia_counts, name, &trial.entry, &doc);
                    v.failures.extend(pooled);
                }
                v.failures.extend(own);
            }
            if self.require_thresholds {
                v.failures
                    .extend(checks::missing_thresholds(trial, &self.hardware));
            }
            v.passed = v.failures.is_empty();
            v
        } else {
            Verdict::failed(Vec::new())
        };
        let incomplete = p
            .judged
            .then(|| completion_failure(&doc, expected, &p.errors))
            .flatten();
        let typed = combined_failures(
            &p,
            &verdict,
            self.assert_baseline,
            expected,
            incomplete.as_deref(),
        );
        let history = dfx_history::noise::relative_noise(&self.history, &trial.name);
        let noise = |metric: &str| classify::cell_noise(&doc, &history, metric);
        let evidence = classify::Evidence {
            doc: &doc,
            errors: &p.errors,
            noise: &noise,
        };
        let class = classify::classify(&typed, &evidence);
        let failures = render(&typed);
        let passed = failures.is_empty();
        let mut record = Verdict::failed(failures.clone());
        record.passed = passed;
        record.breaches.clone_from(&verdict.breaches);
        record.warnings.clone_from(&verdict.warnings);
        if let Some((class, detail)) = class {
            record.classify(class, detail);
        }
        doc.insert("verdict".into(), json!(record));
        let mut write_errors = Vec::new();
        if let Err(e) = std::fs::create_dir_all(&dir) {
            write_errors.push(format!("cannot create {}: {e}", dir.display()));
        }
        let result_path = dir.join("result.json");
        if let Err(e) = write_json_atomic(&result_path, &doc) {
            write_errors.push(format!("cannot write {}: {e}", result_path.display()));
        }
        if p.judged {
            // Upstream stamps the name when the bench starts (`run_benchmark`).
            let stamp = self.trial_started.format("%Y%m%d-%H%M%S").to_string();
            let run_stamp = self.run.id.get(..15).unwrap_or(&self.run.id).to_string();
            let dirs = std::iter::once(self.run.path.join(upstream::DIR_NAME))
                .chain(self.upstream_results_dir.clone());
            for up in dirs {
                if let Err(e) =
                    upstream::write(&up, trial, &self.hardware, &doc, &run_stamp, &stamp)
                {
                    eprintln!("dfx-perf: warning: {}: upstream copy: {e}", trial.name);
                }
            }
        }
        let (class, detail) = (record.failure_class, record.failure_detail.clone());
        let verdict_doc = VerdictFile::new(&trial.name, record, &trial.thresholds);
        if let Err(e) = write_json_atomic(&dir.join("verdict.json"), &verdict_doc) {
            write_errors.push(format!("cannot write verdict.json: {e}"));
        }

        let mut entry = SummaryEntry::new(
            trial,
            if passed && write_errors.is_empty() {
                Outcome::Passed
            } else {
                Outcome::Failed
            },
        );
        entry.take_metrics(&doc);
        entry.failures = failures.iter().chain(&write_errors).cloned().collect();
        (entry.failure_class, entry.failure_detail) = match (class, detail) {
            (Some(c), d) => (Some(c), d),
            (None, _) if !write_errors.is_empty() => {
                (Some(FailureClass::Harness), write_errors.first().cloned())
            }
            _ => (None, None),
        };
        entry.breaches = verdict.breaches.clone();
        entry.warnings = verdict.warnings.clone();
        entry.result = Some(format!("trials/{}/result.json", self.planned[idx].dir_name));
        entry.bench = p.bench.map(String::from);
        entry.result_source = doc
            .get("result_source")
            .and_then(Value::as_str)
            .map(String::from);
        entry.server = p.server.as_ref().map(|s| s.rel_dir.clone());
        entry.server_started = p.server.as_ref().map(|s| s.started);
        let outcome = entry.outcome;
        let entry_class = entry.failure_class.zip(entry.failure_detail.clone());
        self.record(idx, entry);

        for w in &verdict.warnings {
            eprintln!("dfx-perf: warning: {}: {w}", trial.name);
        }
        if outcome == Outcome::Passed {
            return Ok(Ran::Passed);
        }
        let mut msg: Vec<String> = failures;
        msg.extend(write_errors);
        if let Some(line) = class_line(entry_class.as_ref()) {
            msg.insert(0, line);
        }
        msg.push(format!("result: {}", result_path.display()));
        Err(TrialError::Failed(msg))
    }
}

impl Produced {
    /// No bench ran: the template fallback with `reason` as the failure.
    fn fallback(
        reason: NotRun,
        bench: Option<&'static str>,
        server: Option<ServerInfo>,
    ) -> Produced {
        Produced {
            doc: template_fallback(&reason.to_string()),
            failures: Vec::new(),
            fallback: Some(Fallback::NotRun(reason)),
            log_tail: String::new(),
            judged: false,
            errors: Vec::new(),
            bench,
            server,
        }
    }
}

/// What only the harness saw (server death, bench exit status), then the verdict's
/// failures (each once; `incomplete` is its completion failure's line, if any), with the fallback reason and bench log tail; under
/// `--assert-baseline` every breach is guaranteed to be there. `expected` is the prompt
/// count the verdict judged against.
fn combined_failures(
    p: &Produced,
    verdict: &Verdict,
    assert_baseline: bool,
    expected: u64,
    incomplete: Option<&str>,
) -> Vec<TrialFailure> {
    let mut out: Vec<TrialFailure> = p.failures.clone();
    for f in &verdict.failures {
        let f = match verdict.breaches.iter().find(|b| b.line() == *f) {
            Some(b) => TrialFailure::Breach(b.clone()),
            None if incomplete == Some(f.as_str()) => TrialFailure::Incomplete(f.clone()),
            None => TrialFailure::Verdict(f.clone()),
        };
        if !out.contains(&f) {
            out.push(f);
        }
    }
    match &p.fallback {
        None => {}
        Some(Fallback::NotRun(why)) => out.insert(0, TrialFailure::NotRun(why.clone())),
        Some(Fallback::NoResult(why)) => {
            let judged = TrialFailure::Verdict(template_failure(expected, &why.to_string()));
            let log_tail = p.log_tail.clone();
            match out.iter().position(|f| *f == judged) {
                Some(i) => {
                    let verdict = out[i].to_string();
                    out[i] = TrialFailure::Fallback { verdict, log_tail };
                }
                None => out.insert(
                    0,
                    TrialFailure::FallbackUnjudged {
                        reason: why.clone(),
                        log_tail,
                    },
                ),
            }
        }
    }
    if assert_baseline {
        for b in &verdict.breaches {
            let breach = TrialFailure::Breach(b.clone());
            if !b.line().is_empty() && !out.contains(&breach) {
                out.push(breach);
            }
        }
    }
    if !verdict.passed && out.is_empty() {
        out.push(TrialFailure::Unexplained);
    }
    out
}

/// `class: server_start: exited at start with exit status 3`: the line that leads a failed
/// trial's message on the console.
fn class_line(class: Option<&(FailureClass, String)>) -> Option<String> {
    class.map(|(c, d)| format!("class: {c}: {d}"))
}

/// A GPU sampler beside a server the suite started, when `nvidia-smi` is on `PATH` (said
/// once per run, through `said`, when it is not).
fn gpu_sampler(
    said: &mut bool,
    server_env: &std::collections::BTreeMap<String, String>,
    dir: &std::path::Path,
    server: &ServerInfo,
) -> Option<crate::gpu::GpuSampler> {
    server.process_group?;
    if !dfx_core::hardware::has_nvidia_smi() {
        if !*said {
            *said = true;
            eprintln!(
                "gpu samples: nvidia-smi is not on PATH; results carry no GPU memory or \
                 utilisation keys"
            );
        }
        return None;
    }
    let env = server_env.get("CUDA_VISIBLE_DEVICES").map(String::as_str);
    let suite = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let devices = crate::gpu::server_devices(env, suite.as_deref());
    crate::gpu::GpuSampler::start(
        dir,
        devices,
        crate::gpu::INTERVAL,
        crate::gpu::nvidia_smi_query,
    )
    .map_err(|e| eprintln!("gpu samples: {e}"))
    .ok()
}

#[cfg(test)]
mod capacity_tests;
#[cfg(test)]
mod combine_tests;
#[cfg(test)]
mod repeat_tests;
#[cfg(test)]
mod rules_tests;
#[cfg(test)]
mod tests;
