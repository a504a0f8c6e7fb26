//! Fixture run folders for the tests: a small builder that writes what the harness
//! writes (`run.json`, `summary.json`, `trials/<name>/{result.json,verdict.json,
//! records.jsonl,bench.log}`), with realistic values from a simple load model, seeded
//! noise, an optional injected slowdown and injected failures.
//!
//! Recorded fixtures (written by the suite against the simulator) go to
//! `tests/fixtures/runs/<name>/` and are picked up by [`recorded_runs`].

#![allow(dead_code)]

pub(crate) mod browser;
pub(crate) mod junit;

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

/// One sweep step of the fixture's plan, with its "true" performance.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub test: &'static str,
    pub suffix: &'static str,
    pub step: &'static str,
    pub concurrency: Option<u32>,
    pub rate: Option<f64>,
    pub num_prompts: u32,
    /// (median TTFP ms, median E2EL ms, median RTF, audio throughput)
    pub truth: (f64, f64, f64, f64),
    /// Thresholds on this step: (metric, value, source).
    pub thresholds: Vec<(&'static str, f64, &'static str)>,
}

impl Step {
    pub(crate) fn name(&self) -> String {
        format!("{}::{}::{}", self.test, self.suffix, self.step)
    }
}

const BASE: &str = "test_qwen3_tts_base";
const LAT: &str = "voice_clone_latency_seed-tts";
const THR: &str = "voice_clone_throughput_seed-tts";
const CV: &str = "test_qwen3_tts_customvoice";
const STRESS: &str = "default_voice_stress_seed-tts-text";

/// The standard plan: a Qwen3-TTS-like suite with a latency entry (c1), a throughput
/// sweep (c8/c16/c64, inline H100-style thresholds) and a request-rate stress entry
/// (qps1.0/qps2.0, thresholds from the baseline store).
pub(crate) fn standard_steps() -> Vec<Step> {
    let inline = "inline";
    vec![
        Step {
            test: BASE,
            suffix: LAT,
            step: "c1",
            concurrency: Some(1),
            rate: None,
            num_prompts: 20,
            truth: (128.4, 1893.0, 0.1452, 6.91),
            thresholds: vec![
                ("median_audio_ttfp_ms", 141.2791, inline),
                ("median_audio_rtf", 0.1591, inline),
            ],
        },
        Step {
            test: BASE,
            suffix: THR,
            step: "c8",
            concurrency: Some(8),
            rate: None,
            num_prompts: 80,
            truth: (206.1, 2951.0, 0.3012, 26.52),
            thresholds: vec![
                ("median_audio_ttfp_ms", 226.747, inline),
                ("median_audio_rtf", 0.3313, inline),
                ("audio_throughput", 24.2296, inline),
            ],
        },
        Step {
            test: BASE,
            suffix: THR,
            step: "c16",
            concurrency: Some(16),
            rate: None,
            num_prompts: 128,
            truth: (588.3, 3904.0, 0.3311, 44.03),
            thresholds: vec![
                ("median_audio_ttfp_ms", 647.1272, inline),
                ("median_audio_rtf", 0.3642, inline),
                ("audio_throughput", 40.3552, inline),
            ],
        },
        Step {
            test: BASE,
            suffix: THR,
            step: "c64",
            concurrency: Some(64),
            rate: None,
            num_prompts: 128,
            truth: (4342.9, 9811.0, 1.1165, 47.52),
            thresholds: vec![
                ("median_audio_ttfp_ms", 4777.2714, inline),
                ("median_audio_rtf", 1.2282, inline),
                ("audio_throughput", 43.2572, inline),
            ],
        },
        Step {
            test: CV,
            suffix: STRESS,
            step: "qps1.0",
            concurrency: None,
            rate: Some(1.0),
            num_prompts: 20,
            truth: (151.7, 2104.0, 0.1608, 5.83),
            thresholds: vec![("mean_e2el_ms", 2500.0, "store")],
        },
        Step {
            test: CV,
            suffix: STRESS,
            step: "qps2.0",
            concurrency: None,
            rate: Some(2.0),
            num_prompts: 40,
            truth: (182.2, 2488.0, 0.1911, 11.21),
            thresholds: vec![("mean_e2el_ms", 2950.0, "store")],
        },
    ]
}

/// How an injected failure looks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Fault {
    /// The bench left no result: template fallback, completed 0.
    Fallback,
    /// Some requests failed (HTTP 500 with an HTML body in the error text).
    FailedRequests(u32),
}

