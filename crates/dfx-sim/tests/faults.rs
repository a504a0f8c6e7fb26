//! Every fault of `docs/simulator.md` ("Faults"), switched on in-process (the
//! process-level ones — exit status, SIGTERM, forked child — are in `process.rs`).

mod common;

use std::time::{Duration, Instant};

use common::client::{self, post_stream};
use dfx_sim::{SimError, SimOptions};
use serde_json::{Value, json};

const CV: &str = "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice";

fn opts(faults: &str) -> SimOptions {
    SimOptions::new(CV).speed(20.0).fault(faults).unwrap()
}

fn body(text: &str) -> Value {
    client::custom_voice_body(CV, text)
}

fn url(h: &dfx_sim::SimHandle) -> String {
    format!("{}/v1/audio/speech", h.base_url())
}

const LONG: &str = "When the train finally pulled into the station, the platform was already crowded with tired travellers waiting to go home.";

#[tokio::test]
async fn error500_hits_a_seeded_share() {
    let h = dfx_sim::spawn(opts("error500=0.3").seed(5)).await.unwrap();
    let c = client::client();
    let mut statuses = Vec::new();
    for i in 0..40 {
        let m = post_stream(
            &c,
            &url(&h),
            &body(&format!("Request number {i}.")),
            Duration::from_secs(20),
        )
        .await;
        if m.status == 500 {
            let v: Value = serde_json::from_slice(&m.bytes).unwrap();
            assert_eq!(v["error"]["code"], 500);
        }
        statuses.push(m.status);
    }
    let n500 = statuses.iter().filter(|s| **s == 500).count();
    assert!((5..=20).contains(&n500), "{n500} of 40");
    assert!(statuses.iter().all(|s| *s == 200 || *s == 500));
    h.shutdown().await.unwrap();
    // Same seed, same order: the same requests fail.
    let h = dfx_sim::spawn(opts("error500=0.3").seed(5)).await.unwrap();
    let mut again = Vec::new();
    for i in 0..40 {
        let m = post_stream(
            &c,
            &url(&h),
            &body(&format!("Request number {i}.")),
            Duration::from_secs(20),
        )
        .await;
        again.push(m.status);
    }
    assert_eq!(statuses, again);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn stall_keeps_the_connection_open_without_bytes() {
    let h = dfx_sim::spawn(opts("stall-after-chunks=2")).await.unwrap();
    let m = post_stream(
        &client::client(),
        &url(&h),
        &body(LONG),
        Duration::from_millis(1500),
    )
    .await;
    assert_eq!(m.status, 200);
    assert_eq!(m.error.as_deref(), Some("timeout reading the body"));
    // Two chunks (1 + 25 frames) arrived, then nothing.
    assert_eq!(m.bytes.len(), 26 * 3840);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn truncate_aborts_the_stream() {
    let h = dfx_sim::spawn(opts("truncate-after-chunks=2"))
        .await
        .unwrap();
    let m = post_stream(
        &client::client(),
        &url(&h),
        &body(LONG),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(m.status, 200);
    assert!(
        m.error.is_some(),
        "a truncated chunked body is a transport error"
    );
    assert_eq!(m.bytes.len(), 26 * 3840);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn odd_bytes_adds_one_byte() {
    let h = dfx_sim::spawn(opts("odd-bytes")).await.unwrap();
    let m = post_stream(
        &client::client(),
        &url(&h),
        &body(LONG),
        Duration::from_secs(20),
    )
    .await;
    let frames: usize = m.header("x-dfx-sim-audio-frames").unwrap().parse().unwrap();
    assert_eq!(m.bytes.len(), frames * 3840 + 1);
    assert_eq!(m.bytes.len() % 2, 1);
    h.shutdown().await.unwrap();
}

async fn lone_e2el(o: SimOptions) -> f64 {
    let h = dfx_sim::spawn(o).await.unwrap();
    let c = client::client();
    let mut total = 0.0;
    for text in &client::PROMPTS[..3] {
        let m = post_stream(&c, &url(&h), &body(text), Duration::from_secs(20)).await;
        total += m.e2el.as_secs_f64();
    }
    h.shutdown().await.unwrap();
    total
}

/// Real time: at speed 2 (not 10) the requests last long enough that a loaded CI runner's
/// scheduling jitter (a few ms per request) stays small against the 1.5x stretch.
#[tokio::test]
async fn slowdown_stretches_service_times() {
    let base = lone_e2el(SimOptions::new(CV).speed(2.0)).await;
    let slow = lone_e2el(
        SimOptions::new(CV)
            .speed(2.0)
            .fault("slowdown=1.5")
            .unwrap(),
    )
    .await;
    let ratio = slow / base;
    assert!((1.3..1.7).contains(&ratio), "slow/base = {ratio}");
}

#[tokio::test]
async fn crash_at_inflight_stops_the_server() {
    let h = dfx_sim::spawn(opts("crash-at-inflight=3").speed(2.0))
        .await
        .unwrap();
    let c = client::client();
    let u = url(&h);
    let mut reqs = Vec::new();
    for i in 0..3 {
        let (c, u) = (c.clone(), u.clone());
        reqs.push(tokio::spawn(async move {
            post_stream(
                &c,
                &u,
                &body(&format!("{LONG} {i}")),
                Duration::from_secs(20),
            )
            .await
        }));
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let end = tokio::time::timeout(Duration::from_secs(10), h.join())
        .await
        .expect("server ended");
    assert!(
        matches!(end, Err(SimError::Crashed { inflight: 3 })),
        "{end:?}"
    );
    for r in reqs {
        let m = r.await.unwrap();
        assert!(
            m.error.is_some() || m.status != 200,
            "no request completes normally: {m:?}"
        );
    }
}

#[tokio::test]
async fn readiness_faults() {
    let c = client::client();
    let h = dfx_sim::spawn(opts("never-ready")).await.unwrap();
    for _ in 0..3 {
        let r = c
            .get(format!("{}/health", h.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = c.post(url(&h)).json(&body("hi")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    h.shutdown().await.unwrap();

    let start = Instant::now();
    let h = dfx_sim::spawn(opts("ready-after=0.6")).await.unwrap();
    let health = || c.get(format!("{}/health", h.base_url())).send();
    assert_eq!(health().await.unwrap().status(), 503);
    loop {
        if health().await.unwrap().status() == 200 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(start.elapsed() >= Duration::from_millis(600));
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn exit_at_startup_is_reported() {
    match dfx_sim::spawn(opts("exit-at-startup=7")).await {
        Err(e @ SimError::ExitAtStartup(7)) => assert_eq!(e.exit_status(), 7),
        other => panic!("{other:?}"),
    }
    // Bad options surface the same way, before anything listens.
    let bad = SimOptions::new(CV).stage_overrides(json!({"1": {"max_num_seqs": "x"}}));
    let e = dfx_sim::spawn(bad).await.unwrap_err();
    assert_eq!(e.exit_status(), 2);
    assert!(e.to_string().contains("max_num_seqs"), "{e}");
}
