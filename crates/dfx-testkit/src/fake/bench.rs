//! `--bench fake`: a deterministic bench that sends nothing and computes a full-key
//! result document from a simple model of the step, so the harness's verdict, fallback
//! and results paths can be exercised end to end without a server.
//!
//! Model, for request `i` of a step with concurrency `c` (rate steps: `c = ceil(rate)`)
//! and slowdown `s`:
//! - audio seconds `d_i = 1.5 + 0.25·(i mod 5)`;
//! - `audio_ttfp_i = 50 ms · c · s · (1 + 0.02·(i mod 3))`;
//! - `e2el_i = audio_ttfp_i + 0.1 · d_i · s · (1 + 0.05·(c − 1))` seconds;
//! - `audio_rtf_i = e2el_i / d_i`;
//! - step duration = Σ e2el / c (closed loop), at least `num_prompts / rate` (open loop);
//!   `audio_throughput` = Σ d / duration.
//!
//! Knobs (environment, read once at start): `DFX_FAKE_SLOWDOWN=s` (default 1),
//! `DFX_FAKE_FAIL_REQUESTS=N` (the first N requests fail with HTTP 500),
//! `DFX_FAKE_NO_RESULT=1` (the bench leaves no result: the harness writes the fallback),
//! `DFX_FAKE_SLEEP_MS=N` (real time spent per request, so a trial lasts long enough to be
//! interrupted; the model's figures do not change).
//!
//! Like the native bench, it appends one line per request to `records.jsonl` and flushes
//! it as each request "finishes", so an interrupted trial keeps its partial records.

use std::fmt::Write as _;
use std::io::Write as _;

use dfx_core::bench::{Bench, BenchContext, BenchExit, BenchKind, BenchOutcome, Unsupported};
use dfx_core::lenient::{BoolRule, parse_bool};
use dfx_core::plan::{BenchEntry, Dialect, StepKind};
use dfx_core::result::ResultDoc;
use dfx_core::server::ExitStatus;

use serde_json::{Value, json};

/// A `DFX_FAKE_*` variable whose value the fake bench cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}=`{value}`: expected {expected}")]
pub struct KnobError {
    /// The variable.
    pub var: &'static str,
    /// Its value.
    pub value: String,
    /// What is accepted.
    pub expected: &'static str,
}

/// The fake bench's knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeKnobs {
    /// `DFX_FAKE_SLOWDOWN`: every latency of the model times this.
    pub slowdown: f64,
    /// `DFX_FAKE_FAIL_REQUESTS`: the first N requests fail with HTTP 500.
    pub fail_requests: u64,
    /// `DFX_FAKE_NO_RESULT`: the bench leaves no result document.
    pub no_result: bool,
    /// Wall-clock milliseconds slept per request.
    pub sleep_ms: u64,
}

impl Default for FakeKnobs {
    fn default() -> Self {
        FakeKnobs {
            slowdown: 1.0,
            fail_requests: 0,
            no_result: false,
            sleep_ms: 0,
        }
    }
}

impl FakeKnobs {
    /// Reads `DFX_FAKE_SLOWDOWN`, `DFX_FAKE_FAIL_REQUESTS`, `DFX_FAKE_NO_RESULT`,
    /// `DFX_FAKE_SLEEP_MS`.
    pub fn from_env() -> Result<Self, KnobError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Same, from any lookup (tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, KnobError> {
        let bad = |var: &'static str, value: &str, expected: &'static str| KnobError {
            var,
            value: value.to_string(),
            expected,
        };
        let mut k = FakeKnobs::default();
        if let Some(v) = get("DFX_FAKE_SLOWDOWN") {
            k.slowdown = v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| bad("DFX_FAKE_SLOWDOWN", &v, "a positive number"))?;
        }
        if let Some(v) = get("DFX_FAKE_FAIL_REQUESTS") {
            k.fail_requests = v
                .trim()
                .parse()
                .map_err(|_| bad("DFX_FAKE_FAIL_REQUESTS", &v, "a whole number"))?;
        }
        if let Some(v) = get("DFX_FAKE_SLEEP_MS") {
            k.sleep_ms = v
                .trim()
                .parse()
                .map_err(|_| bad("DFX_FAKE_SLEEP_MS", &v, "whole milliseconds"))?;
        }
        if let Some(v) = get("DFX_FAKE_NO_RESULT") {
            k.no_result = parse_bool(&v, BoolRule::ENV)
                .ok_or_else(|| bad("DFX_FAKE_NO_RESULT", &v, "1/true/yes/on or 0/false/no/off"))?;
        }
        Ok(k)
    }
}

/// The fake bench.
#[derive(Debug, Clone, Default)]
pub struct FakeBench {
    /// Its knobs.
    pub knobs: FakeKnobs,
}

