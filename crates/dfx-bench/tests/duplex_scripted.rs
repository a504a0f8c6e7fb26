//! The native-duplex runner against a scripted WebSocket server whose reply events leave
//! at known times after the client's commit: warmups + repeats trials of sessions × turns
//! counted on both sides, warmups excluded from the medians, per-turn and per-trial
//! figures from the known timings; a failing server stops the runner with a reason; and
//! against the simulator, a small realtime-paced entry completes.

mod native_support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use base64::Engine as _;
use dfx_bench::native::duplex::result::median;
use dfx_bench::native::{NativeBench, NativeSettings};
use dfx_core::bench::{Bench, BenchContext};
use dfx_core::plan::{BenchEntry, Dialect, DuplexKeys, RunnerKeys, StepKind, Trial};
use native_support::{TrialSpec, trial};
use serde_json::{Value, json};

/// Reply timeline after the commit, ms: created, transcript, first and second audio.
const CREATED_MS: u64 = 100;
const TEXT_MS: u64 = 200;
const AUDIO1_MS: u64 = 300;
const AUDIO2_MS: u64 = 500;

#[derive(Clone, Default)]
struct Script {
    updates: Arc<AtomicU32>,
    commits: Arc<AtomicU32>,
    acks: Arc<AtomicU32>,
    closes: Arc<AtomicU32>,
    /// Appends per commit (the audio of a turn).
    appends: Arc<Mutex<Vec<u32>>>,
    /// `ERROR`: answer the 3rd commit with an error event.
    fail_third: bool,
}

async fn upgrade(State(s): State<Script>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| serve(socket, s))
}

async fn send(ws: &mut WebSocket, v: Value) {
    let _ = ws.send(Message::Text(v.to_string().into())).await;
}

