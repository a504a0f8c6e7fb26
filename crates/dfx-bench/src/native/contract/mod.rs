//! dfx-perf's `contract` runner (`"benchmark_runner": "contract"`, `docs/bench.md`
//! ("Contract scenarios")): one trial per entry, each scenario one bounded exchange with
//! the server under test and the reply vllm-omni gives (error envelope, audio, a clean
//! disconnect, the voice lifecycle). A failed scenario fails the trial by name.

pub(crate) mod expect;
pub mod http;
pub(crate) mod ref_audio;
pub(crate) mod requests;
pub(crate) mod stream;
pub(crate) mod voices;

use std::io::Write;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};

use dfx_core::bench::{BenchContext, BenchOutcome};
use dfx_core::contract::{Scenario, is_clone_model, scenario};

use self::http::{Reply, Target};
use super::driver::{Load, tasks};
use super::log::BenchLog;
use super::record::Dispatch;
use crate::native::BenchError;

/// What one scenario saw: the reply (`got`) and, when it failed, what differed.
#[derive(Debug, Clone, Default)]
pub struct Finding {
    /// Summary of the reply (status and body excerpt); empty when the request failed.
    pub got: String,
    /// What differed from the expected reply; `None` when the scenario passed.
    pub problem: Option<String>,
}

impl Finding {
    /// A passing finding.
    pub fn pass(got: String) -> Self {
        Finding { got, problem: None }
    }

    /// A failing finding.
    pub fn fail(got: String, problem: String) -> Self {
        Finding {
            got,
            problem: Some(problem),
        }
    }

    /// Judges a reply with `check` (a request error fails).
    pub fn of(r: Result<Reply, BenchError>, check: impl Fn(&Reply) -> Result<(), String>) -> Self {
        match r {
            Ok(r) => Finding {
                got: r.summary(),
                problem: check(&r).err(),
            },
            Err(e) => Finding::fail(String::new(), e.to_string()),
        }
    }
}

/// One line of `result.json`'s `contract`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The scenario's name (`malformed_json`, `voice_lifecycle`, …).
    pub scenario: &'static str,
    /// The reply matched (a skipped scenario passes).
    pub passed: bool,
    /// The reply the scenario expects ([`expected`]).
    pub expected: &'static str,
    /// Summary of the reply seen.
    pub got: String,
    /// What differed; empty when it passed.
    pub detail: String,
    /// Why the scenario did not run (it counts as completed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Wall time of the scenario, seconds.
    pub elapsed_s: f64,
}

/// The reply a scenario expects, as `expected` says it.
pub fn expected(name: &str) -> &'static str {
    match name {
        "min_input" => "200 with a WAV",
        "long_input" => "400 with the OpenAI error envelope, or 200 streaming audio",
        "ref_audio_file_url" => "400 with the OpenAI error envelope, no file content",
        "disconnect_mid_stream" => "200 stream, disconnect, then 200 with a WAV",
        "voice_lifecycle" => "upload 200, listed, [speak 200], delete 200, not listed, delete 404",
        _ => "400 with the OpenAI error envelope",
    }
}

async fn dispatch(name: &str, c: &reqwest::Client, t: &Target) -> Finding {
    match name {
        "malformed_json" => requests::malformed_json(c, t).await,
        "wrong_type" => requests::wrong_type(c, t).await,
        "empty_input" => requests::empty_input(c, t).await,
        "min_input" => requests::min_input(c, t).await,
        "long_input" => requests::long_input(c, t).await,
        "unknown_voice" => requests::unknown_voice(c, t).await,
        "unknown_task_type" => requests::unknown_task_type(c, t).await,
        "unknown_response_format" => requests::unknown_response_format(c, t).await,
        "ref_audio_bad_base64" => ref_audio::bad_base64(c, t).await,
        "ref_audio_file_url" => ref_audio::file_url(c, t).await,
        "ref_audio_unreachable_url" => ref_audio::unreachable_url(c, t).await,
        "disconnect_mid_stream" => stream::disconnect_mid_stream(c, t).await,
        "voice_lifecycle" => voices::lifecycle(c, t).await,
        other => Finding::fail(String::new(), format!("no runner for scenario {other:?}")),
    }
}

/// Runs one scenario, bounded by six request timeouts (the lifecycle's longest chain).
pub async fn run_one(s: &Scenario, c: &reqwest::Client, t: &Target) -> Outcome {
    let start = Instant::now();
    let mut out = Outcome {
        scenario: s.name,
        passed: true,
        expected: expected(s.name),
        got: String::new(),
        detail: String::new(),
        skipped: None,
        elapsed_s: 0.0,
    };
    if s.needs_clone && !is_clone_model(&t.model) {
        out.skipped = Some(format!(
            "needs a voice-clone (Base) model; {} is not one",
            t.model
        ));
        return out;
    }
    let f = match tokio::time::timeout(t.timeout * 6, dispatch(s.name, c, t)).await {
        Ok(f) => f,
        Err(_) => Finding::fail(
            String::new(),
            format!("no answer within {:?}", t.timeout * 6),
        ),
    };
    out.passed = f.problem.is_none();
    out.got = f.got;
    out.detail = f.problem.unwrap_or_default();
    out.elapsed_s = start.elapsed().as_secs_f64();
    out
}

