//! Each contract scenario against a scripted loopback server: the right replies pass; a
//! wrong status, a broken error envelope, a server that dies after a client disconnects
//! and one that keeps deleted voices each fail the scenarios they break.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Multipart, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, post};
use base64::Engine as _;
use serde_json::{Value, json};

use dfx_bench::native::contract::{expected, http::Target, run_all};
use dfx_core::contract::SCENARIOS;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Good,
    WrongStatus,
    BrokenEnvelope,
    DiesAfterDisconnect,
    KeepsDeleted,
}

struct St {
    mode: Mode,
    dead: AtomicBool,
    voices: Mutex<BTreeSet<String>>,
}

type S = State<Arc<St>>;

fn error(st: &St, msg: &str) -> Response {
    match st.mode {
        Mode::BrokenEnvelope => (StatusCode::BAD_REQUEST, axum::Json(json!({"detail": msg}))).into_response(),
        Mode::WrongStatus => (
            StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(json!({"error": {"message": msg, "type": "x", "param": null, "code": 422}})),
        )
            .into_response(),
        _ => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": {"message": msg, "type": "BadRequestError", "param": null, "code": 400}})),
        )
            .into_response(),
    }
}

/// Sets `dead` when a stream is dropped before its end (the client went away).
struct OnDrop(Arc<St>, bool);
impl Drop for OnDrop {
    fn drop(&mut self) {
        if !self.1 && self.0.mode == Mode::DiesAfterDisconnect {
            self.0.dead.store(true, Ordering::SeqCst);
        }
    }
}

fn stream(st: Arc<St>) -> Response {
    let guard = OnDrop(st, false);
    let s = futures_util::stream::unfold((0u32, guard), |(i, mut g)| async move {
        if i == 50 {
            g.1 = true;
            drop(g);
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        Some((Ok::<_, Infallible>(Bytes::from(vec![0u8; 960])), (i + 1, g)))
    });
    let mut r = Response::new(Body::from_stream(s));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, "audio/pcm".parse().unwrap());
    r
}

fn check(st: &St, v: &Value) -> Result<bool, String> {
    let input = v["input"].as_str().ok_or("input must be a string")?;
    if input.trim().is_empty() || input.len() > 4096 {
        return Err("bad input length".into());
    }
    if let Some(t) = v["task_type"]
        .as_str()
        .filter(|t| !["Base", "CustomVoice", "VoiceDesign"].contains(t))
    {
        return Err(format!("task_type {t}"));
    }
    if let Some(f) = v["response_format"]
        .as_str()
        .filter(|f| !["wav", "pcm"].contains(f))
    {
        return Err(format!("response_format {f}"));
    }
    if let Some(voice) = v["voice"].as_str()
        && !st.voices.lock().unwrap().contains(voice)
    {
        return Err(format!("Invalid voice '{voice}'"));
    }
    if let Some(a) = v["ref_audio"].as_str() {
        let payload = a
            .strip_prefix("data:audio/wav;base64,")
            .ok_or("ref_audio must be a data URL")?;
        base64::engine::general_purpose::STANDARD
            .decode(payload)
            .map_err(|e| format!("bad base64: {e}"))?;
    }
    Ok(v["stream"] == true)
}

async fn speech(State(st): S, body: Bytes) -> Response {
    if st.dead.load(Ordering::SeqCst) {
        return (StatusCode::INTERNAL_SERVER_ERROR, "engine dead").into_response();
    }
    let v: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return error(&st, &format!("Invalid JSON: {e}")),
    };
    match check(&st, &v) {
        Err(e) => error(&st, &e),
        Ok(true) => stream(st.clone()),
        Ok(false) => {
            let wav = dfx_bench::native::contract::http::reference_wav();
            ([(header::CONTENT_TYPE, "audio/wav")], wav).into_response()
        }
    }
}

async fn list(State(st): S) -> axum::Json<Value> {
    axum::Json(json!({"voices": st.voices.lock().unwrap().iter().collect::<Vec<_>>()}))
}

async fn upload(State(st): S, mut form: Multipart) -> Response {
    let mut name = None;
    while let Ok(Some(f)) = form.next_field().await {
        if f.name() == Some("name") {
            name = f.text().await.ok();
        }
    }
    let Some(name) = name else {
        return error(&st, "name is required");
    };
    st.voices.lock().unwrap().insert(name.clone());
    axum::Json(json!({"success": true, "voice": {"name": name}})).into_response()
}

async fn remove(State(st): S, Path(name): Path<String>) -> Response {
    let had = if st.mode == Mode::KeepsDeleted {
        st.voices.lock().unwrap().contains(&name)
    } else {
        st.voices.lock().unwrap().remove(&name)
    };
    if had {
        axum::Json(json!({"success": true})).into_response()
    } else {
        (StatusCode::NOT_FOUND, axum::Json(json!({"success": false}))).into_response()
    }
}

/// Serves `mode` on a loopback port (own thread and runtime) and returns its URL.
fn serve(mode: Mode) -> String {
    let st = Arc::new(St {
        mode,
        dead: AtomicBool::new(false),
        voices: Mutex::new(BTreeSet::new()),
    });
    let app = Router::new()
        .route("/v1/audio/speech", post(speech))
        .route("/v1/audio/voices", post(upload).get(list))
        .route("/v1/audio/voices/{name}", delete(remove))
        .with_state(st);
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    url
}

/// The names of the scenarios that failed against `mode`.
fn failed(mode: Mode) -> Vec<&'static str> {
    let t = Target {
        base_url: serve(mode),
        model: "Qwen/Qwen3-TTS-12Hz-1.7B-Base".into(),
        timeout: Duration::from_secs(10),
    };
    let all: Vec<_> = SCENARIOS.iter().collect();
    let out = run_all(&t, &all).unwrap();
    assert_eq!(out.len(), SCENARIOS.len());
    assert!(
        out.iter().all(|o| o.skipped.is_none()),
        "a Base model runs every scenario"
    );
    out.iter()
        .filter(|o| !o.passed)
        .map(|o| o.scenario)
        .collect()
}

fn envelope_scenarios() -> Vec<&'static str> {
    SCENARIOS
        .iter()
        .map(|s| s.name)
        .filter(|n| expected(n).contains("error envelope"))
        .collect()
}

#[test]
fn every_scenario_passes_against_the_right_replies() {
    assert_eq!(failed(Mode::Good), Vec::<&str>::new());
}

#[test]
fn a_wrong_status_or_a_broken_envelope_fails_every_error_scenario() {
    let want = envelope_scenarios();
    assert_eq!(want.len(), 10, "{want:?}");
    assert_eq!(failed(Mode::WrongStatus), want);
    assert_eq!(failed(Mode::BrokenEnvelope), want);
}

#[test]
fn a_server_hurt_by_a_disconnect_fails_that_scenario() {
    let f = failed(Mode::DiesAfterDisconnect);
    assert!(f.contains(&"disconnect_mid_stream"), "{f:?}");
}

#[test]
fn a_voice_that_outlives_its_delete_fails_the_lifecycle() {
    assert_eq!(failed(Mode::KeepsDeleted), ["voice_lifecycle"]);
}
