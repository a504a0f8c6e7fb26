//! Stability (soak) entries of upstream's stability runner, run natively for
//! `openai-audio-speech`: batches of `num_prompts_per_batch` requests at the entry's
//! `max_concurrency` (or `request_rate`), each batch with fresh random-length texts drawn
//! from `random_input_len` (`{min, max}`, `[lo, hi]`, `"lo-hi"` or a number; words stand
//! for tokens), until `duration_sec` × `--duration-scale` is over (checked before each
//! batch, like upstream, so the last batch may run past it).
//!
//! The result is the whole soak's document (every measured request of every batch) plus a
//! `stability` section: the batches with their own figures (also in `batches.jsonl`) and
//! the drift between the first and the last quarter of the batches (TTFP and RTF medians,
//! error rate, the server group's resident memory from `/proc` when it runs on this
//! machine; with `goodput`, each batch's goodput and SLO attainment and the attainment's
//! drift). Request ids carry the batch: `<prefix>b<batch>-<i>`.

use std::num::NonZeroU64;
use std::time::Instant;

use dfx_core::plan::{BenchEntry, GoodputSpec, SoakKeys};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::aggregate;
use super::dataset::{DatasetKind, Row};
use super::record::RequestRecord;
use super::stats;
use crate::metrics::goodput::Goodput;
use crate::native::BenchError;

/// A soak's parameters, read from the entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SoakPlan {
    /// Seconds of soak after `--duration-scale`.
    pub seconds: f64,
    /// Requests per batch.
    pub batch: usize,
    /// Text length range in words (inclusive).
    pub words: (u64, u64),
}

/// The soak of a stability entry: its `duration_sec` × `scale` and `random_input_len`
/// (parsed and bounded at load, [`SoakKeys`]); the batch is the step's `num_prompts`.
pub(crate) fn plan(keys: &SoakKeys, batch: NonZeroU64, scale: f64) -> SoakPlan {
    SoakPlan {
        seconds: keys.duration_s * scale,
        // At most `MAX_PROMPTS` (a million): lossless on every target.
        batch: batch.get() as usize,
        words: keys.words,
    }
}

/// The soak keys of a stability entry, or why `entry` is not one.
pub(crate) fn keys(entry: &BenchEntry) -> Result<&SoakKeys, BenchError> {
    entry
        .runner
        .soak()
        .ok_or(BenchError::WrongRunner("stability"))
}

const WORDS: [&str; 24] = [
    "the", "quiet", "river", "carries", "light", "across", "stone", "bridges", "while", "morning",
    "voices", "gather", "near", "open", "windows", "and", "distant", "bells", "answer", "every",
    "small", "question", "with", "patience",
];

/// `n` rows of random texts for batch `b` (seeded: the same seed gives the same soak).
pub(crate) fn rows(plan: &SoakPlan, seed: u64, b: usize, n: usize) -> Vec<Row> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (b as u64).wrapping_mul(0x9E37_79B9));
    (0..n)
        .map(|i| {
            let len = rng.random_range(plan.words.0..=plan.words.1);
            let text: Vec<&str> = (0..len)
                .map(|_| WORDS[rng.random_range(0..WORDS.len())])
                .collect();
            Row {
                line: i + 1,
                utt_id: format!("soak-b{b}-{i}"),
                ref_text: String::new(),
                ref_wav: Default::default(),
                text: format!("{}.", text.join(" ")),
                voice_description: None,
            }
        })
        .collect()
}

/// The dataset kind soak requests use: text only, the voice from `extra_body`.
pub(crate) const KIND: DatasetKind = DatasetKind::SeedTtsText;

/// The batch a measured request belongs to, from its id `<prefix>b<batch>-<i>`.
pub(crate) fn batch_of(r: &RequestRecord) -> Option<usize> {
    let id = r.id.request_id.as_deref()?;
    let tail = &id[id.rfind('b')? + 1..];
    tail.split('-').next()?.parse().ok()
}

/// Moves each measured record's times from its batch's clock to the soak's (`offsets[b]`
/// seconds from the soak's start to batch `b`'s start).
pub(crate) fn rebase(records: &mut [RequestRecord], offsets: &[f64]) {
    for r in records {
        let off = batch_of(r)
            .and_then(|b| offsets.get(b))
            .copied()
            .unwrap_or(0.0);
        r.sent.planned_send_s += off;
        r.sent.actual_send_s += off;
        r.end.end_s += off;
    }
}

