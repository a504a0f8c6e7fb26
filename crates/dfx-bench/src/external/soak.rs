//! Stability soaks through `vllm bench serve --omni`, as upstream's stability runner does
//! them for non-speech backends (`tests/dfx/stability/conftest.py`,
//! `run_stability_benchmark_loop`): batch after batch of `num_prompts_per_batch` requests
//! at the entry's concurrency or rate, each batch a `vllm bench` run of its own, until
//! `duration_sec × --duration-scale` has passed (checked before and after each batch, so
//! the last batch may run past it). The result adds up `completed`, `failed` and the
//! errors of every batch (upstream's `merge_batch_results`), with the wall time as
//! `duration`, and a `stability` section with each batch's figures and the drift between
//! the first and the last quarter of the batches. With `goodput` (passed to every batch),
//! the soak's `request_goodput` and `slo_attainment` come from every batch's good requests
//! (its `request_goodput` × its `duration`, as vllm counted them), as the native soak's.

use std::time::Instant;

use dfx_core::bench::{BenchContext, BenchExit, BenchOutcome};
use dfx_core::result::ResultDoc;
use serde_json::{Value, json};

use super::{VllmBench, command, process};
use crate::metrics::goodput::Goodput;
use crate::native::soak;
use crate::native::stats::Sorted;

/// Upper bound of batches in one soak (a batch that ends at once must not spin).
pub(super) const MAX_BATCHES: usize = 100_000;

/// The most request errors kept in the merged result.
const MAX_ERRORS: usize = 1000;

/// The per-batch figures kept (when the batch's result has them).
const BATCH_METRICS: &[&str] = dfx_core::metrics::SOAK_BATCH_KEYS;

/// One batch: its start on the soak's clock, what it sent, and its result or why none.
struct Batch {
    started_s: f64,
    sent: u64,
    doc: Option<ResultDoc>,
    failure: Option<BenchExit>,
}

