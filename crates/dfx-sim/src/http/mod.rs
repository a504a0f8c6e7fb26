//! The HTTP surface (`docs/simulator.md` ("API")): the state every handler shares, the
//! routes, readiness, and the speech handler. The chat (`chat`) and realtime (`realtime`)
//! handlers are its children: one state and one router for every protocol, over the
//! engines in `crate::driver` and `crate::omni`.

pub(crate) mod chat;
pub(crate) mod realtime;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde_json::{Value, json};

use crate::audio::VoiceBuffer;
use crate::driver::SpeechHandle;
use crate::error::ApiError;
use crate::options::SimConfig;
use crate::request::{self, Delivery, Format};
use crate::stats::Stats;
use crate::stream::{ChunkStream, Guard, Render, StreamFaults, WholeBody};
use crate::voices::{self, Registry, Upload};
use crate::{plan, profile};

/// Largest accepted request body (base64 reference audio included).
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// Everything the handlers share.
pub(crate) struct AppState {
    pub cfg: Arc<SimConfig>,
    pub engine: Arc<SpeechHandle>,
    pub stats: Arc<Stats>,
    pub voices: Registry,
    pub voice_buf: Arc<VoiceBuffer>,
    /// `None`: never ready (fault).
    pub ready_at: Option<Instant>,
    pub arrivals: AtomicU64,
    pub crashed: AtomicBool,
    /// Set once, to the in-flight count, when the crash fault triggers.
    pub on_crash: tokio::sync::watch::Sender<Option<usize>>,
    /// Static part of `/sim/info`.
    pub info: Value,
    /// The omni engine thread (omni profiles only).
    pub omni: Option<Arc<crate::omni::OmniHandle>>,
    /// Counters of the realtime sessions (`/v1/realtime`).
    pub realtime: realtime::RealtimeState,
}

impl AppState {
    pub(crate) fn ready(&self) -> bool {
        !self.crashed.load(Ordering::SeqCst) && self.ready_at.is_some_and(|t| Instant::now() >= t)
    }

    pub(crate) fn check_ready(&self) -> Result<(), ApiError> {
        if self.ready() {
            Ok(())
        } else {
            Err(ApiError::unavailable("server is not ready"))
        }
    }

    fn presets(&self) -> &'static [&'static str] {
        self.cfg.profile.voices
    }

    pub(crate) fn crash(&self, inflight: usize) {
        if !self.crashed.swap(true, Ordering::SeqCst) {
            tracing::error!(
                "simulated crash: {inflight} requests in flight (fault crash-at-inflight)"
            );
            self.engine.stop();
            if let Some(o) = &self.omni {
                o.stop();
            }
            let _ = self.on_crash.send(Some(inflight));
        }
    }
}

type St = State<Arc<AppState>>;

/// The router with every route of `docs/simulator.md` ("API"), `/sim/info` and
/// `/sim/stats` included.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    let broken = state.cfg.options.faults.broken_error_envelope;
    let r = Router::new()
        .route("/health", get(health))
        .route("/version", get(version))
        .route("/v1/models", get(models))
        .route("/v1/audio/speech", post(speech))
        .route("/v1/audio/voices", get(list_voices).post(upload_voice))
        .route("/v1/audio/voices/{name}", delete(delete_voice))
        // Omni profiles (crate::omni): chat completions with inlined media.
        .route(
            "/v1/chat/completions",
            post(chat::chat).layer(DefaultBodyLimit::max(chat::MAX_CHAT_BODY_BYTES)),
        )
        .route("/v1/realtime", get(realtime::handler))
        .route("/sim/info", get(info))
        .route("/sim/stats", get(sim_stats))
        .fallback(|| async { ApiError::not_found("Not Found", None) })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    let r = if broken {
        r.layer(axum::middleware::map_response_with_state(
            state.clone(),
            break_envelope,
        ))
    } else {
        r
    };
    r.with_state(state)
}

/// The `broken-error-envelope` fault: an error reply's body becomes `{"detail": message}`.
async fn break_envelope(State(_): St, resp: Response) -> Response {
    if resp.status().as_u16() < 400 {
        return resp;
    }
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let message = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(String::from))
        .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
    (status, axum::Json(json!({ "detail": message }))).into_response()
}