/// Figures of one group of requests: count, failures, error rate, TTFP and RTF medians.
fn figures(rs: &[&RequestRecord]) -> Value {
    let ok: Vec<&&RequestRecord> = rs.iter().filter(|r| r.end.ok).collect();
    let med = |xs: Vec<f64>| {
        if xs.is_empty() {
            Value::Null
        } else {
            json!(stats::Sorted::new(xs).median())
        }
    };
    json!({
        "requests": rs.len(),
        "failed": rs.len() - ok.len(),
        "error_rate": if rs.is_empty() { 0.0 } else { (rs.len() - ok.len()) as f64 / rs.len() as f64 },
        "median_audio_ttfp_ms": med(ok.iter().filter_map(|r| r.ttfp_s).map(|s| s * 1000.0).collect()),
        "median_audio_rtf": med(ok.iter().filter_map(|r| r.rtf).collect()),
    })
}

/// The first and the last quarter of `n` batches (a quarter rounded up, at least one
/// batch), as indices: the two ends the drift compares.
pub(crate) fn quarters(n: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    let q = n.div_ceil(4).max(1);
    (0..q.min(n), n.saturating_sub(q)..n)
}

/// With `goodput`: a group's good requests (the speech rule,
/// [`aggregate::slo_values`]) as `slo_attainment` in `v`, and, given the group's duration,
/// `request_goodput`. The share of good requests of the group.
fn put_goodput(
    v: &mut Value,
    spec: Option<&GoodputSpec>,
    rs: &[&RequestRecord],
    duration_s: Option<f64>,
) -> Option<f64> {
    let g = Goodput::count(spec?, rs.iter().map(|r| aggregate::slo_values(r)));
    if let Some(d) = duration_s {
        v["request_goodput"] = json!(g.request_goodput(d));
    }
    v["slo_attainment"] = json!(g.attainment());
    g.attainment()
}

/// The `stability` section: every batch's figures and the first-vs-last-quarter drift.
/// `rss_mb[b]` is the server group's resident memory after batch `b`, when it is local;
/// with the entry's `goodput`, each batch's `request_goodput` (good / the batch's
/// duration, its start to its last end) and `slo_attainment`, each quarter's attainment.
pub(crate) fn section(
    plan: &SoakPlan,
    scale: f64,
    measured: &[RequestRecord],
    started: &[f64],
    rss_mb: &[Option<f64>],
    goodput: Option<&GoodputSpec>,
) -> Value {
    let n = started.len();
    let of = |b: usize| -> Vec<&RequestRecord> {
        measured.iter().filter(|r| batch_of(r) == Some(b)).collect()
    };
    let batches: Vec<Value> = (0..n)
        .map(|b| {
            let rs = of(b);
            let mut v = figures(&rs);
            let end = rs.iter().map(|r| r.end.end_s).fold(started[b], f64::max);
            put_goodput(&mut v, goodput, &rs, Some(end - started[b]));
            v["batch"] = json!(b);
            v["started_s"] = json!(started[b]);
            v["server_rss_mb"] = json!(rss_mb.get(b).copied().flatten());
            v
        })
        .collect();
    let (head, tail) = quarters(n);
    let group =
        |range: std::ops::Range<usize>| -> Vec<&RequestRecord> { range.flat_map(of).collect() };
    let (head_rs, tail_rs) = (group(head.clone()), group(tail.clone()));
    let (mut first, mut last) = (figures(&head_rs), figures(&tail_rs));
    let attained = (
        put_goodput(&mut first, goodput, &head_rs, None),
        put_goodput(&mut last, goodput, &tail_rs, None),
    );
    let rss = |range: std::ops::Range<usize>| -> Value {
        let v: Vec<f64> = range
            .filter_map(|b| rss_mb.get(b).copied().flatten())
            .collect();
        if v.is_empty() {
            Value::Null
        } else {
            json!(stats::mean(&v))
        }
    };
    first["server_rss_mb"] = rss(head);
    last["server_rss_mb"] = rss(tail);
    let ratio = |k: &str| match (first[k].as_f64(), last[k].as_f64()) {
        (Some(a), Some(b)) if a > 0.0 => json!(b / a),
        _ => Value::Null,
    };
    let mut drift = json!({
        "first_quarter": first,
        "last_quarter": last,
        "ttfp_ratio": ratio("median_audio_ttfp_ms"),
        "rtf_ratio": ratio("median_audio_rtf"),
        "server_rss_ratio": ratio("server_rss_mb"),
        "error_rate_change": last["error_rate"].as_f64().unwrap_or(0.0) - first["error_rate"].as_f64().unwrap_or(0.0),
    });
    if goodput.is_some() {
        drift["slo_attainment_change"] = match attained {
            (Some(a), Some(b)) => json!(b - a),
            _ => Value::Null,
        };
    }
    json!({
        "duration_sec": plan.seconds / scale,
        "duration_scale": scale,
        "soak_seconds": plan.seconds,
        "num_prompts_per_batch": plan.batch,
        "random_input_words": [plan.words.0, plan.words.1],
        "batches_run": n,
        "batches": batches,
        "drift": drift,
    })
}

