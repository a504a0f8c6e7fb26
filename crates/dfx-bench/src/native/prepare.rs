//! Everything decided before the first request: dataset, rows, bodies, sample rate,
//! token, load shape. Errors here leave no result (the harness writes the fallback).

use std::collections::HashMap;
use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::Arc;

use bytes::Bytes;
use dfx_core::bench::BenchContext;
use dfx_core::models;
use dfx_core::plan::{BenchEntry, ConnectionMode, Saturation, StepKind, Trial};

use super::NativeSettings;
use super::client::Target;
use super::dataset::{self, DatasetKind, Lookup, Row};
use super::driver::{Job, Load};
use super::lapse::TimeLapse;
use super::quality::QualityRow;
use super::random::text::Counter;
use super::record::{RequestRecord, Sample};
use super::request::{BodyTemplate, base_headers, wav_data_url};
use super::schedule;
use super::selection::Selection;
use crate::native::BenchError;

/// A step ready to run.
pub(crate) struct Prepared {
    pub target: Arc<Target>,
    pub warmups: Vec<Job>,
    pub measured: Vec<Job>,
    pub load: Load,
    pub sample_rate: u32,
    /// The time-lapse the records are mapped back with.
    pub lapse: TimeLapse,
    pub selection: Selection,
    /// Each measured request's prompt tokens as vllm bench counts them
    /// (`len(tokenizer.encode(text))`, special tokens included), when a tokenizer is set.
    pub prompt_tokens: Option<Vec<u64>>,
    /// Lines for bench.log describing the choices made.
    pub notes: Vec<String>,
}

impl Prepared {
    /// `total_input_tokens`: the prompt tokens of the successful measured requests.
    pub(crate) fn input_tokens(&self, measured: &[RequestRecord]) -> u64 {
        let Some(tokens) = &self.prompt_tokens else {
            return 0;
        };
        measured
            .iter()
            .filter(|r| r.end.ok)
            .filter_map(|r| tokens.get(r.id.index))
            .sum()
    }
}

/// Each measured row's prompt tokens with the tokenizer of `settings`, if one is set.
fn prompt_tokens(
    settings: &NativeSettings,
    rows: &[Row],
    measured: &[usize],
) -> Result<Option<Vec<u64>>, BenchError> {
    let Some(path) = &settings.tokenizer else {
        return Ok(None);
    };
    let counter = Counter::load(path)?;
    let count = |r: &usize| counter.prompt_len(&rows[*r].text).unwrap_or(0);
    Ok(Some(measured.iter().map(count).collect()))
}

/// The sample rate and where it came from.
pub(crate) fn sample_rate(settings: &NativeSettings, model: &str, notes: &mut Vec<String>) -> u32 {
    if let Some(r) = settings.sample_rate {
        notes.push(format!("sample rate: {r} Hz (--sample-rate)"));
        r
    } else if let Some(r) = models::sample_rate(model) {
        notes.push(format!("sample rate: {r} Hz (known rate of {model})"));
        r
    } else {
        let r = models::DEFAULT_SAMPLE_RATE;
        notes.push(format!(
            "warning: sample rate of model {model:?} unknown; assuming {r} Hz (set --sample-rate; a wrong rate scales every audio duration)"
        ));
        r
    }
}

/// The bearer token, read from the configured variable (never logged).
pub(crate) fn token(settings: &NativeSettings, notes: &mut Vec<String>) -> Option<String> {
    let var = settings.auth_token_env.as_deref()?;
    match std::env::var(var) {
        Ok(t) if !t.is_empty() => {
            notes.push(format!("auth: bearer token from ${var}"));
            Some(t)
        }
        _ => {
            notes.push(format!(
                "warning: ${var} is not set; sending no Authorization header"
            ));
            None
        }
    }
}

/// Resolves and loads the entry's dataset.
pub(crate) fn load_dataset(
    settings: &NativeSettings,
    trial: &Trial,
    kind: DatasetKind,
    locale: &str,
    notes: &mut Vec<String>,
) -> Result<dataset::Dataset, BenchError> {
    let path = trial
        .entry
        .dataset_path
        .as_deref()
        .ok_or(dataset::DatasetError::NoPath)?;
    let lookup = Lookup {
        cwd: std::env::current_dir().unwrap_or_default(),
        config_dir: trial.source.file.parent().map(|p| p.to_path_buf()),
        roots: settings.dataset_roots.clone(),
        hf_caches: Lookup::hf_caches_from_env(),
    };
    let folder = lookup.resolve(path, locale)?;
    let ds = dataset::load(kind, &folder, locale)?;
    notes.push(format!(
        "dataset: {} ({} rows)",
        ds.meta.display(),
        ds.rows.len()
    ));
    Ok(ds)
}

/// The dataset kind of `entry`, or why the native bench cannot serve it.
pub(crate) fn dataset_kind(entry: &BenchEntry) -> Result<DatasetKind, BenchError> {
    entry
        .dataset_name
        .as_deref()
        .and_then(DatasetKind::from_name)
        .ok_or_else(|| {
            BenchError::Input(format!(
                "dataset {:?} is not implemented by the native bench",
                entry.dataset_name
            ))
        })
}

