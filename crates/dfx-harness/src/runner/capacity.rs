//! A capacity search (`capacity` entry key): open-loop probes at rates chosen by
//! bracketing (doubling up, or halving down, from `start_rate`) and geometric bisection,
//! each probe a whole step of `num_prompts` requests into `probe-<NN>/` (the boundary one
//! as repeats, judged on their medians). The trial's result is the confirmed boundary
//! probe's document with `capacity_request_rate` and a `capacity` section listing every
//! probe; with `--gpu-hour-price`, the cost per million input characters at that rate.

use std::num::NonZeroU32;
use std::path::Path;

use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::{CapacitySpec, StepKind, Trial};
use dfx_core::result::{ResultDoc, template_fallback};
use serde_json::{Value, json};

use super::failure::{CapacityFailure, NoResult, TrialFailure};
use super::repeat::{self, Piece, QualityStep};

/// One probe: its rate, how it went and where its files are.
struct Probe {
    rate: f64,
    repeats: NonZeroU32,
    dir: String,
    /// Why it did not meet the criteria; `None` when it did.
    miss: Option<String>,
    piece: Piece,
}

/// What the search needs besides the bench.
pub(super) struct Search<'a> {
    pub spec: CapacitySpec,
    /// Runs of every probe (`repeats` / `--repeats`, default 1), judged on medians.
    pub repeats: NonZeroU32,
    pub base_seed: u64,
    pub label: &'a str,
    pub cmd: Option<&'a crate::quality::QualityHook>,
    pub said: &'a mut bool,
}

/// Runs the search; the returned piece is the trial's.
pub(super) fn run(bench: &dyn Bench, ctx: &BenchContext<'_>, mut s: Search<'_>) -> Piece {
    let spec = s.spec;
    // Every probe runs `each` times; the boundary is confirmed by at least
    // `boundary_repeats` (already done when every probe runs that often).
    let each = s.repeats;
    let confirm = spec.boundary_repeats.max(each);
    let mut probes: Vec<Probe> = Vec::new();
    let mut probe = |rate: f64, repeats: NonZeroU32, probes: &mut Vec<Probe>| -> bool {
        let p = run_probe(bench, ctx, &mut s, probes.len() + 1, rate, repeats);
        let passed = p.miss.is_none();
        probes.push(p);
        passed
    };
    let budget = spec.max_probes as usize;
    let (mut lo, mut hi): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = spec.start_rate;
    // Bracket: up by doubling from a pass, down by halving from a miss.
    while probes.len() < budget {
        if probe(rate, each, &mut probes) {
            lo = Some(rate);
            if hi.is_some() || rate >= spec.max_rate {
                break;
            }
            rate = (rate * 2.0).min(spec.max_rate);
        } else {
            hi = Some(rate);
            if lo.is_some() || rate <= spec.min_rate {
                break;
            }
            rate = (rate / 2.0).max(spec.min_rate);
        }
    }
    // Bisect, then confirm the boundary with repeats (a miss there moves it down).
    while let (Some(l), Some(h)) = (lo, hi) {
        if probes.len() >= budget {
            break;
        }
        if h / l - 1.0 > spec.tolerance {
            let mid = (l * h).sqrt();
            if probe(mid, each, &mut probes) {
                lo = Some(mid);
            } else {
                hi = Some(mid);
            }
        } else if confirm.get() > 1 && !confirmed(&probes, l, confirm) {
            if !probe(l, confirm, &mut probes) {
                hi = Some(l);
                lo = passes_below(&probes, l);
            }
        } else {
            break;
        }
    }
    if let (Some(l), None) = (lo, hi)
        && confirm.get() > 1
        && probes.len() < budget
        && !confirmed(&probes, l, confirm)
        && !probe(l, confirm, &mut probes)
    {
        lo = passes_below(&probes, l);
    }
    conclude(ctx, &spec, probes, lo, hi, budget)
}

/// Whether a probe at `rate` with at least `confirm` repeats already passed.
fn confirmed(probes: &[Probe], rate: f64, confirm: NonZeroU32) -> bool {
    probes
        .iter()
        .any(|p| p.rate == rate && p.repeats >= confirm && p.miss.is_none())
}

/// The highest passing rate below `rate`.
fn passes_below(probes: &[Probe], rate: f64) -> Option<f64> {
    probes
        .iter()
        .filter(|p| p.miss.is_none() && p.rate < rate)
        .map(|p| p.rate)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))))
}