struct Request {
    ok: bool,
    audio_s: f64,
    ttfp_ms: f64,
    e2el_ms: f64,
    rtf: f64,
}

impl Bench for FakeBench {
    fn kind(&self) -> BenchKind {
        BenchKind::Native
    }

    fn supports(&self, entry: &BenchEntry) -> Result<(), Unsupported> {
        match entry.dialect {
            Dialect::Omni => Ok(()),
            dialect => Err(Unsupported::FakeDialect { dialect }),
        }
    }

    fn run(&self, ctx: &BenchContext<'_>) -> BenchOutcome {
        let step = &ctx.trial.step;
        let n = step.num_prompts.get();
        let (c, rate) = match step.kind {
            StepKind::Concurrency { max_concurrency } => (f64::from(max_concurrency.get()), None),
            StepKind::RequestRate { request_rate } => {
                (request_rate.ceil().max(1.0), Some(request_rate))
            }
        };
        let mut log = format!(
            "fake bench: {} against {} (c={c}, num_prompts={n}, slowdown={})\n",
            ctx.trial.name, ctx.base_url, self.knobs.slowdown
        );
        if self.knobs.no_result {
            log.push_str("fake bench: DFX_FAKE_NO_RESULT is set: exiting without a result\n");
            let _ = std::fs::write(ctx.out_dir.join("bench.log"), &log);
            return BenchOutcome {
                result: None,
                exit: Some(BenchExit::Status(ExitStatus::Code(1))),
                log_tail: log.trim_end().to_string(),
                ..BenchOutcome::default()
            };
        }
        let requests: Vec<Request> = (0..n)
            .map(|i| model_request(i, c, self.knobs.slowdown, i < self.knobs.fail_requests))
            .collect();
        let errors = if self.knobs.fail_requests > 0 {
            vec!["HTTP 500: fake failure (DFX_FAKE_FAIL_REQUESTS)".to_string()]
        } else {
            Vec::new()
        };
        write_records(ctx, &requests, self.knobs.sleep_ms);
        let doc = result_doc(ctx, &requests, c, rate);
        let _ = writeln!(
            log,
            "fake bench: completed {} of {n}",
            requests.iter().filter(|r| r.ok).count()
        );
        let _ = std::fs::write(ctx.out_dir.join("bench.log"), &log);
        BenchOutcome {
            result: Some(doc),
            exit: None,
            log_tail: log.trim_end().to_string(),
            errors,
            invalid_load: None,
        }
    }
}

fn model_request(i: u64, c: f64, s: f64, failed: bool) -> Request {
    let audio_s = 1.5 + 0.25 * (i % 5) as f64;
    let ttfp_ms = 50.0 * c * s * (1.0 + 0.02 * (i % 3) as f64);
    let e2el_ms = ttfp_ms + 1000.0 * 0.1 * audio_s * s * (1.0 + 0.05 * (c - 1.0));
    Request {
        ok: !failed,
        audio_s,
        ttfp_ms,
        e2el_ms,
        rtf: e2el_ms / 1000.0 / audio_s,
    }
}

/// One line per request, flushed as it "finishes" (after `sleep_ms` of real time).
fn write_records(ctx: &BenchContext<'_>, requests: &[Request], sleep_ms: u64) {
    let Ok(mut f) = std::fs::File::create(ctx.out_dir.join("records.jsonl")) else {
        return;
    };
    for (i, r) in requests.iter().enumerate() {
        if sleep_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(sleep_ms));
        }
        let line = if r.ok {
            json!({"index": i, "status": 200, "error": null, "audio_ttfp_ms": r.ttfp_ms,
                   "e2el_ms": r.e2el_ms, "audio_s": r.audio_s, "audio_rtf": r.rtf})
        } else {
            json!({"index": i, "status": 500, "error": "fake failure"})
        };
        let _ = writeln!(f, "{line}");
        let _ = f.flush();
    }
}

/// numpy-style statistics over successes: mean, median, linear-interpolated percentile.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (sorted.len() - 1) as f64 * p / 100.0;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

fn add_stats(doc: &mut ResultDoc, name: &str, unit: &str, values: &[f64], percentiles: &[f64]) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mean = if sorted.is_empty() {
        0.0
    } else {
        sorted.iter().sum::<f64>() / sorted.len() as f64
    };
    doc.insert(format!("mean_{name}{unit}"), json!(mean));
    doc.insert(
        format!("median_{name}{unit}"),
        json!(percentile(&sorted, 50.0)),
    );
    for p in percentiles {
        let label = if p.fract() == 0.0 {
            format!("{}", *p as i64)
        } else {
            format!("{p}")
        };
        doc.insert(
            format!("p{label}_{name}{unit}"),
            json!(percentile(&sorted, *p)),
        );
    }
}

