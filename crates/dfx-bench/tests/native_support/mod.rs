//! Test support for the native bench: an in-process axum server with a scripted timeline
//! (the text of each request selects its behaviour) and a trial builder.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use dfx_core::plan::{
    BenchEntry, Dialect, GoodputSpec, LoadSpec, PercentileKeys, SourceRef, StepKind, SweepStep,
    Trial,
};
use dfx_core::server::{ServeArgs, ServerSpec, ServerType};
use serde_json::{Map, Value};

/// Scripted timing: first chunk after this delay…
pub(crate) const FIRST_DELAY: Duration = Duration::from_millis(100);
/// …then one chunk every this…
pub(crate) const CHUNK_GAP: Duration = Duration::from_millis(50);
/// …of 0.1 s of 24 kHz mono s16 audio.
pub(crate) const CHUNK_BYTES: usize = 4800;
/// Chunks of a normal stream (0.5 s of audio).
pub(crate) const CHUNKS: usize = 5;
/// Extra pause after the 2nd chunk of a `GAP` stream.
pub(crate) const GAP_PAUSE: Duration = Duration::from_millis(600);

/// A request as the server received it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub headers: HeaderMap,
    pub body: Map<String, Value>,
}

/// The running scripted server.
pub(crate) struct Scripted {
    pub base_url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Server-side first-chunk delay (handler entry → first chunk handed to hyper) by
    /// `x-request-id`, also served as JSON at `GET /timings`.
    pub timings: Timings,
    _rt: tokio::runtime::Runtime,
}

/// `n` samples of a tone (amplitude 8000) or of silence, as s16le bytes.
pub(crate) fn pcm(n_samples: usize, loud: bool, phase0: usize) -> Vec<u8> {
    (0..n_samples)
        .flat_map(|i| {
            let s = if loud {
                (8000.0 * (((i + phase0) as f64) * 0.3).sin()) as i16
            } else {
                0
            };
            s.to_le_bytes()
        })
        .collect()
}

/// The stream plan for a text: (delay before the piece, bytes). `varied` streams have
/// 2 + len/25 chunks (a realistic spread of lengths) instead of [`CHUNKS`].
fn plan(text: &str, varied: bool) -> Vec<(Duration, Vec<u8>)> {
    let samples = CHUNK_BYTES / 2;
    let chunk = |i: usize, loud: bool| pcm(samples, loud, i * samples);
    let mut p: Vec<(Duration, Vec<u8>)> = Vec::new();
    if text.contains("EMPTY") {
        return p;
    }
    if text.contains("RIFF") {
        let mut b = b"RIFF\x24\x00\x00\x00WAVEfmt ".to_vec();
        b.extend(vec![0u8; 4000]);
        return vec![(FIRST_DELAY, b)];
    }
    if text.contains("HUGE") {
        return (0..5)
            .map(|i| {
                (
                    if i == 0 { FIRST_DELAY } else { CHUNK_GAP },
                    vec![1u8; 48_000],
                )
            })
            .collect();
    }
    if text.contains("SLOW") {
        return (0..30)
            .map(|i| (Duration::from_millis(100), chunk(i, true)[..480].to_vec()))
            .collect();
    }
    let chunks = if varied { 2 + text.len() / 25 } else { CHUNKS };
    for i in 0..chunks {
        let mut delay = if i == 0 { FIRST_DELAY } else { CHUNK_GAP };
        if text.contains("GAP") && i == 2 {
            delay += GAP_PAUSE;
        }
        if text.contains("STALL") && i == 1 {
            delay = Duration::from_secs(3);
        }
        let loud = !(text.contains("SILENT") && i < 2);
        p.push((delay, chunk(i, loud)));
    }
    p
}

/// Server-side first-chunk delays by request id.
pub(crate) type Timings = Arc<Mutex<std::collections::HashMap<String, f64>>>;

async fn speech(
    seen: Arc<Mutex<Vec<Seen>>>,
    timings: Timings,
    varied: bool,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = std::time::Instant::now();
    let id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let body: Map<String, Value> = serde_json::from_slice(&body).unwrap_or_default();
    let text = body
        .get("input")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    seen.lock().unwrap().push(Seen { headers, body });
    if text.contains("FAIL") {
        return (StatusCode::INTERNAL_SERVER_ERROR, "Internal Fake Error").into_response();
    }
    let state = (plan(&text, varied).into_iter(), id, timings);
    let stream = futures_util::stream::unfold(state, move |(mut it, id, timings)| async move {
        let (delay, bytes) = it.next()?;
        tokio::time::sleep(delay).await;
        if let Some(id) = &id {
            let mut t = timings.lock().unwrap();
            if !t.contains_key(id) {
                t.insert(id.clone(), received.elapsed().as_secs_f64());
            }
        }
        Some((
            Ok::<_, std::io::Error>(Bytes::from(bytes)),
            (it, id, timings),
        ))
    });
    Response::builder()
        .header("content-type", "audio/pcm")
        .body(Body::from_stream(stream))
        .unwrap()
}

