//! The performance model through the API: determinism for a seed, and deploy-file /
//! stage-override values changing behaviour the way they would on a GPU.

mod common;

use std::time::Duration;

use common::client::{self, PROMPTS, post_stream};
use dfx_sim::SimOptions;
use dfx_sim::vbench::{self, Load};
use serde_json::json;

const CV: &str = "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice";

/// (frames header, chunk plan header, FNV hash of the PCM) per request, in order.
async fn run_sequence(seed: u64) -> Vec<(String, String, u64)> {
    let h = dfx_sim::spawn(SimOptions::new(CV).speed(20.0).seed(seed))
        .await
        .unwrap();
    let c = client::client();
    let mut out = Vec::new();
    for text in &PROMPTS[..6] {
        let m = post_stream(
            &c,
            &format!("{}/v1/audio/speech", h.base_url()),
            &client::custom_voice_body(CV, text),
            Duration::from_secs(20),
        )
        .await;
        let hash = m.bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
        });
        out.push((
            m.header("x-dfx-sim-audio-frames").unwrap(),
            m.header("x-dfx-sim-chunk-frames").unwrap(),
            hash,
        ));
    }
    h.shutdown().await.unwrap();
    out
}

#[tokio::test]
async fn same_seed_same_audio_and_chunking() {
    let a = run_sequence(3).await;
    let b = run_sequence(3).await;
    assert_eq!(a, b);
    let other = run_sequence(4).await;
    assert_ne!(
        a.iter().map(|r| &r.0).collect::<Vec<_>>(),
        other.iter().map(|r| &r.0).collect::<Vec<_>>(),
        "another seed draws other lengths"
    );
}

#[tokio::test]
async fn deploy_chunk_sizes_and_ramp_reach_the_stream() {
    let yaml = "connectors:\n  shm:\n    extra:\n      codec_chunk_frames: 50\n      initial_codec_chunk_frames: 4\n";
    let h = dfx_sim::spawn(SimOptions::new(CV).speed(20.0).deploy_yaml(yaml))
        .await
        .unwrap();
    let url = format!("{}/v1/audio/speech", h.base_url());
    let m = post_stream(
        &client::client(),
        &url,
        &client::custom_voice_body(CV, PROMPTS[8]),
        Duration::from_secs(20),
    )
    .await;
    let plan: Vec<u32> = m
        .header("x-dfx-sim-chunk-frames")
        .unwrap()
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(plan[0], 4);
    assert!(plan[1..plan.len() - 1].iter().all(|&n| n == 50), "{plan:?}");
    // The per-request initial chunk override wins over the deploy file.
    let mut body = client::custom_voice_body(CV, PROMPTS[8]);
    body["initial_codec_chunk_frames"] = json!(10);
    let m = post_stream(&client::client(), &url, &body, Duration::from_secs(20)).await;
    assert!(
        m.header("x-dfx-sim-chunk-frames")
            .unwrap()
            .starts_with("10,50,")
    );
    h.shutdown().await.unwrap();

    let ramp = serde_json::json!({"0": {"codec_chunk_ramp": [4, 8, 16]}});
    let h = dfx_sim::spawn(SimOptions::new(CV).speed(20.0).stage_overrides(ramp))
        .await
        .unwrap();
    let m = post_stream(
        &client::client(),
        &format!("{}/v1/audio/speech", h.base_url()),
        &client::custom_voice_body(CV, PROMPTS[8]),
        Duration::from_secs(20),
    )
    .await;
    assert!(
        m.header("x-dfx-sim-chunk-frames")
            .unwrap()
            .starts_with("4,8,16,25,")
    );
    let frames: usize = m.header("x-dfx-sim-audio-frames").unwrap().parse().unwrap();
    assert_eq!(m.bytes.len(), frames * 3840);
    h.shutdown().await.unwrap();
}

fn load(c: usize) -> Load {
    Load {
        frames: PROMPTS
            .iter()
            .map(|t| (t.len() as f64 * 0.065 * 12.5).round() as u32)
            .collect(),
        concurrency: c,
        prefill_s: 0.021,
        ref_context_frames: 0,
        spread_s: 0.0,
        turnaround_s: 0.001,
    }
}

#[test]
fn stage_limits_change_behaviour_like_on_a_gpu() {
    let engine = |o: serde_json::Value| {
        SimOptions::new(CV)
            .stage_overrides(o)
            .resolve()
            .unwrap()
            .engine
    };
    let stock = SimOptions::new(CV).resolve().unwrap().engine;
    // Forcing code2wav back to one request at a time hurts first-packet latency.
    let serial = engine(json!({"1": {"max_num_seqs": 1}}));
    assert!(
        vbench::run(&serial, &load(4)).median_ttfp_ms()
            > 2.0 * vbench::run(&stock, &load(4)).median_ttfp_ms()
    );
    // Batched decode over many resident requests removes the jump at c = 8.
    let batched = engine(json!({"1": {"max_num_seqs": 64}}));
    assert!(
        vbench::run(&batched, &load(8)).median_ttfp_ms()
            < 0.5 * vbench::run(&stock, &load(8)).median_ttfp_ms()
    );
    // A talker limited to 2 sequences queues the rest: later first packets and less
    // audio per second.
    let narrow = engine(json!({"0": {"max_num_seqs": 2}}));
    let (n8, s8) = (
        vbench::run(&narrow, &load(8)),
        vbench::run(&stock, &load(8)),
    );
    assert!(n8.median_ttfp_ms() > 1.4 * s8.median_ttfp_ms());
    assert!(n8.audio_throughput() < 0.9 * s8.audio_throughput());
    // Code2wav on its own GPU: no contention, lower latency under load.
    let split = engine(json!({"1": {"devices": "1"}}));
    assert!(
        vbench::run(&split, &load(4)).median_rtf() < vbench::run(&stock, &load(4)).median_rtf()
    );
    // A larger first chunk: a later first packet.
    let big_first = engine(json!({"0": {"initial_codec_chunk_frames": 25}}));
    assert!(
        vbench::run(&big_first, &load(1)).median_ttfp_ms()
            > 1.5 * vbench::run(&stock, &load(1)).median_ttfp_ms()
    );
}

#[test]
fn codec_batch_one_makes_ttfp_jump_between_4_and_8() {
    for model in [CV, "Qwen/Qwen3-TTS-12Hz-1.7B-Base"] {
        let cfg = SimOptions::new(model).resolve().unwrap();
        let clone = model.ends_with("Base");
        let mut l = load(1);
        if clone {
            l.prefill_s = cfg.profile.prefill_clone_s;
            l.ref_context_frames = 72;
        }
        let ttfp = |c: usize| {
            vbench::run(
                &cfg.engine,
                &Load {
                    concurrency: c,
                    ..l.clone()
                },
            )
            .median_ttfp_ms()
        };
        let (t4, t8) = (ttfp(4), ttfp(8));
        assert!(
            t8 > 3.0 * t4,
            "{model}: TTFP c=4 {t4:.0} ms, c=8 {t8:.0} ms"
        );
        let thr = |c: usize| {
            vbench::run(
                &cfg.engine,
                &Load {
                    concurrency: c,
                    ..l.clone()
                },
            )
            .audio_throughput()
        };
        assert!(
            thr(32) < 1.25 * thr(8),
            "{model}: throughput saturates at c = 4–8"
        );
    }
}