fn run_probe(
    bench: &dyn Bench,
    ctx: &BenchContext<'_>,
    s: &mut Search<'_>,
    index: usize,
    rate: f64,
    repeats: NonZeroU32,
) -> Probe {
    let dir = format!("probe-{index:02}");
    let out_dir = ctx.out_dir.join(&dir);
    let trial = at_rate(ctx.trial, rate);
    let _ = std::fs::create_dir_all(&out_dir);
    let pctx = BenchContext {
        trial: &trial,
        out_dir,
        ..ctx.clone()
    };
    let quality = QualityStep {
        cmd: s.cmd,
        said: &mut *s.said,
    };
    let piece = repeat::run(bench, &pctx, s.label, repeats, s.base_seed, quality);
    let miss = miss(&s.spec, &piece, trial.step.num_prompts.get());
    Probe {
        rate,
        repeats,
        dir,
        miss,
        piece,
    }
}

/// The trial with its step at `rate` (open loop; the size stays `num_prompts`).
fn at_rate(trial: &Trial, rate: f64) -> Trial {
    let mut t = trial.clone();
    t.step.kind = StepKind::RequestRate { request_rate: rate };
    t
}

/// Why a probe's (median) result misses the criteria, or `None`.
fn miss(spec: &CapacitySpec, p: &Piece, n: u64) -> Option<String> {
    if let Some(why) = &p.fallback {
        return Some(why.to_string());
    }
    if let Some(f) = p.failures.first() {
        return Some(f.to_string());
    }
    let num = |k: &str| p.doc.get(k).and_then(Value::as_f64);
    let completed = p.doc.get("completed").and_then(Value::as_u64).unwrap_or(0);
    if completed < n {
        return Some(format!("{completed} of {n} requests completed"));
    }
    match num("p99_audio_ttfp_ms") {
        None => return Some("the result has no p99_audio_ttfp_ms".into()),
        Some(t) if t > spec.max_p99_ttfp_ms => {
            return Some(format!(
                "p99_audio_ttfp_ms {t:.1} > {}",
                spec.max_p99_ttfp_ms
            ));
        }
        Some(_) => {}
    }
    if spec.min_continuity > 0.0 {
        match num("audio_continuity_ok_rate") {
            None => return Some("the result has no audio_continuity_ok_rate".into()),
            Some(c) if c < spec.min_continuity => {
                return Some(format!(
                    "audio_continuity_ok_rate {c:.3} < {}",
                    spec.min_continuity
                ));
            }
            Some(_) => {}
        }
    }
    None
}

fn conclude(
    ctx: &BenchContext<'_>,
    spec: &CapacitySpec,
    probes: Vec<Probe>,
    lo: Option<f64>,
    hi: Option<f64>,
    budget: usize,
) -> Piece {
    let listed: Vec<Value> = probes.iter().map(probe_json).collect();
    let boundary = lo.and_then(|l| probes.iter().rposition(|p| p.rate == l && p.miss.is_none()));
    let why_none = match (lo, probes.len() >= budget) {
        (None, _) => Some(CapacityFailure::NoRate {
            lowest: probes.iter().map(|p| p.rate).fold(f64::INFINITY, f64::min),
        }),
        (Some(_), true) if hi.is_some_and(|h| h / lo.unwrap_or(h) - 1.0 > spec.tolerance) => {
            Some(CapacityFailure::Budget {
                max_probes: budget,
                tolerance: spec.tolerance,
            })
        }
        _ => None,
    };
    let mut probes = probes;
    let mut piece = match boundary {
        Some(i) => probes.swap_remove(i).piece,
        None => probes.pop().map(|p| p.piece).unwrap_or_else(|| Piece {
            doc: template_fallback(&NoResult::NoProbe.to_string()),
            failures: Vec::new(),
            fallback: Some(NoResult::NoProbe),
            log_tail: String::new(),
            errors: Vec::new(),
        }),
    };
    let rate = lo.unwrap_or(0.0);
    let note = match (lo, hi) {
        (Some(_), None) => Some("every probe up to max_rate passed: capacity is at least this"),
        _ => None,
    };
    let chars = mean_chars(&ctx.out_dir, &listed, lo);
    piece
        .doc
        .insert("capacity_request_rate".into(), json!(rate));
    piece.doc.insert(
        "capacity".into(),
        json!({"request_rate": rate, "bracket": [lo, hi], "criteria": spec,
               "note": note, "mean_input_chars": chars, "probes": listed}),
    );
    if let Some(why) = why_none {
        piece.failures.insert(0, TrialFailure::Capacity(why));
    } else {
        // The boundary's own misses (none) and the other probes' are evidence, not failures.
        piece.failures.clear();
    }
    piece
}

