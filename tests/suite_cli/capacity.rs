//! The capacity search end to end against the simulator, checked against the rate the
//! simulator's own model predicts: the same engine (`dfx_sim::vbench::replay`, virtual
//! time, no HTTP) given the jobs the server builds for the dataset's texts
//! (`dfx_sim::plan::job_for_body`) at Poisson arrivals, the p99 first-packet latency per
//! rate, and the highest rate within the bound. The suite's rate must lie within
//! [`BELOW`] / [`ABOVE`] of it: the search's own bracket (10 %, always below), one sampled
//! arrival pattern per probe against the model's median of several (either way), and
//! what the model leaves out, which only ever slows the real server (client and HTTP
//! time inside the measured TTFP, a loaded 2-core machine delaying the simulator's timers).
//! The fixture asks no continuity (the model predicts first packets only; time-lapsed,
//! continuity is judged on real-time chunk timing, where a loaded machine's delays count
//! K-fold).
//!
//! The bound, 250 ms, sits where queueing makes the p99 climb steeply (about 170 ms at
//! 2 req/s, 540 ms at 4): far above the unloaded floor (about 75 ms), so one late timer
//! cannot fail every rate. With 120 ms (2026-12-06) the search probed 0.5–0.9 req/s, took
//! about 100 s, and beside two busy loops and a build found no rate at all twice in four
//! runs: a 9 ms delay at 5× is 45 ms on the real-time scale. Now it passed 5 of 5 beside
//! two busy loops (model 2.62 req/s, suite 2.83), in about 30 s; `min_rate` 0.5 stops a
//! run that misses from probing ever slower rates.

use libtest_mimic::Failed;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::support::{check_schemas, output_text, root, sim_native};

const MODEL: &str = "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice";
/// The fixture's bound (ms on the real-time scale: `sim_native` runs the simulator sped up,
/// and the native bench time-lapses the search by the same factor; the module's comment
/// says why 250) and probe size.
const MAX_P99_TTFP_MS: f64 = 250.0;
const PROBE: usize = 40;
/// The suite's rate may lie this far below the model's (relative)…
pub const BELOW: f64 = 0.45;
/// …and this far above it. Time-lapsed, the probes are the real-time experiment, so one
/// probe's arrival pattern (the fixture's seed) against the model's median of nine reads
/// high as often as low: two runs of the same fixture found 0.59 and 1.30 req/s against
/// the model's 0.82 (a p99 of 40 first packets moves ±15 % between patterns). A wrong
/// scale would be off by the simulator's speed (5×).
pub const ABOVE: f64 = 0.7;

fn texts() -> Result<Vec<String>, Failed> {
    let meta = root().join("perf-configs/datasets/seed_tts_smoke/en/meta.lst");
    Ok(std::fs::read_to_string(meta)?
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.rsplit('|').next().map(str::to_string))
        .collect())
}

/// numpy's default percentile (linear between closest ranks).
fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let pos = p / 100.0 * (v.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    v[i] + (v[(i + 1).min(v.len() - 1)] - v[i]) * frac
}

/// The model's p99 TTFP (ms) at `rate` req/s, both on the real-time scale: the median over
/// seeds of one probe's p99.
fn model_p99(cfg: &dfx_sim::SimConfig, jobs: &[dfx_sim::engine::Job], rate: f64) -> f64 {
    let mut p99s: Vec<f64> = (0..9u64)
        .map(|seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let picked: Vec<_> = (0..PROBE)
                .map(|_| jobs[rng.random_range(0..jobs.len())].clone())
                .collect();
            let mut t = 0.0;
            let sends: Vec<f64> = (0..PROBE)
                .map(|i| {
                    if i > 0 {
                        t += -(1.0 - rng.random::<f64>()).ln() / rate;
                    }
                    t
                })
                .collect();
            let o = dfx_sim::vbench::replay(&cfg.engine, &picked, &sends);
            let mut ms: Vec<f64> = o.ttfp_s.iter().map(|s| s * 1000.0).collect();
            percentile(&mut ms, 99.0)
        })
        .collect();
    percentile(&mut p99s, 50.0)
}

/// The highest rate (1 % steps) below the first one whose model p99 exceeds the bound.
fn predicted_rate() -> Result<f64, Failed> {
    let cfg = dfx_sim::SimOptions::new(MODEL).resolve()?;
    let jobs = texts()?
        .iter()
        .map(|text| {
            let body = json!({"model": MODEL, "input": text, "voice": "Vivian",
                "language": "English", "task_type": "CustomVoice", "stream": true,
                "response_format": "pcm"});
            dfx_sim::plan::job_for_body(&cfg, &serde_json::to_vec(&body)?)
                .map_err(|e| Failed::from(format!("{e:?}")))
        })
        .collect::<Result<Vec<_>, Failed>>()?;
    let mut rate: f64 = 0.25;
    while rate < 5000.0 {
        if model_p99(&cfg, &jobs, rate * 1.01) > MAX_P99_TTFP_MS {
            return Ok(rate);
        }
        rate *= 1.01;
    }
    Err("the model never exceeds the bound".into())
}

pub fn capacity_search_finds_the_models_rate() -> Result<(), Failed> {
    let predicted = predicted_rate()?;
    let (out, results) = sim_native(
        "sim_capacity.json",
        &["--assert-baseline", "--gpu-hour-price", "2.5"],
        &[],
    )?;
    if out.status.code() != Some(0) {
        return Err(format!("suite failed: {}", output_text(&out)).into());
    }
    let trials = results.path().join("latest/trials");
    let dir = std::fs::read_dir(&trials)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .next()
        .ok_or("no trial folder")?;
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("result.json"))?)?;
    let found = doc["capacity_request_rate"].as_f64().unwrap_or(0.0);
    let probes = doc["capacity"]["probes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let evidence: Vec<String> = probes
        .iter()
        .map(|p| {
            format!(
                "{:.2} req/s → p99 {} ms {}",
                p["rate"].as_f64().unwrap_or(0.0),
                p["p99_audio_ttfp_ms"],
                p["miss"]
            )
        })
        .collect();
    eprintln!(
        "capacity: model {predicted:.2} req/s, suite {found:.2} req/s\n  {}",
        evidence.join("\n  ")
    );
    let ratio = found / predicted;
    if !(1.0 - BELOW..=1.0 + ABOVE).contains(&ratio) {
        return Err(format!(
            "the search found {found:.2} req/s, the model predicts {predicted:.2} (−{:.0} % / +{:.0} %):\n  {}",
            BELOW * 100.0,
            ABOVE * 100.0,
            evidence.join("\n  ")
        )
        .into());
    }
    let every_probe_has_a_folder = probes
        .iter()
        .all(|p| p["dir"].as_str().is_some_and(|d| dir.join(d).is_dir()));
    let cost = doc["cost_per_1m_chars"].as_f64().unwrap_or(-1.0);
    if !every_probe_has_a_folder || cost <= 0.0 || doc["verdict"]["passed"] != json!(true) {
        return Err(format!("probes {probes:?}, cost {cost}, verdict {}", doc["verdict"]).into());
    }
    check_schemas(&results.path().join("latest"))
}