async fn health(State(st): St) -> StatusCode {
    if st.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

async fn version() -> axum::Json<Value> {
    axum::Json(json!({"version": env!("CARGO_PKG_VERSION"), "server": "dfx-perf-sim"}))
}

async fn models(State(st): St) -> Result<axum::Json<Value>, ApiError> {
    st.check_ready()?;
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(axum::Json(json!({"object": "list", "data": [{
        "id": st.cfg.served_name(),
        "object": "model",
        "created": created,
        "owned_by": "vllm-omni",
        "root": st.cfg.options.model,
        "parent": null,
        "max_model_len": st.cfg.omni.as_ref().map_or(4096, |o| o.profile.max_model_len),
    }]})))
}

async fn info(State(st): St) -> axum::Json<Value> {
    let mut v = st.info.clone();
    v["ready"] = json!(st.ready());
    v["crashed"] = json!(st.crashed.load(Ordering::SeqCst));
    axum::Json(v)
}

async fn sim_stats(State(st): St) -> axum::Json<Value> {
    let mut v = json!(st.stats.view(st.engine.snapshot()));
    if let Some(o) = &st.omni {
        v["omni_engine"] = json!(o.snapshot());
    }
    axum::Json(v)
}

async fn list_voices(State(st): St) -> Result<axum::Json<Value>, ApiError> {
    st.check_ready()?;
    Ok(axum::Json(st.voices.list(st.presets())))
}

async fn upload_voice(State(st): St, mut form: Multipart) -> Result<axum::Json<Value>, ApiError> {
    st.check_ready()?;
    let mut up = Upload::default();
    let bad = |e: axum::extract::multipart::MultipartError| {
        ApiError::bad(format!("invalid multipart body: {e}"), None)
    };
    while let Some(field) = form.next_field().await.map_err(bad)? {
        let name = field.name().unwrap_or_default().to_string();
        match name.as_str() {
            "audio_sample" => {
                let mime = field.content_type().map(String::from);
                let data = field.bytes().await.map_err(bad)?;
                if data.len() > voices::MAX_SAMPLE_BYTES {
                    return Err(ApiError::bad(
                        "`audio_sample` is larger than 10 MB",
                        Some("audio_sample"),
                    ));
                }
                up.audio = Some((data.to_vec(), mime));
            }
            "name" | "consent" | "ref_text" | "speaker_description" => {
                let text = field.text().await.map_err(bad)?;
                match name.as_str() {
                    "name" => up.name = Some(text),
                    "consent" => up.consent = Some(text),
                    "ref_text" => up.ref_text = Some(text),
                    _ => up.speaker_description = Some(text),
                }
            }
            _ => {}
        }
    }
    let voice = st.voices.register(up, st.presets())?;
    tracing::info!("voice '{}' registered", voice.name);
    Ok(axum::Json(json!({"success": true, "voice": voice})))
}

async fn delete_voice(State(st): St, Path(name): Path<String>) -> Response {
    if let Err(e) = st.check_ready() {
        return e.into_response();
    }
    if st.voices.delete(&name) {
        axum::Json(
            json!({"success": true, "message": format!("Voice '{name}' deleted successfully")}),
        )
        .into_response()
    } else {
        (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"success": false, "error": format!("Voice '{name}' not found")})),
        )
            .into_response()
    }
}

async fn speech(State(st): St, headers: HeaderMap, body: Bytes) -> Response {
    let arrived = Instant::now();
    let result = speech_inner(&st, &headers, &body, arrived).await;
    respond(&st, result)
}

/// A handler's answer; a refused request (400) is counted and logged at debug level.
pub(crate) fn respond(st: &AppState, result: Result<Response, ApiError>) -> Response {
    match result {
        Ok(r) => r,
        Err(e) => {
            if e.status == StatusCode::BAD_REQUEST {
                st.stats.rejected.fetch_add(1, Ordering::Relaxed);
                tracing::debug!("400: {}", e.message);
            }
            e.into_response()
        }
    }
}