async fn recv(ws: &mut WebSocket) -> Option<Value> {
    loop {
        match ws.recv().await? {
            Ok(Message::Text(t)) => return serde_json::from_str(t.as_str()).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

async fn at(start: tokio::time::Instant, ms: u64) {
    tokio::time::sleep_until(start + Duration::from_millis(ms)).await;
}

/// 0.5 s of 24 kHz PCM16 per audio delta; the cumulative duration in the metadata.
fn audio(rid: &str, cum_ms: u64) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD.encode(vec![0u8; 24_000]);
    json!({"type": "response.audio.delta", "response_id": rid, "delta": b64,
           "sample_rate_hz": 24000, "metadata": {"audio_duration_ms": cum_ms, "model_speak": true}})
}

async fn reply(ws: &mut WebSocket, rid: &str) {
    let t0 = tokio::time::Instant::now();
    at(t0, CREATED_MS).await;
    send(
        ws,
        json!({"type": "response.created", "response": {"id": rid}}),
    )
    .await;
    at(t0, TEXT_MS).await;
    send(
        ws,
        json!({"type": "response.audio_transcript.delta", "response_id": rid, "delta": "Hello"}),
    )
    .await;
    at(t0, AUDIO1_MS).await;
    send(ws, audio(rid, 500)).await;
    at(t0, AUDIO2_MS).await;
    send(ws, audio(rid, 1000)).await;
    send(
        ws,
        json!({"type": "response.done", "response": {"id": rid, "status": "completed",
                    "metadata": {"playback": {"sent_ms": 1000}}}}),
    )
    .await;
}

async fn serve(mut ws: WebSocket, s: Script) {
    let mut appends = 0;
    let mut turn = 0;
    while let Some(v) = recv(&mut ws).await {
        match v["type"].as_str().unwrap_or_default() {
            "session.update" => {
                assert_eq!(v["session"]["extra_body"]["minicpmo45_native_duplex"], true);
                s.updates.fetch_add(1, Ordering::SeqCst);
                send(
                    &mut ws,
                    json!({"type": "session.created", "session": {"id": "s"}}),
                )
                .await;
            }
            "input_audio_buffer.append" => appends += 1,
            "input_audio_buffer.commit" => {
                let n = s.commits.fetch_add(1, Ordering::SeqCst) + 1;
                s.appends.lock().unwrap().push(appends);
                appends = 0;
                turn += 1;
                if s.fail_third && n == 3 {
                    send(
                        &mut ws,
                        json!({"type": "error", "error": {"code": "boom", "message": "scripted"}}),
                    )
                    .await;
                    continue;
                }
                let rid = format!("r{}_{turn}", s.updates.load(Ordering::SeqCst));
                reply(&mut ws, &rid).await;
            }
            "playback.ack" => {
                s.acks.fetch_add(1, Ordering::SeqCst);
                let item = v["item_id"].clone();
                send(
                    &mut ws,
                    json!({"type": "playback.acknowledged",
                                     "event": {"item_id": item, "history_committed": true}}),
                )
                .await;
            }
            "session.close" => {
                s.closes.fetch_add(1, Ordering::SeqCst);
                send(&mut ws, json!({"type": "session.closed"})).await;
            }
            _ => {}
        }
    }
}

fn start(s: Script) -> (tokio::runtime::Runtime, u16) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let app = axum::Router::new()
        .route("/v1/realtime", axum::routing::get(upgrade))
        .with_state(s);
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    rt.spawn(async move { axum::serve(listener, app).await });
    (rt, port)
}

fn duplex_trial(model: &str, raw: Value) -> Trial {
    let mut t = trial(TrialSpec {
        model,
        kind: StepKind::Concurrency {
            max_concurrency: std::num::NonZeroU32::new(2).unwrap(),
        },
        ..TrialSpec::default()
    });
    let mut e: BenchEntry = (*t.entry).clone();
    e.dialect = Dialect::NativeDuplex;
    e.backend = None;
    e.endpoint = None;
    e.dataset_name = None;
    e.raw = raw.as_object().cloned().unwrap();
    let timeout_s = e.raw.get("timeout_s").and_then(|v| v.as_f64());
    e.runner =
        RunnerKeys::NativeDuplex(DuplexKeys::read(&e.raw, timeout_s.unwrap_or(180.0), false));
    let n = e.raw["sessions"].as_u64().unwrap() * e.raw["turns"].as_u64().unwrap();
    t.entry = Arc::new(e);
    t.step.num_prompts = std::num::NonZeroU64::new(n).unwrap();
    t
}

fn run(t: &Trial, port: u16, dir: &std::path::Path) -> dfx_core::bench::BenchOutcome {
    let settings = NativeSettings {
        progress: false,
        ..NativeSettings::default()
    };
    let bench = NativeBench::new(settings);
    bench.supports(&t.entry).unwrap();
    bench.run(&BenchContext {
        trial: t,
        base_url: format!("http://127.0.0.1:{port}"),
        host: "127.0.0.1".into(),
        port,
        out_dir: dir.to_path_buf(),
        hardware: "SIM".into(),
        judge_url: None,
        server_group: None,
    })
}

fn lines(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn near(x: f64, want: f64, tol: f64, what: &str) {
    assert!((x - want).abs() <= tol, "{what}: {x} vs {want} ± {tol}");
}

#[test]
fn sessions_turns_and_repeats_with_known_timings() {
    let s = Script::default();
    let (_rt, port) = start(s.clone());
    let dir = tempfile::tempdir().unwrap();
    let raw = json!({"name": "c2", "workload": "native-duplex-audio", "sessions": 2, "turns": 2,
                     "warmups": 1, "repeats": 2, "realtime_input": false, "timeout_s": 10});
    let t = duplex_trial("openbmb/MiniCPM-o-4_5", raw);
    let o = run(&t, port, dir.path());
    assert_eq!(o.exit, None, "{}", o.log_tail);
    // 3 trials × 2 sessions, each 2 turns of 1.4 s of input in 200 ms appends.
    assert_eq!(s.updates.load(Ordering::SeqCst), 6);
    assert_eq!(s.commits.load(Ordering::SeqCst), 12);
    assert_eq!(s.acks.load(Ordering::SeqCst), 12);
    assert_eq!(s.closes.load(Ordering::SeqCst), 6);
    assert!(s.appends.lock().unwrap().iter().all(|n| *n == 7));
    let recs = lines(dir.path());
    let turns: Vec<&Value> = recs.iter().filter(|r| r["kind"] == "turn").collect();
    assert_eq!(turns.len(), 12);
    assert_eq!(turns.iter().filter(|r| r["warmup"] == true).count(), 4);
    assert_eq!(recs.iter().filter(|r| r["kind"] == "session").count(), 6);
    for r in &turns {
        assert_eq!(r["ok"], true, "{r}");
        near(r["ttft_ms"].as_f64().unwrap(), TEXT_MS as f64, 60.0, "ttft");
        near(
            r["ttfp_ms"].as_f64().unwrap(),
            AUDIO1_MS as f64,
            60.0,
            "ttfp",
        );
        near(
            r["audio_generation_ms"].as_f64().unwrap(),
            AUDIO2_MS as f64,
            60.0,
            "generation",
        );
        assert_eq!(r["audio_duration_ms"], 1000.0);
        near(r["rtf"].as_f64().unwrap(), 0.5, 0.06, "rtf");
    }
    let doc = o.result.unwrap();
    let ms = doc["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 2, "warmups are not kept");
    assert!(ms.iter().all(|m| m["warmup"] == false));
    assert_eq!(ms[0]["trial"], 1);
    for m in ms {
        assert_eq!(m["completed_responses"], 4);
        assert_eq!(m["generated_audio_s"], 4.0);
        let e = m["elapsed_s"].as_f64().unwrap();
        near(
            m["responses_per_s"].as_f64().unwrap(),
            4.0 / e,
            1e-9,
            "responses/s",
        );
        near(
            m["sessions_per_s"].as_f64().unwrap(),
            2.0 / e,
            1e-9,
            "sessions/s",
        );
        near(
            m["audio_seconds_per_s"].as_f64().unwrap(),
            4.0 / e,
            1e-9,
            "audio/s",
        );
    }
    let med = |k: &str| median(ms.iter().map(|m| m[k].as_f64().unwrap()).collect()).unwrap();
    assert_eq!(
        doc["median_responses_per_s"].as_f64().unwrap(),
        med("responses_per_s")
    );
    assert_eq!(doc["median_ttfp_ms"].as_f64().unwrap(), med("mean_ttfp_ms"));
    assert_eq!(doc["median_ttft_ms"].as_f64().unwrap(), med("mean_ttft_ms"));
    near(
        doc["median_ttfp_ms"].as_f64().unwrap(),
        300.0,
        60.0,
        "median ttfp",
    );
    assert_eq!(doc["workload"], "native-duplex-audio");
    assert_eq!(
        (doc["completed"].clone(), doc["num_prompts"].clone()),
        (json!(4), json!(4))
    );
    let all: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("measurements.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        all.as_array().unwrap().len(),
        3,
        "measurements.json keeps the warmup"
    );
}

#[test]
fn a_server_error_stops_the_runner_with_the_reason() {
    let s = Script {
        fail_third: true,
        ..Script::default()
    };
    let (_rt, port) = start(s.clone());
    let dir = tempfile::tempdir().unwrap();
    let raw = json!({"name": "c1", "workload": "native-duplex-audio", "sessions": 1, "turns": 2,
                     "warmups": 1, "repeats": 2, "realtime_input": false, "timeout_s": 5});
    let o = run(
        &duplex_trial("openbmb/MiniCPM-o-4_5", raw),
        port,
        dir.path(),
    );
    let exit = o.exit.unwrap().to_string();
    assert!(
        exit.contains("trial 1 failed") && exit.contains("boom"),
        "{exit}"
    );
    let doc = o.result.unwrap();
    assert_eq!(doc["completed"], 0);
    assert_eq!(doc["error_counts"]["server_error"], 1);
    assert_eq!(
        s.commits.load(Ordering::SeqCst),
        3,
        "stops at the failed trial"
    );
}

#[test]
fn supports_only_the_native_duplex_audio_workload() {
    let bench = NativeBench::new(NativeSettings::default());
    let t = duplex_trial(
        "m",
        json!({"name": "x", "workload": "other", "sessions": 1, "turns": 1, "warmups": 1, "repeats": 2}),
    );
    let why = bench.supports(&t.entry).unwrap_err().to_string();
    assert!(why.contains("native-duplex-audio"), "{why}");
}

#[test]
fn realtime_paced_entry_against_the_simulator() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let model = "openbmb/MiniCPM-o-4_5";
    let sim = rt
        .block_on(dfx_sim::spawn(dfx_sim::SimOptions::new(model).speed(20.0)))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let raw = json!({"name": "c2", "workload": "native-duplex-audio", "sessions": 2, "turns": 1,
                     "warmups": 1, "repeats": 2, "realtime_input": true, "timeout_s": 30});
    let t = duplex_trial(model, raw);
    let started = std::time::Instant::now();
    let o = run(&t, sim.addr.port(), dir.path());
    assert_eq!(o.exit, None, "{}", o.log_tail);
    // Each trial streams 1.4 s of input in real time before its commit.
    assert!(started.elapsed() >= Duration::from_millis(3 * 1400));
    let doc = o.result.unwrap();
    assert_eq!(doc["completed"], 2);
    assert!(doc["median_ttfp_ms"].as_f64().unwrap() > 0.0);
    assert!(doc["median_audio_seconds_per_s"].as_f64().unwrap() > 0.0);
    rt.block_on(sim.shutdown()).unwrap();
}
