//! The soak loop of [`NativeBench`] (see [`super::soak`]): batch after batch on one
//! runtime, one records file and one connection pool, until the soak's time is over.

use std::time::{Duration, Instant};

use dfx_core::bench::{BenchContext, BenchOutcome};

use super::evloop::Engine;
use super::log::BenchLog;
use super::prepare::{self, RowSource};
use super::progress::Progress;
use super::selection::Selection;
use super::sink::RecordSink;
use super::{NativeBench, fds, soak};
use crate::native::BenchError;

/// Most batches of one soak, whatever its duration (a bound on the loop, not a limit a
/// real soak reaches: a day of 10 s batches is 8640).
const MAX_BATCHES: usize = 1_000_000;

impl NativeBench {
    /// Runs a stability entry: batches until `duration_sec × --duration-scale` is over.
    pub(super) fn run_soak(
        &self,
        ctx: &BenchContext<'_>,
        log: &mut BenchLog,
    ) -> Result<BenchOutcome, BenchError> {
        let (trial, entry) = (ctx.trial, &ctx.trial.entry);
        let s = &self.settings;
        let plan = soak::plan(soak::keys(entry)?, trial.step.num_prompts, s.duration_scale);
        let selection = Selection::of(&entry.percentiles);
        log.write(&format!(
            "soak: {:.1} s (duration_sec × {}), batches of {}, texts of {}–{} words",
            plan.seconds, s.duration_scale, plan.batch, plan.words.0, plan.words.1
        ));
        log.write(&super::connection_line(self.connection(entry), s, entry));
        let seed = entry.seed.unwrap_or(s.seed);
        let prefix = prepare::request_id_prefix(entry);
        let progress = Progress::new(&trial.name, 0, false);
        let sink = RecordSink::start(&ctx.out_dir.join("records.jsonl"), progress);
        let start = Instant::now();
        let wall_s = s.time_lapse.to_wall_s(plan.seconds);
        let deadline = Duration::try_from_secs_f64(wall_s)
            .ok()
            .and_then(|d| start.checked_add(d))
            .unwrap_or(start);
        let (mut started, mut rss, mut last, mut peak) = (Vec::new(), Vec::new(), None, 0);
        let mut engine: Option<Engine> = None;
        let mut stalled = None;
        for b in 0..MAX_BATCHES {
            if b > 0 && (Instant::now() >= deadline || dfx_core::stop::requested()) {
                break;
            }
            let rows = soak::rows(&plan, seed, b, plan.batch);
            let source = RowSource {
                kind: soak::KIND,
                rows: &rows,
                n: plan.batch,
                warmups: if b == 0 {
                    entry.warmups(&trial.step) as usize
                } else {
                    0
                },
                seed: seed.wrapping_add(b as u64),
                prefix: format!("{prefix}b{b}-"),
            };
            let mut p = prepare::prepare_rows(
                s,
                ctx,
                self.connection(&ctx.trial.entry),
                &source,
                selection.clone(),
                Vec::new(),
            )?;
            if b == 0 {
                for n in &p.notes {
                    log.write(n);
                }
                if let Some(note) = fds::ensure(plan.batch.max(p.warmups.len()))? {
                    log.write(&note);
                }
            }
            // One event loop for every batch: a pooled soak keeps its connections.
            if engine.is_none() {
                match Engine::new(p.target.clone(), p.sample_rate) {
                    Ok(e) => engine = Some(e),
                    Err(e) => {
                        let _ = sink.finish();
                        return Err(e);
                    }
                }
            }
            let Some(engine) = engine.as_mut() else {
                continue;
            };
            let ran = super::run_prepared(engine, &sink, &mut p);
            peak = peak.max(ran.peak_in_flight);
            started.push(soak::since(start, ran.base));
            rss.push(ctx.server_group.and_then(soak::group_rss_mb));
            last = Some(p);
            if ran.stalled.is_some() {
                // The server stalled: no further batch is sent.
                stalled = ran.stalled;
                break;
            }
        }
        let (records, problem) = sink.finish();
        if let Some(problem) = problem {
            log.write(&format!("warning: {problem}"));
        }
        let p = last.ok_or(BenchError::NoBatch)?;
        let mut measured: Vec<_> = records.into_iter().filter(|r| !r.id.warmup).collect();
        soak::rebase(&mut measured, &started);
        measured.sort_by(|a, b| a.sent.actual_send_s.total_cmp(&b.sent.actual_send_s));
        let section = soak::section(
            &plan,
            s.duration_scale,
            &measured,
            &started,
            &rss,
            entry.goodput.as_ref(),
        );
        write_batches(&ctx.out_dir, &section, log);
        let sent = measured.len() as u64;
        let mut outcome = self.conclude_measured(ctx, log, &p, &measured, sent, peak);
        if let Some(doc) = outcome.result.as_mut() {
            doc.insert("stability".into(), section);
        }
        if let Some(why) = stalled {
            super::stalled_step(&mut outcome, log, &why);
        }
        Ok(outcome)
    }
}

/// `batches.jsonl`: one line of figures per batch.
fn write_batches(dir: &std::path::Path, section: &serde_json::Value, log: &mut BenchLog) {
    let lines: Vec<String> = section["batches"]
        .as_array()
        .map(|b| b.iter().map(|v| v.to_string()).collect())
        .unwrap_or_default();
    let path = dir.join("batches.jsonl");
    if let Err(e) = dfx_core::fsutil::write_atomic(&path, (lines.join("\n") + "\n").as_bytes()) {
        log.write(&format!("warning: cannot write {}: {e}", path.display()));
    }
}