/// Checks, before any server starts, what [`prepare`] will need of `trial`'s entry: the
/// dataset resolves, `meta.lst` parses with the fields its task needs, every reference
/// clip of a voice-clone dataset exists and decodes (the percentile keys were checked
/// when the plan was built). Returns the dataset's description for the log.
pub(crate) fn preflight(settings: &NativeSettings, trial: &Trial) -> Result<String, BenchError> {
    let entry = &trial.entry;
    let kind = dataset_kind(entry)?;
    if kind == DatasetKind::SeedTtsText && !has_voice(entry) {
        return Err(BenchError::Input(
            "seed-tts-text sends no reference audio, so the request needs a voice: \
                    set extra_body.voice (e.g. \"Vivian\")"
                .into(),
        ));
    }
    let locale = entry.seed_tts_locale.as_deref().unwrap_or("en");
    let mut notes = Vec::new();
    load_dataset(settings, trial, kind, locale, &mut notes)?;
    Ok(notes.join("; "))
}

/// Whether the request body will carry a non-empty `voice` (`extra_body.voice`).
fn has_voice(entry: &BenchEntry) -> bool {
    entry
        .extra_body
        .as_ref()
        .and_then(|b| b.get("voice"))
        .and_then(|v| v.as_str())
        .is_some_and(|v| !v.trim().is_empty())
}

/// The measured jobs (with request ids) and the warmup jobs (without), each row's body
/// encoded once.
fn jobs(
    template: &BodyTemplate,
    rows: &[Row],
    (measured, warm): (&[usize], &[usize]),
    prefix: &str,
    quality: Option<&Arc<str>>,
) -> Result<(Vec<Job>, Vec<Job>), BenchError> {
    let mut bodies: HashMap<usize, Bytes> = HashMap::new();
    for &r in measured.iter().chain(warm) {
        if let std::collections::hash_map::Entry::Vacant(slot) = bodies.entry(r) {
            slot.insert(body_bytes(template, &rows[r])?);
        }
    }
    let job = |r: usize, id: Option<String>| Job {
        body: bodies[&r].clone(),
        sample: Sample {
            quality: quality
                .filter(|_| id.is_some())
                .map(|locale| Arc::new(quality_row(&rows[r], locale))),
            request_id: id,
            sample_id: rows[r].utt_id.clone(),
            text_len: rows[r].text.chars().count(),
        },
    };
    let m = measured
        .iter()
        .enumerate()
        .map(|(i, &r)| job(r, Some(format!("{prefix}{i}"))))
        .collect();
    let w = warm.iter().map(|&r| job(r, None)).collect();
    Ok((m, w))
}

/// The step's load shape, and its description for bench.log. An open loop's offsets are
/// planned on the real-time scale and run on the wall clock ÷ `lapse`.
pub(crate) fn load_shape(
    ctx: &BenchContext<'_>,
    n: usize,
    seed: u64,
    lapse: TimeLapse,
) -> Result<(Load, String), BenchError> {
    let (entry, step) = (&ctx.trial.entry, &ctx.trial.step);
    let burstiness = entry.burstiness.unwrap_or(1.0);
    Ok(match step.kind {
        StepKind::Concurrency { max_concurrency } => {
            let c = slots(max_concurrency);
            (
                Load::Closed { concurrency: c },
                format!("closed loop at concurrency {c}"),
            )
        }
        StepKind::RequestRate { request_rate: rate } => {
            let load = &entry.load;
            let cap = load.in_flight_cap(step).map(slots);
            let what = format!(
                "open loop: {}, burstiness {burstiness}{}",
                load.shape.describe(n as u64, rate),
                cap.map(|c| match load.saturation {
                    Saturation::Wait => format!(", at most {c} in flight (an arrival waits for a slot)"),
                    Saturation::Fail => format!(
                        ", at most {c} in flight (saturation gate: an arrival finding {c} in flight fails)"
                    ),
                })
                .unwrap_or_default()
            );
            let mut offsets = schedule::planned_offsets(&load.shape, n, rate, burstiness, seed)?;
            offsets.iter_mut().for_each(|t| *t = lapse.to_wall_s(*t));
            let saturation = load.saturation;
            (
                Load::Open {
                    offsets,
                    cap,
                    saturation,
                },
                what,
            )
        }
    })
}

/// A validated count of requests in flight as the schedulers hold it (a `u32` always fits
/// a `usize` on the 32- and 64-bit targets dfx-perf builds for).
pub(crate) fn slots(n: NonZeroU32) -> NonZeroUsize {
    NonZeroUsize::try_from(n).unwrap_or(NonZeroUsize::MAX)
}