/// Runs `scenarios` in order against `t` on a runtime of its own: one at a time (a closed
/// loop of one on the one scheduler, `driver::tasks::run_phase`, which sends
/// nothing more once the run is being interrupted).
pub fn run_all(t: &Target, scenarios: &[&'static Scenario]) -> Result<Vec<Outcome>, BenchError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| BenchError::Setup {
            what: "cannot start the tokio runtime",
            source,
        })?;
    let client = t.client()?;
    let target = Arc::new(t.clone());
    let out = Arc::new(Mutex::new(Vec::with_capacity(scenarios.len())));
    let sink = out.clone();
    let run = move |s: &'static Scenario, _: Dispatch, _: Instant| {
        let (client, target, sink) = (client.clone(), target.clone(), sink.clone());
        async move {
            let o = run_one(s, &client, &target).await;
            if let Ok(mut v) = sink.lock() {
                v.push(o);
            }
        }
    };
    let one = Load::Closed {
        concurrency: NonZeroUsize::MIN,
    };
    tasks::run_phase(
        &rt,
        false,
        scenarios.to_vec(),
        one,
        tasks::Direct,
        run,
        || false,
    );
    rt.shutdown_timeout(Duration::from_secs(2));
    let out = std::mem::take(&mut *out.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(out)
}

/// The failure line of a failed scenario.
pub(crate) fn failure_line(o: &Outcome) -> String {
    format!(
        "contract scenario {}: expected {}; {}{}",
        o.scenario,
        o.expected,
        o.detail,
        if o.got.is_empty() {
            String::new()
        } else {
            format!(" (got {})", o.got)
        }
    )
}

/// The trial's result document.
pub fn result_doc(outcomes: &[Outcome], model: &str, hardware: &str) -> Map<String, Value> {
    let passed = outcomes.iter().filter(|o| o.passed).count();
    let skipped = outcomes.iter().filter(|o| o.skipped.is_some()).count();
    let mut d = Map::new();
    d.insert("backend".into(), json!("contract"));
    d.insert("model_id".into(), json!(model));
    d.insert("hardware".into(), json!(hardware));
    d.insert(
        "date".into(),
        json!(chrono::Local::now().format("%Y%m%d-%H%M%S").to_string()),
    );
    d.insert("num_prompts".into(), json!(outcomes.len()));
    d.insert("completed".into(), json!(passed));
    d.insert("failed".into(), json!(outcomes.len() - passed));
    d.insert("skipped".into(), json!(skipped));
    d.insert(
        "contract".into(),
        serde_json::to_value(outcomes).unwrap_or(json!([])),
    );
    d.insert("result_source".into(), json!("native"));
    d
}

/// Runs a contract trial: every selected scenario, `records.jsonl` (one line each),
/// `bench.log` and the result document.
pub fn run(ctx: &BenchContext<'_>, log: &mut BenchLog) -> Result<BenchOutcome, BenchError> {
    let keys = ctx
        .trial
        .entry
        .runner
        .contract()
        .ok_or(BenchError::WrongRunner("contract"))?;
    let scenarios: Vec<&'static Scenario> =
        keys.scenarios.iter().filter_map(|n| scenario(n)).collect();
    let target = Target {
        base_url: ctx.base_url.clone(),
        model: ctx.trial.server.model.clone(),
        timeout: Duration::from_secs_f64(keys.timeout_s),
    };
    log.write(&format!(
        "contract: {} scenario(s) against {} (model {}, {:?} per request)",
        scenarios.len(),
        target.base_url,
        target.model,
        target.timeout
    ));
    let outcomes = run_all(&target, &scenarios)?;
    let mut records = std::fs::File::create(ctx.out_dir.join("records.jsonl")).ok();
    let mut errors = Vec::new();
    for o in &outcomes {
        let line = serde_json::to_string(o).unwrap_or_default();
        if let Some(f) = records.as_mut()
            && writeln!(f, "{line}").is_err()
        {
            log.write("warning: cannot write records.jsonl");
            records = None;
        }
        let verdict = match (&o.skipped, o.passed) {
            (Some(why), _) => format!("skipped ({why})"),
            (None, true) => format!("passed: {}", o.got),
            (None, false) => format!("FAILED: {}", failure_line(o)),
        };
        log.write(&format!("contract {} {verdict}", o.scenario));
        if !o.passed {
            errors.push(failure_line(o));
        }
    }
    let doc = result_doc(&outcomes, &target.model, &ctx.hardware);
    let summary = format!(
        "CONTRACT passed {} of {} (skipped {})",
        doc["completed"], doc["num_prompts"], doc["skipped"]
    );
    eprintln!("{}: {summary}", ctx.trial.name);
    log.write(&summary);
    Ok(BenchOutcome {
        result: Some(doc),
        exit: None,
        log_tail: log.tail(),
        errors,
        invalid_load: None,
    })
}