fn result_doc(
    ctx: &BenchContext<'_>,
    requests: &[Request],
    c: f64,
    rate: Option<f64>,
) -> ResultDoc {
    let entry = &ctx.trial.entry;
    let ok: Vec<&Request> = requests.iter().filter(|r| r.ok).collect();
    let completed = ok.len() as u64;
    let busy_s = requests
        .iter()
        .map(|r| if r.ok { r.e2el_ms / 1000.0 } else { 0.01 })
        .sum::<f64>();
    let mut duration = busy_s / c;
    if let Some(r) = rate {
        duration = duration.max(requests.len() as f64 / r);
    }
    let duration = duration.max(1e-3);
    let audio: f64 = ok.iter().map(|r| r.audio_s).sum();
    let percentiles: Vec<f64> = entry.percentiles.percentiles().to_vec();
    let ttft_selected = entry
        .percentiles
        .metric_names("ttft,e2el,audio_rtf,audio_ttfp,audio_duration")
        .contains(&"ttft");
    let mut doc = ResultDoc::new();
    let backend = entry
        .backend
        .clone()
        .unwrap_or_else(|| "openai-audio-speech".into());
    doc.insert(
        "date".into(),
        json!(chrono::Local::now().format("%Y%m%d-%H%M%S").to_string()),
    );
    doc.insert("endpoint_type".into(), json!(backend));
    doc.insert("backend".into(), json!(backend));
    doc.insert("label".into(), Value::Null);
    doc.insert("model_id".into(), json!(ctx.trial.server.model));
    doc.insert("tokenizer_id".into(), json!(ctx.trial.server.model));
    doc.insert("num_prompts".into(), json!(requests.len()));
    doc.insert(
        "request_rate".into(),
        rate.map_or(json!("inf"), |r| json!(r)),
    );
    doc.insert("burstiness".into(), json!(1.0));
    doc.insert(
        "max_concurrency".into(),
        ctx.trial
            .step
            .max_concurrency()
            .map_or(Value::Null, |c| json!(c)),
    );
    doc.insert("duration".into(), json!(duration));
    doc.insert("completed".into(), json!(completed));
    doc.insert("failed".into(), json!(requests.len() as u64 - completed));
    for k in ["total_input_tokens", "total_output_tokens"] {
        doc.insert(k.into(), json!(0));
    }
    doc.insert(
        "request_throughput".into(),
        json!(completed as f64 / duration),
    );
    doc.insert("request_goodput".into(), Value::Null);
    doc.insert("output_throughput".into(), json!(0.0));
    doc.insert("total_token_throughput".into(), json!(0.0));
    doc.insert("total_audio_duration_s".into(), json!(audio));
    doc.insert(
        "total_audio_frames".into(),
        json!((audio * 24_000.0).round() as u64),
    );
    doc.insert("audio_throughput".into(), json!(audio / duration));
    doc.insert("max_output_tokens_per_s".into(), json!(0.0));
    doc.insert("max_concurrent_requests".into(), json!(c as u64));
    doc.insert("rtfx".into(), json!(0.0));
    doc.insert("num_ttft_samples".into(), json!(completed));
    doc.insert("num_tpot_samples".into(), json!(0));
    if ctx.trial.entry.dataset_name.as_deref() == Some("omniinteract") {
        // What the real client's OmniInteract runner reports: one case per request.
        let (n, failed) = (requests.len() as u64, requests.len() as u64 - completed);
        doc.insert(
            "omniinteract".into(),
            json!({"total": n, "success": completed, "failed": failed,
                   "artifacts_complete": failed == 0}),
        );
    }
    doc.insert("num_itl_samples".into(), json!(0));
    doc.insert("num_audio_ttfp_samples".into(), json!(completed));
    doc.insert("num_audio_rtf_samples".into(), json!(completed));
    let col = |f: fn(&Request) -> f64| ok.iter().map(|r| f(r)).collect::<Vec<f64>>();
    if ttft_selected && backend != "openai-audio-speech" {
        add_stats(&mut doc, "ttft", "_ms", &col(|r| r.ttfp_ms), &percentiles);
    }
    add_stats(&mut doc, "e2el", "_ms", &col(|r| r.e2el_ms), &percentiles);
    add_stats(&mut doc, "audio_rtf", "", &col(|r| r.rtf), &percentiles);
    add_stats(
        &mut doc,
        "audio_ttfp",
        "_ms",
        &col(|r| r.ttfp_ms),
        &percentiles,
    );
    add_stats(
        &mut doc,
        "audio_duration",
        "_s",
        &col(|r| r.audio_s),
        &percentiles,
    );
    doc.insert(
        "audio_continuity_ok_rate".into(),
        json!(if completed > 0 { 1.0 } else { 0.0 }),
    );
    doc.insert("peak_inflight".into(), json!(c as u64));
    doc.insert("result_source".into(), json!("fake"));
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trials::{concurrency_trial, rate_trial};

    fn run(knobs: FakeKnobs, trial: &dfx_core::plan::Trial) -> (BenchOutcome, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = BenchContext {
            trial,
            base_url: "http://127.0.0.1:9".into(),
            host: "127.0.0.1".into(),
            port: 9,
            out_dir: dir.path().to_path_buf(),
            hardware: "H100".into(),
            judge_url: None,
            server_group: None,
        };
        (FakeBench { knobs }.run(&ctx), dir)
    }

    fn num(doc: &ResultDoc, k: &str) -> f64 {
        doc.get(k)
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("{k} missing"))
    }

    #[test]
    fn model_scales_with_concurrency_and_slowdown() {
        let t1 = concurrency_trial("t", "s", 1, 10);
        let t4 = concurrency_trial("t", "s", 4, 10);
        let (o1, _d1) = run(FakeKnobs::default(), &t1);
        let (o4, _d4) = run(FakeKnobs::default(), &t4);
        let (slow, _d) = run(
            FakeKnobs {
                slowdown: 2.0,
                ..FakeKnobs::default()
            },
            &t1,
        );
        let (r1, r4, rs) = (o1.result.unwrap(), o4.result.unwrap(), slow.result.unwrap());
        assert!((num(&r1, "median_audio_ttfp_ms") - 51.0).abs() < 1e-9);
        assert!(
            (num(&r4, "median_audio_ttfp_ms") / num(&r1, "median_audio_ttfp_ms") - 4.0).abs()
                < 1e-9
        );
        assert!(
            (num(&rs, "median_audio_ttfp_ms") / num(&r1, "median_audio_ttfp_ms") - 2.0).abs()
                < 1e-9
        );
        assert!((num(&r1, "audio_throughput") / num(&rs, "audio_throughput") - 2.0).abs() < 1e-9);
        assert_eq!(num(&r1, "completed"), 10.0);
        assert_eq!(r1.get("request_rate"), Some(&json!("inf")));
        // The vllm-bench keys the verdict and reports read are all there.
        for k in [
            "mean_e2el_ms",
            "p99_e2el_ms",
            "median_audio_rtf",
            "p99_audio_duration_s",
            "total_audio_duration_s",
            "request_throughput",
            "failed",
        ] {
            assert!(r1.contains_key(k), "{k}");
        }
    }

    #[test]
    fn failures_and_artifacts() {
        let t = rate_trial("t", "s", 2.0, 6);
        let (o, dir) = run(
            FakeKnobs {
                fail_requests: 2,
                ..FakeKnobs::default()
            },
            &t,
        );
        let doc = o.result.unwrap();
        assert_eq!(num(&doc, "completed"), 4.0);
        assert_eq!(num(&doc, "failed"), 2.0);
        assert_eq!(num(&doc, "request_rate"), 2.0);
        assert!(num(&doc, "duration") >= 3.0);
        assert_eq!(o.errors.len(), 1);
        let records = std::fs::read_to_string(dir.path().join("records.jsonl")).unwrap();
        assert_eq!(records.lines().count(), 6);
        assert!(dir.path().join("bench.log").is_file());
    }

    #[test]
    fn no_result_knob() {
        let t = concurrency_trial("t", "s", 1, 3);
        let (o, _dir) = run(
            FakeKnobs {
                no_result: true,
                ..FakeKnobs::default()
            },
            &t,
        );
        assert!(o.result.is_none());
        assert_eq!(o.exit, Some(BenchExit::Status(ExitStatus::Code(1))));
        assert_eq!(o.exit.unwrap().to_string(), "exit status 1");
        assert!(o.log_tail.contains("DFX_FAKE_NO_RESULT"));
    }

    #[test]
    fn knobs_parse_and_reject_nonsense() {
        let k = FakeKnobs::from_lookup(|k| match k {
            "DFX_FAKE_SLOWDOWN" => Some("2.5".into()),
            "DFX_FAKE_NO_RESULT" => Some("yes".into()),
            "DFX_FAKE_SLEEP_MS" => Some("25".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            k,
            FakeKnobs {
                slowdown: 2.5,
                fail_requests: 0,
                no_result: true,
                sleep_ms: 25
            }
        );
        let e =
            FakeKnobs::from_lookup(|k| (k == "DFX_FAKE_SLOWDOWN").then(|| "0".into())).unwrap_err();
        assert!(e.to_string().contains("DFX_FAKE_SLOWDOWN"), "{e}");
        let e = FakeKnobs::from_lookup(|k| (k == "DFX_FAKE_SLEEP_MS").then(|| "-1".into()))
            .unwrap_err();
        assert!(e.to_string().contains("DFX_FAKE_SLEEP_MS"), "{e}");
    }
}