impl Scripted {
    /// Starts the server on an ephemeral loopback port, on its own runtime.
    pub(crate) fn start() -> Scripted {
        Scripted::start_with(false, 1)
    }

    /// Starts the server with `workers` runtime threads; `varied` stream lengths.
    pub(crate) fn start_with(varied: bool, workers: usize) -> Scripted {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let timings: Timings = Arc::default();
        let (s2, t2, t3) = (seen.clone(), timings.clone(), timings.clone());
        let app = axum::Router::new()
            .route(
                "/v1/audio/speech",
                axum::routing::post(move |h: HeaderMap, b: Bytes| {
                    speech(s2.clone(), t2.clone(), varied, h, b)
                }),
            )
            .route(
                "/timings",
                axum::routing::get(move || {
                    let t = t3.lock().unwrap().clone();
                    async move { axum::Json(t) }
                }),
            );
        rt.spawn(async move { axum::serve(listener, app).await });
        Scripted {
            base_url: format!("http://{addr}"),
            seen,
            timings,
            _rt: rt,
        }
    }
}

/// Writes `<dir>/en/meta.lst` with the given texts (seed-tts-text rows).
pub(crate) fn text_dataset(dir: &Path, texts: &[&str]) {
    std::fs::create_dir_all(dir.join("en")).unwrap();
    let lines: String = texts
        .iter()
        .enumerate()
        .map(|(i, t)| format!("row{i}|||{t}\n"))
        .collect();
    std::fs::write(dir.join("en/meta.lst"), lines).unwrap();
}

/// What a test trial varies.
pub(crate) struct TrialSpec<'a> {
    pub dataset_name: &'a str,
    pub dataset_path: &'a str,
    pub config_file: PathBuf,
    pub kind: StepKind,
    pub num_prompts: u64,
    pub num_warmups: Option<u32>,
    pub extra_body: Option<Value>,
    pub burstiness: Option<f64>,
    pub percentile_metrics: Option<&'a str>,
    pub metric_percentiles: Option<&'a str>,
    /// The entry's `goodput`, as written.
    pub goodput: Option<&'a str>,
    pub model: &'a str,
    /// Load shape, open-loop cap and saturation gate of the entry.
    pub load: LoadSpec,
}

impl Default for TrialSpec<'_> {
    fn default() -> Self {
        TrialSpec {
            dataset_name: "seed-tts-text",
            dataset_path: "ds",
            config_file: PathBuf::from("perf-configs/test.json"),
            kind: StepKind::Concurrency {
                max_concurrency: std::num::NonZeroU32::new(2).unwrap(),
            },
            num_prompts: 3,
            num_warmups: Some(0),
            extra_body: None,
            burstiness: None,
            percentile_metrics: Some("ttft,e2el,audio_rtf,audio_ttfp,audio_duration"),
            metric_percentiles: None,
            goodput: None,
            model: "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice",
            load: LoadSpec::default(),
        }
    }
}

/// A trial as the plan would hold it.
pub(crate) fn trial(s: TrialSpec<'_>) -> Trial {
    let extra_body = s.extra_body.and_then(|v| v.as_object().cloned());
    let entry = BenchEntry {
        index: 0,
        suffix: "t".into(),
        dialect: Dialect::Omni,
        dataset_name: Some(s.dataset_name.into()),
        backend: Some("openai-audio-speech".into()),
        endpoint: Some("/v1/audio/speech".into()),
        dataset_path: Some(s.dataset_path.into()),
        seed_tts_locale: Some("en".into()),
        percentiles: PercentileKeys::parse(s.percentile_metrics, s.metric_percentiles)
            .expect("valid percentile keys"),
        goodput: s
            .goodput
            .map(|g| GoodputSpec::parse(&Value::from(g)).expect("valid goodput")),
        extra_body,
        num_warmups: s.num_warmups,
        burstiness: s.burstiness,
        seed: None,
        task: None,
        eval_phase: None,
        name: None,
        trust_remote_code: false,
        raw: Map::new(),
        case: Default::default(),
        connection: None,
        repeats: None,
        capacity: None,
        load: s.load,
        runner: Default::default(),
        gates: Default::default(),
    };
    let label = match s.kind {
        StepKind::Concurrency { max_concurrency } => format!("c{max_concurrency}"),
        StepKind::RequestRate { request_rate } => format!("qps{request_rate}"),
    };
    Trial {
        name: format!("test_native::t::{label}"),
        test_name: "test_native".into(),
        marks: vec![],
        hardware_marks: vec![],
        source: SourceRef {
            file: s.config_file,
            case_index: 0,
            raw_entry_index: 0,
        },
        server: Arc::new(ServerSpec {
            server_type: ServerType::VllmOmni,
            model: s.model.into(),
            deploy: None,
            stage_overrides: None,
            serve_args: ServeArgs::default(),
            extra_cli_args: vec![],
            use_omni: true,
            default_timeouts: true,
            env: BTreeMap::new(),
            ready_timeout: None,
            judge: None,
        }),
        entry: Arc::new(entry),
        step: SweepStep {
            kind: s.kind,
            index: 0,
            num_prompts: std::num::NonZeroU64::new(s.num_prompts).unwrap(),
            label,
        },
        thresholds: Default::default(),
        unsupported: None,
    }
}