/// Prepares one step of `ctx.trial`.
pub(crate) fn prepare(
    settings: &NativeSettings,
    ctx: &BenchContext<'_>,
    connection: ConnectionMode,
) -> Result<Prepared, BenchError> {
    let (trial, entry) = (ctx.trial, &ctx.trial.entry);
    let mut notes = Vec::new();
    let kind = dataset_kind(entry)?;
    let selection = Selection::of(&entry.percentiles);
    if !selection.ignored.is_empty() {
        notes.push(format!(
            "percentile-metrics: {} not reported for TTS (vllm-omni writes no ttft keys)",
            selection.ignored.join(",")
        ));
    }
    let locale = entry.seed_tts_locale.as_deref().unwrap_or("en");
    let ds = load_dataset(settings, trial, kind, locale, &mut notes)?;
    let source = RowSource {
        kind,
        rows: &ds.rows,
        n: trial.step.num_prompts.get() as usize,
        warmups: entry.warmups(&trial.step) as usize,
        seed: entry.seed.unwrap_or(settings.seed),
        prefix: request_id_prefix(entry),
    };
    prepare_rows(settings, ctx, connection, &source, selection, notes)
}

/// Where a step's requests come from: `n` measured and `warmups` warmup requests drawn
/// from `rows` with `seed`, measured ones named `<prefix><i>`.
pub(crate) struct RowSource<'a> {
    pub kind: DatasetKind,
    pub rows: &'a [Row],
    pub n: usize,
    pub warmups: usize,
    pub seed: u64,
    pub prefix: String,
}

/// Prepares one step from `source` (a dataset's rows, or the soak's random texts).
pub(crate) fn prepare_rows(
    settings: &NativeSettings,
    ctx: &BenchContext<'_>,
    connection: ConnectionMode,
    source: &RowSource<'_>,
    selection: Selection,
    mut notes: Vec<String>,
) -> Result<Prepared, BenchError> {
    let (trial, entry) = (ctx.trial, &ctx.trial.entry);
    let (kind, n, w, seed) = (source.kind, source.n, source.warmups, source.seed);
    let locale = entry.seed_tts_locale.as_deref().unwrap_or("en");
    let rows_measured = dataset::select(source.rows.len(), n, seed);
    // vllm bench warms up with `w` copies of its first request (`test_input`).
    let rows_warm = vec![rows_measured.first().copied().unwrap_or(0); w];
    let model = trial.server.model.as_str();
    let template = BodyTemplate::new(model, kind, locale, &entry.raw, entry.extra_body.as_ref());
    let capture = entry.seed_tts_wer_eval();
    let quality_locale: Arc<str> = Arc::from(locale);
    let (measured, warmups) = jobs(
        &template,
        source.rows,
        (&rows_measured, &rows_warm),
        &source.prefix,
        capture.then_some(&quality_locale),
    )?;
    let prompt_tokens = prompt_tokens(settings, source.rows, &rows_measured)?;
    let (load, shape) = load_shape(ctx, n, seed, settings.time_lapse)?;
    let sample_rate = sample_rate(settings, model, &mut notes);
    let token = token(settings, &mut notes);
    let headers = base_headers(token.as_deref())?;
    let endpoint = entry.endpoint.as_deref().unwrap_or("/v1/audio/speech");
    let url = super::endpoint_url(&ctx.base_url, endpoint);
    let limits = settings.limits();
    let target = Arc::new(Target::new(&url, headers, limits, connection)?.capturing(capture));
    if capture {
        notes.push(
            "seed_tts_wer_eval: each measured request's audio is kept under quality/ \
             (WAV + manifest.jsonl)"
                .into(),
        );
    }
    notes.push(format!(
        "load: {n} measured request(s) after {w} warmup(s), {shape}; seed {seed}; POST {url}"
    ));
    Ok(Prepared {
        target,
        warmups,
        measured,
        load,
        sample_rate,
        lapse: settings.time_lapse,
        selection,
        prompt_tokens,
        notes,
    })
}

fn body_bytes(t: &BodyTemplate, row: &Row) -> Result<Bytes, BenchError> {
    let ref_audio = if t.kind == DatasetKind::SeedTts {
        let wav = super::dataset::read_clip(&row.ref_wav)?;
        Some(wav_data_url(&wav))
    } else {
        None
    };
    let body = t.body(row, ref_audio.as_deref());
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(|source| BenchError::Encode {
            what: "a request body",
            source,
        })
}

/// `request_id_prefix` from the entry, else `bench-<8 hex>-` (upstream's shape).
pub(crate) fn request_id_prefix(entry: &dfx_core::plan::BenchEntry) -> String {
    for key in ["request_id_prefix", "request-id-prefix"] {
        if let Some(p) = entry.raw.get(key).and_then(|v| v.as_str()) {
            return p.to_string();
        }
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mix = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
    format!(
        "bench-{:08x}-",
        (mix.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
    )
}

/// The manifest's view of a dataset row: voice-clone rows carry their reference (a row
/// without a transcript or clip has none).
fn quality_row(row: &Row, locale: &Arc<str>) -> QualityRow {
    QualityRow {
        text: row.text.clone(),
        ref_text: (!row.ref_text.is_empty()).then(|| row.ref_text.clone()),
        ref_audio: (!row.ref_wav.as_os_str().is_empty()).then(|| row.ref_wav.clone()),
        locale: locale.clone(),
    }
}