/// Builds one run folder.
#[derive(Debug, Clone)]
pub(crate) struct RunBuilder {
    pub run_id: String,
    pub hardware: String,
    pub seed: u64,
    /// Relative noise per metric (uniform ±noise).
    pub noise: f64,
    /// Injected slowdown: latencies and RTF × (1 + s), throughput ÷ (1 + s).
    pub slowdown: f64,
    pub assert_baseline: bool,
    pub steps: Vec<Step>,
    pub faults: Vec<(String, Fault)>,
    pub config_files: Vec<Value>,
    pub ignored: Vec<(String, String)>,
    pub sim_speed: Option<f64>,
    pub write_summary: bool,
    pub bench_tool: &'static str,
}

impl RunBuilder {
    pub(crate) fn new(run_id: &str) -> Self {
        RunBuilder {
            run_id: run_id.into(),
            hardware: "SIM".into(),
            seed: 1,
            noise: 0.02,
            slowdown: 0.0,
            assert_baseline: false,
            steps: standard_steps(),
            faults: Vec::new(),
            config_files: vec![json!("perf-configs/test_tts.json")],
            ignored: vec![(
                "test_diffusion_t2i::case0::c1".into(),
                "diffusion dialect (image/video generation) is not run by the native bench".into(),
            )],
            sim_speed: None,
            write_summary: true,
            bench_tool: "native",
        }
    }