/// Resident memory of every process in group `pgid`, MiB (`/proc`; `None` when no
/// member is found, e.g. the group is gone or this is not Linux).
pub(crate) fn group_rss_mb(pgid: u32) -> Option<f64> {
    let mut kb = 0u64;
    let mut found = false;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses.
        let pgrp = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|p| p.parse::<u32>().ok());
        if pgrp != Some(pgid) {
            continue;
        }
        let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
        if let Some(v) = status.lines().find_map(|l| l.strip_prefix("VmRSS:")) {
            kb += v
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .unwrap_or(0);
            found = true;
        }
    }
    found.then(|| kb as f64 / 1024.0)
}

/// Seconds from `start` to `t`.
pub(crate) fn since(start: Instant, t: Instant) -> f64 {
    t.saturating_duration_since(start).as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_scales_the_duration_and_keeps_the_words() {
        // The forms of `random_input_len` are parsed at load (dfx_core::runner_keys).
        let keys = SoakKeys {
            duration_s: dfx_core::runner_keys::DEFAULT_SOAK_DURATION_S,
            words: (1, dfx_core::runner_keys::MAX_SOAK_WORDS),
        };
        let p = plan(&keys, NonZeroU64::new(50).unwrap(), 0.001);
        assert_eq!(p.words, (1, 4000));
        assert_eq!(p.batch, 50);
        assert!((p.seconds - 0.3).abs() < 1e-9);
    }

    /// A measured record of batch `b` ending at `end_s` on the soak's clock: a success
    /// with that TTFP, or a failure (`None`).
    fn rec(b: usize, i: usize, end_s: f64, ttfp_ms: Option<f64>) -> RequestRecord {
        let mut r = crate::native::sink::tests::record(i);
        r.id.request_id = Some(format!("x-b{b}-{i}"));
        r.end.end_s = end_s;
        r.end.ok = ttfp_ms.is_some();
        r.ttfp_s = ttfp_ms.map(|t| t / 1000.0);
        r.e2el_s = r.end.ok.then_some(0.5);
        r.rtf = r.end.ok.then_some(0.2);
        r
    }

    /// Hand-computed, SLO audio_ttfp ≤ 200 ms. Batch 0 (start 0): good at 100 ms (end
    /// 1.0), missed at 300 ms (end 2.0), one failure: 1 of 3, 1 good / 2.0 s = 0.5 req/s.
    /// Batch 1 (start 2.5): 100 and 200 ms (the bound meets it), ends 3.0 and 3.5: 2 of
    /// 2, 2 / 1.0 s. Two batches: the first quarter is batch 0, the last batch 1.
    #[test]
    fn each_batch_has_its_goodput_and_the_drift_its_attainment() {
        let p = SoakPlan {
            seconds: 1.0,
            batch: 3,
            words: (1, 2),
        };
        let recs = [
            rec(0, 0, 1.0, Some(100.0)),
            rec(0, 1, 2.0, Some(300.0)),
            rec(0, 2, 0.5, None),
            rec(1, 0, 3.0, Some(100.0)),
            rec(1, 1, 3.5, Some(200.0)),
        ];
        let slo = GoodputSpec::parse(&json!("audio_ttfp:200")).unwrap();
        let s = section(&p, 1.0, &recs, &[0.0, 2.5], &[None, None], Some(&slo));
        let b = &s["batches"];
        assert_eq!(b[0]["slo_attainment"], json!(1.0 / 3.0));
        assert_eq!(b[0]["request_goodput"], json!(0.5));
        assert_eq!(b[1]["slo_attainment"], json!(1.0));
        assert_eq!(b[1]["request_goodput"], json!(2.0));
        let d = &s["drift"];
        assert_eq!(d["first_quarter"]["slo_attainment"], json!(1.0 / 3.0));
        assert_eq!(d["last_quarter"]["slo_attainment"], json!(1.0));
        assert_eq!(d["slo_attainment_change"], json!(1.0 - 1.0 / 3.0));
        // Without `goodput` none of these keys.
        let s = section(&p, 1.0, &recs, &[0.0, 2.5], &[None, None], None);
        assert!(s["batches"][0].get("slo_attainment").is_none(), "{s}");
        assert!(s["batches"][0].get("request_goodput").is_none(), "{s}");
        assert!(s["drift"].get("slo_attainment_change").is_none(), "{s}");
    }

    #[test]
    fn rows_are_seeded_and_within_the_range() {
        let p = SoakPlan {
            seconds: 1.0,
            batch: 4,
            words: (2, 5),
        };
        let a = rows(&p, 7, 1, 4);
        assert_eq!(
            a.iter().map(|r| r.text.clone()).collect::<Vec<_>>(),
            rows(&p, 7, 1, 4)
                .iter()
                .map(|r| r.text.clone())
                .collect::<Vec<_>>()
        );
        assert!(
            a.iter()
                .all(|r| (2..=5).contains(&r.text.split(' ').count()))
        );
        assert_ne!(a[0].text, rows(&p, 7, 2, 4)[0].text);
    }
}