impl Batch {
    fn completed(&self) -> u64 {
        self.doc
            .as_ref()
            .and_then(|d| d.get("completed"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// A batch without a result counts every request it was to send as failed.
    fn failed(&self) -> u64 {
        match &self.doc {
            Some(d) => d.get("failed").and_then(Value::as_u64).unwrap_or(0),
            None => self.sent,
        }
    }

    /// The batch's good requests, when its result has `request_goodput` (vllm writes it
    /// with `--goodput`): that rate × the batch's `duration`. A batch without a result has
    /// none good of what it was to send.
    fn goodput(&self) -> Option<Goodput> {
        let measured = usize::try_from(self.completed() + self.failed()).unwrap_or(usize::MAX);
        let Some(doc) = &self.doc else {
            return Some(Goodput { good: 0, measured });
        };
        let rate = doc.get("request_goodput").and_then(Value::as_f64)?;
        let seconds = doc.get("duration").and_then(Value::as_f64)?;
        let good = (rate * seconds).round();
        // A rate that does not come back to a count of this batch is not vllm's.
        (good.is_finite() && good >= 0.0 && good <= measured as f64).then_some(Goodput {
            good: good as usize,
            measured,
        })
    }

    fn row(&self, index: usize, with_goodput: bool) -> Value {
        let mut row = json!({"batch": index, "started_s": self.started_s, "requests": self.sent,
                             "completed": self.completed(), "failed": self.failed(),
                             "failure": self.failure.as_ref().map(ToString::to_string)});
        for key in BATCH_METRICS {
            let v = self.doc.as_ref().and_then(|d| d.get(*key)).cloned();
            row[*key] = v.unwrap_or(Value::Null);
        }
        if with_goodput {
            let g = self.goodput();
            row["request_goodput"] = self
                .doc
                .as_ref()
                .and_then(|d| d.get("request_goodput").cloned())
                .unwrap_or(json!(0.0));
            row["slo_attainment"] = json!(g.and_then(|g| g.attainment()));
        }
        row
    }
}

/// The good requests of `batches` summed; `None` when one of them has no count (an entry
/// without `goodput`: vllm writes `request_goodput: null`). A batch without a result
/// counts as none good; [`merged`] has returned before when no batch has one.
fn sum_goodput(batches: &[Batch]) -> Option<Goodput> {
    batches.iter().try_fold(
        Goodput {
            good: 0,
            measured: 0,
        },
        |sum, b| {
            let g = b.goodput()?;
            Some(Goodput {
                good: sum.good + g.good,
                measured: sum.measured + g.measured,
            })
        },
    )
}

/// Runs the soak of `ctx`'s stability entry.
pub(super) fn run(
    bench: &VllmBench,
    ctx: &BenchContext<'_>,
    token: Option<&(String, String)>,
) -> BenchOutcome {
    let s = &bench.settings;
    let plan = match soak::keys(&ctx.trial.entry) {
        Ok(k) => soak::plan(k, ctx.trial.step.num_prompts, s.duration_scale),
        Err(e) => {
            return BenchOutcome {
                exit: Some(BenchExit::SoakEntry(e.to_string())),
                ..BenchOutcome::default()
            };
        }
    };
    let stamp = command::stamp_now();
    let log_path = ctx.out_dir.join("bench.log");
    let started = Instant::now();
    let mut batches: Vec<Batch> = Vec::new();
    while started.elapsed().as_secs_f64() < plan.seconds && batches.len() < MAX_BATCHES {
        let i = batches.len();
        // The plan's batch is the step's `num_prompts` (`soak::plan`).
        let n = ctx.trial.step.num_prompts;
        let cmd = bench.with_inputs(ctx, &stamp, |inputs| {
            command::build_batch(ctx, inputs, i, n)
        });
        let _ = std::fs::remove_file(&cmd.result_path);
        let started_s = started.elapsed().as_secs_f64();
        let secret = token.map(|(from_var, value)| process::Secret { from_var, value });
        let exit = process::run_logged(&cmd, secret, &log_path, s.timeout, &s.supervision);
        let stop = matches!(
            exit,
            process::Exit::NotStarted(_) | process::Exit::Signal(_)
        );
        let o = super::outcome(exit, &cmd, &log_path);
        batches.push(Batch {
            started_s,
            sent: n.get(),
            doc: o.result,
            failure: o.exit,
        });
        if stop {
            break;
        }
    }
    merged(
        &plan,
        s.duration_scale,
        &batches,
        started.elapsed().as_secs_f64(),
        &log_path,
    )
}

/// The soak's outcome from its batches.
fn merged(
    plan: &soak::SoakPlan,
    scale: f64,
    batches: &[Batch],
    seconds: f64,
    log_path: &std::path::Path,
) -> BenchOutcome {
    let log_tail = super::result::log_tail(log_path, super::result::TAIL_LINES);
    let first_failure = batches.iter().find_map(|b| b.failure.clone());
    if batches.iter().all(|b| b.doc.is_none()) {
        return BenchOutcome {
            exit: Some(first_failure.unwrap_or(BenchExit::SoakRanNoBatch)),
            log_tail,
            ..BenchOutcome::default()
        };
    }
    let completed: u64 = batches.iter().map(Batch::completed).sum();
    let failed: u64 = batches.iter().map(Batch::failed).sum();
    let mut errors: Vec<String> = Vec::new();
    for b in batches {
        if let Some(d) = &b.doc {
            errors.extend(super::result::request_errors(d));
        } else if let Some(f) = &b.failure {
            errors.push(format!("batch at {:.1} s: {f}", b.started_s));
        }
    }
    errors.truncate(MAX_ERRORS);
    let mut doc = ResultDoc::new();
    doc.insert(
        "num_prompts".into(),
        json!(batches.iter().map(|b| b.sent).sum::<u64>()),
    );
    doc.insert("completed".into(), json!(completed));
    doc.insert("failed".into(), json!(failed));
    doc.insert("duration".into(), json!(seconds));
    doc.insert("errors".into(), json!(errors));
    let goodput = sum_goodput(batches);
    if let Some(g) = goodput {
        doc.insert("request_goodput".into(), json!(g.request_goodput(seconds)));
        doc.insert("slo_attainment".into(), json!(g.attainment()));
    }
    let rows: Vec<Value> = batches
        .iter()
        .enumerate()
        .map(|(i, b)| b.row(i, goodput.is_some()))
        .collect();
    let mut drift = drift(batches);
    if goodput.is_some() {
        drift["slo_attainment_change"] = attainment_change(batches);
    }
    doc.insert(
        "stability".into(),
        json!({"duration_sec": plan.seconds / scale, "duration_scale": scale,
               "soak_seconds": seconds, "num_prompts_per_batch": plan.batch,
               "batches_run": batches.len(), "batches": rows, "drift": drift}),
    );
    doc.insert("result_source".into(), Value::from("vllm"));
    BenchOutcome {
        result: Some(doc),
        exit: first_failure.map(|f| BenchExit::SoakBatch(Box::new(f))),
        log_tail,
        errors,
        invalid_load: None,
    }
}

/// The last quarter's SLO attainment minus the first's (each over its batches' requests).
fn attainment_change(batches: &[Batch]) -> Value {
    let (head, tail) = soak::quarters(batches.len());
    let of = |part: &[Batch]| sum_goodput(part).and_then(|g| g.attainment());
    match (of(&batches[head]), of(&batches[tail])) {
        (Some(a), Some(b)) => json!(b - a),
        _ => Value::Null,
    }
}

/// The median of each batch metric over the first and the last quarter of the batches
/// ([`soak::quarters`], as the native soak), and their ratio.
fn drift(batches: &[Batch]) -> Value {
    let (head, tail) = soak::quarters(batches.len());
    let median_of = |part: &[Batch], key: &str| -> Option<f64> {
        let xs: Vec<f64> = part
            .iter()
            .filter_map(|b| b.doc.as_ref()?.get(key)?.as_f64())
            .filter(|x| x.is_finite())
            .collect();
        (!xs.is_empty()).then(|| Sorted::new(xs).median())
    };
    let mut out = serde_json::Map::new();
    for key in BATCH_METRICS {
        let (a, b) = (
            median_of(&batches[head.clone()], key),
            median_of(&batches[tail.clone()], key),
        );
        let ratio = match (a, b) {
            (Some(a), Some(b)) if a != 0.0 => Some(b / a),
            _ => None,
        };
        out.insert(
            (*key).into(),
            json!({"first_quarter": a, "last_quarter": b, "ratio": ratio}),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(started_s: f64, fields: Value) -> Batch {
        let doc: ResultDoc = serde_json::from_value(fields).unwrap();
        Batch {
            started_s,
            sent: 4,
            doc: Some(doc),
            failure: None,
        }
    }

    fn plan() -> soak::SoakPlan {
        soak::SoakPlan {
            seconds: 10.0,
            batch: 4,
            words: (10, 20),
        }
    }

    /// Four batches of 4 requests: 4, 3, 2 good (vllm's goodput × duration: 8 × 0.5,
    /// 6 × 0.5, 1 × 2), and one batch without a result (4 sent, none good). The soak:
    /// 9 good of 16 over its 10 s, so 0.9 req/s and 0.5625 attainment; the first quarter
    /// (batch 0) attained 1.0, the last (batch 3) 0.0.
    #[test]
    fn the_soak_counts_every_batchs_good_requests() {
        let mut batches = vec![
            batch(
                0.0,
                json!({"completed": 4, "failed": 0, "duration": 0.5, "request_goodput": 8.0}),
            ),
            batch(
                2.0,
                json!({"completed": 4, "failed": 0, "duration": 0.5, "request_goodput": 6.0}),
            ),
            batch(
                4.0,
                json!({"completed": 3, "failed": 1, "duration": 2.0, "request_goodput": 1.0}),
            ),
        ];
        batches.push(Batch {
            started_s: 6.0,
            sent: 4,
            doc: None,
            failure: Some(BenchExit::SoakRanNoBatch),
        });
        let out = merged(
            &plan(),
            1.0,
            &batches,
            10.0,
            std::path::Path::new("/nonexistent"),
        );
        let doc = out.result.unwrap();
        assert_eq!(doc.get("request_goodput"), Some(&json!(0.9)));
        assert_eq!(doc.get("slo_attainment"), Some(&json!(0.5625)));
        let st = &doc.get("stability").unwrap();
        assert_eq!(st["batches"][1]["slo_attainment"], json!(0.75));
        assert_eq!(st["batches"][3]["request_goodput"], json!(0.0));
        assert_eq!(st["drift"]["slo_attainment_change"], json!(-1.0));
    }

    /// Without `goodput` vllm writes `request_goodput: null`: no goodput keys at all.
    #[test]
    fn a_soak_without_goodput_writes_none() {
        let batches = vec![batch(
            0.0,
            json!({"completed": 4, "failed": 0, "duration": 0.5, "request_goodput": null}),
        )];
        let doc = merged(&plan(), 1.0, &batches, 1.0, std::path::Path::new("/x"))
            .result
            .unwrap();
        assert_eq!(doc.get("request_goodput"), None);
        assert_eq!(doc.get("slo_attainment"), None);
        let st = doc.get("stability").unwrap();
        assert_eq!(st["batches"][0].get("slo_attainment"), None);
        assert_eq!(st["drift"].get("slo_attainment_change"), None);
    }
}