    pub(crate) fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }
    pub(crate) fn hardware(mut self, h: &str) -> Self {
        self.hardware = h.into();
        self
    }
    pub(crate) fn slowdown(mut self, s: f64) -> Self {
        self.slowdown = s;
        self
    }
    pub(crate) fn noise(mut self, n: f64) -> Self {
        self.noise = n;
        self
    }
    pub(crate) fn assert_baseline(mut self) -> Self {
        self.assert_baseline = true;
        self
    }
    pub(crate) fn fault(mut self, trial: &str, f: Fault) -> Self {
        self.faults.push((trial.into(), f));
        self
    }
    pub(crate) fn configs(mut self, c: Vec<Value>) -> Self {
        self.config_files = c;
        self
    }
    pub(crate) fn without_step(mut self, name: &str) -> Self {
        self.steps.retain(|s| s.name() != name);
        self
    }
    pub(crate) fn without_summary(mut self) -> Self {
        self.write_summary = false;
        self
    }

    /// Writes `<results>/<run_id>/` and returns its path.
    pub(crate) fn write(&self, results: &Path) -> PathBuf {
        let dir = results.join(&self.run_id);
        std::fs::create_dir_all(dir.join("trials")).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut trials = Vec::new();
        for s in &self.steps {
            let fault = self
                .faults
                .iter()
                .find(|(n, _)| *n == s.name())
                .map(|f| f.1);
            trials.push(self.write_trial(&dir, s, fault, &mut rng));
        }
        for (name, why) in &self.ignored {
            let mut parts = name.splitn(3, "::");
            trials.push(json!({
                "name": name, "test_name": parts.next(), "suffix": parts.next(),
                "step": parts.next(), "kind": "concurrency", "max_concurrency": 1,
                "request_rate": null, "num_prompts": 4, "marks": ["diffusion"],
                "outcome": "ignored", "ignored_reason": why,
                "failures": [], "breaches": [], "warnings": [], "thresholds": [],
                "thresholds_skipped": [], "thresholds_note": null,
                "metrics": {}, "result": null, "bench": null, "result_source": null,
                "server": null, "server_started": null, "seconds": 0.0
            }));
        }
        write_json(&dir.join("run.json"), &self.run_json());
        if self.write_summary {
            let count = |o: &str| trials.iter().filter(|t| t["outcome"] == o).count();
            write_json(
                &dir.join("summary.json"),
                &json!({
                    "run_id": self.run_id, "hardware": self.hardware,
                    "assert_baseline": self.assert_baseline,
                    "passed": count("passed"), "failed": count("failed"), "ignored": count("ignored"),
                    "filtered_out": 0, "server_starts": 2, "notes": [], "trials": trials
                }),
            );
        }
        dir
    }

    fn run_json(&self) -> Value {
        let mut flags = vec![
            json!({"flag": "--server", "value": "sim", "source": "cli"}),
            json!({"flag": "--results-dir", "value": "target/dfx-results", "source": "default"}),
        ];
        if self.assert_baseline {
            flags.push(json!({"flag": "--assert-baseline", "value": true, "source": "cli"}));
        }
        json!({
            "run_id": self.run_id,
            "dfx_perf_version": "0.1.0",
            "git_sha": "3f2a9c1e0b7d4a5f6e8c9d0a1b2c3d4e5f6a7b8c",
            "hardware": self.hardware,
            "sim_speed": self.sim_speed,
            "flags": flags,
            "config_files": self.config_files,
            "started": "2026-03-02T01:00:00+00:00",
            "finished": "2026-03-02T01:12:34+00:00",
            "hostname": "ci-runner-7",
            "bench_tool": self.bench_tool
        })
    }

    fn write_trial(
        &self,
        dir: &Path,
        s: &Step,
        fault: Option<Fault>,
        rng: &mut ChaCha8Rng,
    ) -> Value {
        let name = s.name();
        let folder = dir.join("trials").join(name.replace("::", "__"));
        std::fs::create_dir_all(&folder).unwrap();
        let mut jitter = |x: f64| x * (1.0 + rng.random_range(-self.noise..=self.noise));
        let slow = 1.0 + self.slowdown;
        let (ttfp, e2el, rtf, thr) = s.truth;
        let (ttfp, e2el, rtf, thr) = (
            jitter(ttfp * slow),
            jitter(e2el * slow),
            jitter(rtf * slow),
            jitter(thr / slow),
        );
        let n = s.num_prompts as f64;
        let failed_requests = match fault {
            Some(Fault::FailedRequests(k)) => k as f64,
            _ => 0.0,
        };
        let fallback = fault == Some(Fault::Fallback);
        let mut metrics = Map::new();
        let mut put = |k: &str, v: f64| {
            metrics.insert(k.into(), json!(round6(v)));
        };
        if fallback {
            for k in [
                "duration",
                "completed",
                "failed",
                "audio_throughput",
                "mean_e2el_ms",
                "median_e2el_ms",
                "median_audio_ttfp_ms",
                "mean_audio_ttfp_ms",
                "median_audio_rtf",
                "mean_audio_rtf",
            ] {
                put(k, 0.0);
            }
        } else {
            let completed = n - failed_requests;
            let audio_s = completed * 4.2;
            put("duration", audio_s / thr);
            put("completed", completed);
            put("failed", failed_requests);
            put("request_throughput", completed / (audio_s / thr));
            put("total_audio_duration_s", audio_s);
            put("audio_throughput", thr);
            put("mean_e2el_ms", e2el * 1.04);
            put("median_e2el_ms", e2el);
            put("p99_e2el_ms", e2el * 1.6);
            put("mean_audio_ttfp_ms", ttfp * 1.05);
            put("median_audio_ttfp_ms", ttfp);
            put("p99_audio_ttfp_ms", ttfp * 1.9);
            put("mean_audio_rtf", rtf * 1.03);
            put("median_audio_rtf", rtf);
            put("p99_audio_rtf", rtf * 1.5);
        }
        let thresholds: Vec<Value> = s
            .thresholds
            .iter()
            .map(|(m, v, src)| {
                let dir = if m.contains("throughput") {
                    "higher_is_better"
                } else {
                    "lower_is_better"
                };
                let source = if *src == "store" {
                    json!({"from": "store", "file": format!("baselines/{}.json", self.hardware)})
                } else {
                    json!({"from": "inline"})
                };
                json!({"metric": m, "value": v, "direction": dir, "source": source})
            })
            .collect();
        let mut breaches = Vec::new();
        if !fallback {
            for (m, thr_v, _) in &s.thresholds {
                let v = metrics[*m].as_f64().unwrap();
                let gap = if m.contains("throughput") {
                    (thr_v - v) / thr_v
                } else {
                    (v - thr_v) / thr_v
                };
                if gap > 0.0 {
                    breaches.push(
                        json!({"metric": m, "value": v, "threshold": thr_v, "gap": round6(gap)}),
                    );
                }
            }
        }
        let mut failures: Vec<String> = Vec::new();
        let mut warnings: Vec<String> = Vec::new();
        if fallback {
            failures.push("bench exited with status 1 and left no result; wrote the template fallback (completed 0). log tail: Traceback … ConnectionRefusedError".into());
        }
        if failed_requests > 0.0 {
            failures.push(format!(
                "{} of {} requests failed; first error: HTTP 500 <html><body>Internal \"Server\" Error & 'oops'</body></html>\u{1}",
                failed_requests, n
            ));
        }
        for b in &breaches {
            let m = b["metric"].as_str().unwrap();
            let word = if m.contains("throughput") {
                "below"
            } else {
                "above"
            };
            let line = format!(
                "{} {} {word} threshold {} ({:+.1} %)",
                m,
                b["value"],
                b["threshold"],
                b["gap"].as_f64().unwrap() * 100.0
            );
            if self.assert_baseline {
                failures.push(line)
            } else {
                warnings.push(line)
            }
        }
        let outcome = if failures.is_empty() {
            "passed"
        } else {
            "failed"
        };
        let kind = if s.rate.is_some() {
            "request_rate"
        } else {
            "concurrency"
        };
        let rate = s.rate.map(|r| json!(r)).unwrap_or(Value::Null);
        let source = if fallback { "template" } else { "native" };
        let mut result = metrics.clone();
        result.insert("num_prompts".into(), json!(s.num_prompts));
        result.insert("max_concurrency".into(), json!(s.concurrency));
        result.insert(
            "request_rate".into(),
            s.rate.map(|r| json!(r)).unwrap_or(json!("inf")),
        );
        result.insert(
            "baseline".into(),
            Value::Object(
                s.thresholds
                    .iter()
                    .map(|(m, v, _)| (m.to_string(), json!(v)))
                    .collect(),
            ),
        );
        result.insert("Hardware".into(), json!(self.hardware));
        result.insert("result_source".into(), json!(source));
        result.insert("trial".into(), json!(name));
        if !fallback {
            // percentiles the result has and the summary does not keep
            result.insert("p90_audio_ttfp_ms".into(), json!(round6(ttfp * 1.5)));
            result.insert("p90_e2el_ms".into(), json!(round6(e2el * 1.3)));
        }
        write_json(&folder.join("result.json"), &Value::Object(result));
        let mut verdict = json!({"passed": failures.is_empty(), "failures": failures, "breaches": breaches, "warnings": warnings});
        // the failure class the suite records (issue #37's contract)
        // (the server_errors detail quotes the first error as the suite does, markup and all)
        let first = failures.first().cloned().unwrap_or_default();
        let class = match fault {
            Some(Fault::Fallback) => Some(("client", "the bench exited with status 1".into())),
            Some(Fault::FailedRequests(_)) => Some(("server_errors", first)),
            None if !failures.is_empty() => Some(("breach", "thresholds breached".into())),
            None => None,
        };
        if let Some((class, detail)) = class {
            verdict["failure_class"] = json!(class);
            verdict["failure_detail"] = json!(detail);
        }
        write_json(&folder.join("verdict.json"), &verdict);
        let (class, detail) = (
            verdict.get("failure_class").cloned(),
            verdict.get("failure_detail").cloned(),
        );
        std::fs::write(folder.join("records.jsonl"), "").unwrap();
        let log = match fault {
            Some(Fault::Fallback) => {
                "native bench\nTraceback (most recent call last):\nConnectionRefusedError: [Errno 111] <refused>\n"
            }
            _ => "native bench\n",
        };
        std::fs::write(folder.join("bench.log"), log).unwrap();
        let server = dir.join("servers/01-qwen3-tts");
        std::fs::create_dir_all(&server).unwrap();
        std::fs::write(
            server.join("server.log"),
            "INFO: Uvicorn running on http://127.0.0.1:8000\n",
        )
        .unwrap();
        let mut entry = json!({
            "name": name, "test_name": s.test, "suffix": s.suffix, "step": s.step,
            "kind": kind, "max_concurrency": s.concurrency, "request_rate": rate,
            "num_prompts": s.num_prompts, "marks": ["tts"], "outcome": outcome,
            "ignored_reason": null, "failures": failures,
            "breaches": breaches, "warnings": warnings, "thresholds": thresholds,
            "thresholds_skipped": [], "thresholds_note": null,
            "metrics": metrics,
            "result": format!("trials/{}/result.json", name.replace("::", "__")),
            "bench": "native", "result_source": source,
            "server": "servers/01-qwen3-tts", "server_started": false,
            "seconds": round6(s.num_prompts as f64 * 0.05)
        });
        // summary.json carries the class as the verdict does (the suite writes both).
        if let (Some(c), Some(d)) = (class, detail) {
            entry["failure_class"] = c;
            entry["failure_detail"] = d;
        }
        entry
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

pub(crate) fn write_json(path: &Path, v: &Value) {
    let mut s = serde_json::to_string_pretty(v).unwrap();
    s.push('\n');
    std::fs::write(path, s).unwrap();
}

/// Recorded run folders dropped into `tests/fixtures/runs/` (each a run folder).
pub(crate) fn recorded_runs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs");
    let Ok(rd) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("summary.json").is_file() || p.join("trials").is_dir())
        .collect();
    v.sort();
    v
}

/// Copies a folder tree (recorded fixtures are copied before reports are written into
/// them, so the checked-in fixture stays untouched).
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}