async fn speech_inner(
    st: &Arc<AppState>,
    headers: &HeaderMap,
    body: &[u8],
    arrived: Instant,
) -> Result<Response, ApiError> {
    st.check_ready()?;
    let req = {
        let names = st.cfg.model_names();
        let lookup = |v: &str| st.voices.lookup(v);
        let ctx = request::Context {
            profile: &st.cfg.profile,
            model_names: &names,
            uploaded: &lookup,
        };
        request::parse(body, &ctx)?
    };
    st.stats.speech_requests.fetch_add(1, Ordering::Relaxed);
    let index = st.arrivals.fetch_add(1, Ordering::SeqCst);
    let faults = &st.cfg.options.faults;
    if let Some(share) = faults.error500
        && plan::draws_500(st.cfg.options.seed, index, share)
    {
        st.stats.injected_500.fetch_add(1, Ordering::Relaxed);
        return Err(ApiError::internal(
            "simulated internal server error (fault error500)",
        ));
    }
    let (audio, job) = plan::plan(&st.cfg, &req, st.voice_buf.word_count());
    let inflight = st.stats.enter();
    let (id, rx) = st.engine.submit(job, arrived);
    let guard = Guard {
        id,
        engine: st.engine.clone(),
        stats: st.stats.clone(),
        finished: false,
    };
    if faults.crash_at_inflight.is_some_and(|n| inflight >= n) {
        st.crash(inflight);
    }
    let render = Render {
        voice: st.voice_buf.clone(),
        plan: audio,
        format: req.format,
        odd_byte: faults.odd_bytes,
    };
    let mut resp = match req.delivery {
        Delivery::Audio | Delivery::Sse => {
            let sse = req.delivery == Delivery::Sse;
            let faults = StreamFaults {
                stall_after: faults.stall_after_chunks,
                truncate_after: faults.truncate_after_chunks,
            };
            let stream = ChunkStream::new(rx, render, guard, faults, sse);
            let ctype = match (sse, req.format) {
                (true, _) => "text/event-stream",
                (false, Format::Pcm) => "audio/pcm",
                (false, Format::Wav) => "audio/wav",
            };
            let mut r = Response::new(Body::from_stream(stream));
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
            r
        }
        Delivery::Whole => whole(rx, render, guard).await?,
    };
    let h = resp.headers_mut();
    let num = |n: u64| HeaderValue::from_str(&n.to_string()).expect("digits are a valid header");
    h.insert("x-vllm-omni-output-tokens", num(u64::from(audio.frames)));
    h.insert("x-dfx-sim-audio-frames", num(u64::from(audio.frames)));
    h.insert(
        "x-dfx-sim-sample-rate",
        num(u64::from(st.cfg.profile.sample_rate)),
    );
    h.insert(
        "x-dfx-sim-leading-silence-ms",
        num(audio.leading_silence_samples * 1000 / u64::from(st.cfg.profile.sample_rate)),
    );
    let plan = st
        .cfg
        .engine
        .chunking
        .plan(audio.frames, req.initial_chunk_frames);
    let plan: Vec<String> = plan.iter().map(u32::to_string).collect();
    if let Ok(v) = HeaderValue::from_str(&plan.join(",")) {
        h.insert("x-dfx-sim-chunk-frames", v);
    }
    if let Some(rid) = headers.get("x-request-id") {
        h.insert("x-request-id", rid.clone());
    }
    Ok(resp)
}

/// Non-streaming: wait for the last chunk, then send the clip rendered in pieces.
async fn whole(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<crate::engine::Emission>,
    render: Render,
    guard: Guard,
) -> Result<Response, ApiError> {
    loop {
        match rx.recv().await {
            Some(e) if e.last => break,
            Some(_) => {}
            None => {
                return Err(ApiError::internal(
                    "server stopped before the audio was complete",
                ));
            }
        }
    }
    let len = render.total_bytes();
    let ctype = if render.format == Format::Wav {
        "audio/wav"
    } else {
        "audio/pcm"
    };
    let body = WholeBody {
        render,
        guard,
        next_sample: 0,
        header_done: false,
        tail_done: false,
    };
    let mut r = Response::new(Body::from_stream(body));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    r.headers_mut().insert(
        header::CONTENT_LENGTH,
        HeaderValue::from_str(&len.to_string()).expect("digits"),
    );
    Ok(r)
}

/// `/sim/info` content fixed at start-up.
pub(crate) fn static_info(cfg: &SimConfig, child_pid: Option<u32>) -> Value {
    let o = &cfg.options;
    json!({
        "server": "dfx-perf-sim",
        "version": env!("CARGO_PKG_VERSION"),
        "pid": std::process::id(),
        "argv": o.argv,
        "model": o.model,
        "served_model_name": cfg.served_name(),
        "host": o.host,
        "port": o.port,
        "omni": o.omni,
        "deploy_config": o.deploy_config,
        "stage_overrides": o.stage_overrides,
        "stage_init_timeout": o.stage_init_timeout,
        "init_timeout": o.init_timeout,
        "extra_flags": o.extra_flags,
        "speed": o.speed,
        "seed": o.seed,
        "faults": o.faults,
        "profile": cfg.profile,
        "profiles": profile::NAMES,
        "deploy": cfg.deploy,
        "engine": cfg.engine,
        "omni_model": cfg.omni,
        "omni_profiles": crate::omni::profile::NAMES,
        "child_pid": child_pid,
        "limits": {
            "max_input_chars": request::MAX_INPUT_CHARS,
            "speed_range": request::SPEED_RANGE,
            "max_voices": voices::MAX_VOICES,
        },
    })
}
