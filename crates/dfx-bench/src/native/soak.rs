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
//! machine). Request ids carry the batch: `<prefix>b<batch>-<i>`.

use std::num::NonZeroU64;
use std::time::Instant;

use dfx_core::plan::{BenchEntry, SoakKeys};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::dataset::{DatasetKind, Row};
use super::record::RequestRecord;
use super::stats;
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

/// The `stability` section: every batch's figures and the first-vs-last-quarter drift.
/// `rss_mb[b]` is the server group's resident memory after batch `b`, when it is local.
pub(crate) fn section(
    plan: &SoakPlan,
    scale: f64,
    measured: &[RequestRecord],
    started: &[f64],
    rss_mb: &[Option<f64>],
) -> Value {
    let n = started.len();
    let of = |b: usize| -> Vec<&RequestRecord> {
        measured.iter().filter(|r| batch_of(r) == Some(b)).collect()
    };
    let batches: Vec<Value> = (0..n)
        .map(|b| {
            let mut v = figures(&of(b));
            v["batch"] = json!(b);
            v["started_s"] = json!(started[b]);
            v["server_rss_mb"] = json!(rss_mb.get(b).copied().flatten());
            v
        })
        .collect();
    let (head, tail) = quarters(n);
    let group =
        |range: std::ops::Range<usize>| -> Vec<&RequestRecord> { range.flat_map(of).collect() };
    let (first, last) = (figures(&group(head.clone())), figures(&group(tail.clone())));
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
    let mut first = first;
    let mut last = last;
    first["server_rss_mb"] = rss(head);
    last["server_rss_mb"] = rss(tail);
    let ratio = |k: &str| match (first[k].as_f64(), last[k].as_f64()) {
        (Some(a), Some(b)) if a > 0.0 => json!(b / a),
        _ => Value::Null,
    };
    json!({
        "duration_sec": plan.seconds / scale,
        "duration_scale": scale,
        "soak_seconds": plan.seconds,
        "num_prompts_per_batch": plan.batch,
        "random_input_words": [plan.words.0, plan.words.1],
        "batches_run": n,
        "batches": batches,
        "drift": {
            "first_quarter": first,
            "last_quarter": last,
            "ttfp_ratio": ratio("median_audio_ttfp_ms"),
            "rtf_ratio": ratio("median_audio_rtf"),
            "server_rss_ratio": ratio("server_rss_mb"),
            "error_rate_change": last["error_rate"].as_f64().unwrap_or(0.0) - first["error_rate"].as_f64().unwrap_or(0.0),
        }
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