fn probe_json(p: &Probe) -> Value {
    let num = |k: &str| p.piece.doc.get(k).cloned().unwrap_or(Value::Null);
    json!({"rate": p.rate, "repeats": p.repeats.get(), "dir": p.dir, "passed": p.miss.is_none(),
           "miss": p.miss, "completed": num("completed"), "failed": num("failed"),
           "p99_audio_ttfp_ms": num("p99_audio_ttfp_ms"),
           "audio_continuity_ok_rate": num("audio_continuity_ok_rate"),
           "achieved_request_throughput": num("request_throughput")})
}

/// Mean characters per measured request of the boundary probe's `records.jsonl` files
/// (every repeat's), for the cost per character.
fn mean_chars(trial_dir: &Path, probes: &[Value], lo: Option<f64>) -> Option<f64> {
    let lo = lo?;
    let boundary = probes
        .iter()
        .rev()
        .find(|p| p["rate"].as_f64() == Some(lo) && p["passed"] == json!(true))?;
    let dir = boundary["dir"].as_str()?;
    let base = trial_dir.join(dir);
    let repeats = boundary["repeats"].as_u64().unwrap_or(1);
    let files: Vec<_> = if repeats > 1 {
        (1..=repeats)
            .map(|k| base.join(format!("repeat-{k}/records.jsonl")))
            .collect()
    } else {
        vec![base.join("records.jsonl")]
    };
    let (mut sum, mut n) = (0.0, 0usize);
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["warmup"] == json!(false)
                && let Some(c) = v["text_len"].as_f64()
            {
                sum += c;
                n += 1;
            }
        }
    }
    (n > 0).then(|| sum / n as f64)
}

/// Cost per million input characters at `rate` requests per second of `chars` characters
/// each, on `gpus` GPUs at `price` per GPU-hour.
pub(super) fn cost_per_million_chars(
    price: f64,
    gpus: usize,
    rate: f64,
    chars: f64,
) -> Option<f64> {
    let per_hour = rate * chars * 3600.0;
    (per_hour > 0.0).then(|| price * gpus as f64 / per_hour * 1e6)
}

/// Adds `capacity.cost` to a capacity trial's document: the price, the GPUs (counted by
/// the GPU samples, else `CUDA_VISIBLE_DEVICES` of the server, else assumed 1) and the
/// cost per million input characters at the found rate.
pub(super) fn add_cost(doc: &mut ResultDoc, price: Option<f64>, server_gpus: Option<usize>) {
    let Some(cap) = doc.get("capacity").cloned() else {
        return;
    };
    let sampled = doc.get("gpus").and_then(Value::as_array).map(Vec::len);
    let (gpus, from) = match (sampled, server_gpus) {
        (Some(n), _) if n > 0 => (n, "gpu samples"),
        (_, Some(n)) if n > 0 => (n, "CUDA_VISIBLE_DEVICES"),
        _ => (1, "assumed (no GPU samples, no CUDA_VISIBLE_DEVICES)"),
    };
    let rate = cap["request_rate"].as_f64().unwrap_or(0.0);
    let chars = cap["mean_input_chars"].as_f64();
    let cost = match (price, chars) {
        (Some(p), Some(c)) => json!({"gpu_hour_price": p, "gpus": gpus, "gpus_from": from,
            "cost_per_1m_chars": cost_per_million_chars(p, gpus, rate, c)}),
        (None, _) => json!({"note": "no --gpu-hour-price: cost not computed"}),
        (Some(_), None) => json!({"note": "no measured input characters at the boundary"}),
    };
    if let Some(c) = doc.get_mut("capacity").and_then(Value::as_object_mut) {
        c.insert("cost".into(), cost.clone());
    }
    if let Some(x) = cost.get("cost_per_1m_chars").and_then(Value::as_f64) {
        doc.insert("cost_per_1m_chars".into(), json!(x));
    }
}