/// The records written to `records.jsonl`.
pub(crate) fn read_records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The bench context of `trial` against `server`, writing into `out`.
pub(crate) fn bench_ctx<'a>(
    trial: &'a Trial,
    server: &Scripted,
    out: &Path,
) -> dfx_core::bench::BenchContext<'a> {
    let hostport = server.base_url.trim_start_matches("http://");
    let (host, port) = hostport.rsplit_once(':').unwrap();
    dfx_core::bench::BenchContext {
        trial,
        base_url: server.base_url.clone(),
        host: host.to_string(),
        port: port.parse().unwrap(),
        out_dir: out.to_path_buf(),
        hardware: "SIM".into(),
        judge_url: None,
        server_group: None,
    }
}

/// The measured records of `dir`'s `records.jsonl`, by index.
pub(crate) fn measured_records(dir: &Path) -> Vec<Value> {
    let mut m: Vec<Value> = read_records(dir)
        .into_iter()
        .filter(|r| r["warmup"] == false)
        .collect();
    m.sort_by_key(|r| r["index"].as_u64());
    m
}

/// The context of a step against a simulator at `base_url` (loopback `port`), writing to
/// `out` (created).
pub(crate) fn sim_context<'a>(
    trial: &'a Trial,
    base_url: String,
    port: u16,
    out: &Path,
) -> dfx_core::bench::BenchContext<'a> {
    std::fs::create_dir_all(out).unwrap();
    dfx_core::bench::BenchContext {
        trial,
        base_url,
        host: "127.0.0.1".into(),
        port,
        out_dir: out.to_path_buf(),
        hardware: "SIM".into(),
        judge_url: None,
        server_group: None,
    }
}

/// Native bench settings for a test: no progress bar, no auth token.
pub(crate) fn quiet_settings() -> dfx_bench::native::NativeSettings {
    dfx_bench::native::NativeSettings {
        auth_token_env: None,
        progress: false,
        ..Default::default()
    }
}

/// The simulator serving `model` at `speed`, in process, on a runtime of its own (keep
/// the runtime alive as long as the simulator).
pub(crate) fn spawn_sim(model: &str, speed: f64) -> (tokio::runtime::Runtime, dfx_sim::SimHandle) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let sim = rt
        .block_on(dfx_sim::spawn(dfx_sim::SimOptions::new(model).speed(speed)))
        .unwrap();
    (rt, sim)
}

/// `<dir>/en/meta.lst` with `n` seed-tts rows and their 16 kHz reference clips (0.1 s).
pub(crate) fn seed_tts(dir: &Path, n: usize) {
    let en = dir.join("en");
    std::fs::create_dir_all(en.join("wavs")).unwrap();
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut meta = String::new();
    for i in 0..n {
        let path = en.join(format!("wavs/r{i}.wav"));
        let mut w = hound::WavWriter::create(&path, spec).unwrap();
        for k in 0..1600 {
            w.write_sample(((k as f64 * 0.2).sin() * 5000.0) as i16)
                .unwrap();
        }
        w.finalize().unwrap();
        meta.push_str(&format!(
            "r{i}|reference {i}|wavs/r{i}.wav|Sentence number {i} is spoken here.\n"
        ));
    }
    std::fs::write(en.join("meta.lst"), meta).unwrap();
}

/// `t` as a realtime entry of `backend` at `endpoint` with the runner keys `raw`.
pub(crate) fn realtime(mut t: Trial, backend: &str, endpoint: &str, raw: Value) -> Trial {
    let mut e: BenchEntry = (*t.entry).clone();
    e.backend = Some(backend.into());
    e.endpoint = Some(endpoint.into());
    e.raw = raw.as_object().cloned().unwrap_or_default();
    // As the loader types it (`ResultGates`).
    e.gates.expected_duplex_turns = raw
        .get("expected_duplex_audio_turns_per_session")
        .and_then(Value::as_u64);
    t.entry = Arc::new(e);
    t
}
