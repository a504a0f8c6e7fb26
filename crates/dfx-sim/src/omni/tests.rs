//! Unit tests of the omni family: media headers and tokens, request validation, the
//! engine's stage behaviour.

use serde_json::{Value, json};

use super::engine::{OmniEngine, OmniEngineConfig, OmniJob, OmniOutput};
use super::fixtures;
use super::media::{self, MediaError, MediaInfo};
use super::profile::{self, OmniProfile};
use super::request::{self, ChatRequest};
use super::vbench::{self, Load};
use crate::engine::secs;

fn qwen() -> OmniProfile {
    profile::by_name("qwen3-omni-30b-a3b-instruct").unwrap()
}

fn cfg(async_chunk: bool) -> OmniEngineConfig {
    let p = qwen();
    OmniEngineConfig {
        thinker: p.thinker,
        talker: p.talker,
        code2wav: p.code2wav,
        async_chunk,
        shared_gpu: true,
        slowdown: 1.0,
    }
}

fn parse(body: &Value) -> Result<ChatRequest, crate::ApiError> {
    request::parse(
        body.to_string().as_bytes(),
        &qwen(),
        &["Qwen/Qwen3-Omni-30B-A3B-Instruct".to_string()],
    )
}

fn with_parts(parts: Value) -> Value {
    json!({"model": "Qwen/Qwen3-Omni-30B-A3B-Instruct", "max_tokens": 10,
           "messages": [{"role": "user", "content": parts}]})
}

#[test]
fn headers_give_real_dimensions() {
    assert_eq!(
        media::image_info(&fixtures::jpeg(256, 128)).unwrap(),
        MediaInfo::Image {
            width: 256,
            height: 128
        }
    );
    assert_eq!(
        media::image_info(&fixtures::png(640, 480)).unwrap(),
        MediaInfo::Image {
            width: 640,
            height: 480
        }
    );
    assert_eq!(
        media::video_info(&fixtures::mp4(1280, 720, 2)).unwrap(),
        MediaInfo::Video {
            width: 1280,
            height: 720,
            frames: 2
        }
    );
    match media::audio_info(&fixtures::wav(2.0, 3, 48_000)).unwrap() {
        MediaInfo::Audio {
            duration_s,
            channels,
            sample_rate,
        } => {
            assert!((duration_s - 2.0).abs() < 1e-9);
            assert_eq!((channels, sample_rate), (3, 48_000));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn broken_media_is_refused() {
    let mut jpeg = fixtures::jpeg(10, 10);
    jpeg.truncate(8);
    assert!(matches!(
        media::image_info(&jpeg),
        Err(MediaError::Undecodable { .. })
    ));
    assert!(media::image_info(b"GIF89a....").is_err());
    assert!(media::image_info(&fixtures::png(0, 5)).is_err());
    assert!(matches!(
        media::image_info(&fixtures::png(20_000, 5)),
        Err(MediaError::TooLarge(_))
    ));
    let mut mp4 = fixtures::mp4(64, 64, 4);
    let n = mp4.len();
    mp4[n - 50..].fill(0xff);
    assert!(media::video_info(&mp4).is_err());
    assert!(media::video_info(&fixtures::mp4(64, 64, 0)).is_err());
    assert!(media::video_info(b"\0\0\0\x08moov").is_err());
    assert!(media::audio_info(b"RIFF\0\0\0\0WAVEjunk").is_err());
    assert!(media::audio_info(b"OggS....").is_err());
    assert!(matches!(
        media::decode_data_url("https://x/y.png"),
        Err(MediaError::NotFetched(_))
    ));
    assert!(matches!(
        media::decode_data_url("file:///etc/passwd"),
        Err(MediaError::NotFetched(_))
    ));
    assert!(matches!(
        media::decode_data_url("data:image/png;base64,@@@"),
        Err(MediaError::BadBase64(_))
    ));
    assert!(matches!(
        media::decode_data_url("data:image/png,abc"),
        Err(MediaError::BadDataUrl(_))
    ));
}

#[test]
fn media_tokens_follow_qwen3_omni_rules() {
    let r = qwen().media;
    // 256×256: 8×8 merged 32 px patches, + 2 markers.
    assert_eq!(
        media::tokens(
            &r,
            &MediaInfo::Image {
                width: 256,
                height: 256
            }
        ),
        66
    );
    // 60 s of audio: 13 tokens per second (100 mel frames), + 2.
    let a = MediaInfo::Audio {
        duration_s: 60.0,
        channels: 3,
        sample_rate: 48_000,
    };
    assert_eq!(media::tokens(&r, &a), 782);
    assert_eq!(media::audio_tokens(&r, 1.5), 13 + 7);
    // 2 frames = 1 temporal patch; 720×1280 scaled under the video pixel cap.
    let v = media::tokens(
        &r,
        &MediaInfo::Video {
            width: 1280,
            height: 720,
            frames: 2,
        },
    );
    assert_eq!(v, 20 * 36 + 2);
    let v4 = media::tokens(
        &r,
        &MediaInfo::Video {
            width: 1280,
            height: 720,
            frames: 4,
        },
    );
    assert_eq!(v4 - 2, 2 * (v - 2), "4 frames = 2 temporal patches");
}

#[test]
fn bodies_are_validated() {
    let bad = |b: Value| parse(&b).unwrap_err();
    assert_eq!(
        bad(json!({"max_tokens": 5})).param.as_deref(),
        Some("messages")
    );
    assert_eq!(bad(json!({"messages": []})).status, 400);
    assert_eq!(bad(json!({"messages": "hi"})).status, 400);
    let msg = json!([{"role": "user", "content": "hi"}]);
    for (k, v) in [
        ("max_tokens", json!(0)),
        ("max_tokens", json!(-3)),
        ("max_tokens", json!(10_000_000)),
        ("max_tokens", json!("10")),
        ("stream", json!("yes")),
        ("response_format", json!("pcm")),
        ("modalities", json!(["text", "video"])),
        ("modalities", json!([])),
        ("temperature", json!("hot")),
        ("n", json!(2)),
    ] {
        let e = bad(json!({"messages": msg, k: v}));
        assert_eq!(e.status, 400, "{k}: {v}");
    }
    let e = bad(json!({"messages": msg, "stream_options": {"include_usage": true}}));
    assert!(e.message.contains("stream=True"), "{}", e.message);
    let e = bad(json!({"model": "other", "messages": msg}));
    assert_eq!(e.status, 404);
    assert_eq!(bad(json!({"messages": [{"content": "x"}]})).status, 400);
    let e = bad(with_parts(
        json!([{"type": "text", "text": "a"}, {"type": "hologram"}]),
    ));
    assert!(e.message.contains("Unknown part type"), "{}", e.message);
}

#[test]
fn media_parts_are_validated_and_counted() {
    let text = json!({"type": "text", "text": "describe this"});
    let plain = parse(&with_parts(json!([text]))).unwrap();
    let img = json!({"type": "image_url", "image_url": {"url": fixtures::data_url("image/jpeg", &fixtures::jpeg(256, 256))}});
    let vid = json!({"type": "video_url", "video_url": {"url": fixtures::data_url("video/mp4", &fixtures::mp4(1280, 720, 2))}});
    // A WAV labelled audio/mpeg, as random-mm sends it.
    let aud = json!({"type": "audio_url", "audio_url": {"url": fixtures::data_url("audio/mpeg", &fixtures::wav(1.0, 3, 48_000))}});
    let r = parse(&with_parts(json!([text, img, vid, aud]))).unwrap();
    assert_eq!(r.media.len(), 3);
    assert_eq!(r.media_tokens, 66 + 722 + 15);
    assert_eq!(r.prompt_tokens(), plain.prompt_tokens() + 66 + 722 + 15);
    assert!(r.want_audio, "no modalities: text + audio");
    for bad in [
        json!({"type": "image_url", "image_url": {"url": "http://example.com/a.jpg"}}),
        json!({"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,!!!!"}}),
        json!({"type": "image_url", "image_url": {"url": fixtures::data_url("image/jpeg", b"not a jpeg")}}),
        json!({"type": "video_url", "video_url": {"url": fixtures::data_url("video/mp4", &fixtures::jpeg(8, 8))}}),
        json!({"type": "audio_url", "audio_url": {"url": fixtures::data_url("audio/wav", b"RIFF....WAVE")}}),
        json!({"type": "audio_url", "audio_url": {"url": "file:///tmp/a.wav"}}),
        json!({"type": "image_url", "image_url": {"url": fixtures::data_url("image/png", &fixtures::png(40_000, 10))}}),
        json!({"type": "image_url"}),
    ] {
        let e = parse(&with_parts(json!([text, bad]))).unwrap_err();
        assert_eq!(e.status, 400, "{bad}");
        assert!(
            e.param.as_deref().unwrap_or("").starts_with("messages"),
            "{e:?}"
        );
    }
    let t = parse(&json!({"messages": [{"role": "user", "content": "x"}], "modalities": ["text"]}))
        .unwrap();
    assert!(!t.want_audio);
}

fn job(id: u64, tokens: u32, frames: u32) -> OmniJob {
    OmniJob {
        id,
        preprocess_s: 0.05,
        prefill_s: 0.02,
        text_tokens: tokens,
        audio_frames: frames,
    }
}

fn run_one(cfg: OmniEngineConfig, j: OmniJob) -> Vec<super::engine::OmniEmission> {
    let mut e = OmniEngine::new(cfg);
    let mut out = Vec::new();
    e.submit(0, j, &mut out);
    e.advance(secs(600.0), &mut out);
    assert_eq!(e.in_flight(), 0, "request finished");
    out
}

#[test]
fn engine_makes_exactly_the_tokens_and_frames() {
    let out = run_one(cfg(true), job(1, 37, 130));
    let texts: Vec<u32> = out
        .iter()
        .filter_map(|e| match e.out {
            OmniOutput::Text { tokens, .. } => Some(tokens),
            _ => None,
        })
        .collect();
    assert_eq!(texts, (1..=37).collect::<Vec<_>>());
    let frames: u32 = out
        .iter()
        .filter_map(|e| match e.out {
            OmniOutput::Audio { frames, .. } => Some(frames),
            _ => None,
        })
        .sum();
    assert_eq!(frames, 130);
    assert!(out.last().unwrap().finishes(true));
    let chunks = out
        .iter()
        .filter(|e| matches!(e.out, OmniOutput::Audio { .. }))
        .count();
    assert_eq!(chunks, 6, "25-frame chunks: 5 full + 1 partial");
    // Without async chunk: one chunk, after the text.
    let out = run_one(cfg(false), job(1, 37, 130));
    let audio: Vec<_> = out
        .iter()
        .filter(|e| matches!(e.out, OmniOutput::Audio { .. }))
        .collect();
    assert_eq!(audio.len(), 1);
    let last_text = out
        .iter()
        .filter(|e| matches!(e.out, OmniOutput::Text { .. }))
        .map(|e| e.at)
        .max()
        .unwrap();
    assert!(audio[0].at > last_text);
}

#[test]
fn text_only_requests_leave_the_talker_idle() {
    let mut e = OmniEngine::new(cfg(true));
    let mut out = Vec::new();
    e.submit(0, job(1, 50, 0), &mut out);
    e.advance(secs(60.0), &mut out);
    assert!(out.iter().all(|x| matches!(x.out, OmniOutput::Text { .. })));
    let s = e.snapshot();
    assert_eq!((s.talker_steps, s.code2wav_steps), (0, 0));
    assert_eq!(s.thinker_steps, 50);
}

#[test]
fn async_chunk_lowers_ttfp_and_e2el() {
    let jobs: Vec<OmniJob> = (0..6).map(|i| job(i, 100, 400)).collect();
    let on = vbench::summarize(&vbench::run(&cfg(true), &jobs, Load::Rate(0.5), 3));
    let off = vbench::summarize(&vbench::run(&cfg(false), &jobs, Load::Rate(0.5), 3));
    assert!(
        on.mean_audio_ttfp_ms * 2.0 < off.mean_audio_ttfp_ms,
        "{on:?} vs {off:?}"
    );
    assert!(
        on.mean_e2el_ms < off.mean_e2el_ms * 0.9,
        "{on:?} vs {off:?}"
    );
    assert!(
        (on.mean_ttft_ms - off.mean_ttft_ms).abs() < 50.0,
        "TTFT is the thinker's"
    );
}

#[test]
fn max_num_seqs_one_serialises_the_thinker() {
    let mut c = cfg(true);
    c.thinker.max_num_seqs = 1;
    let jobs: Vec<OmniJob> = (0..4).map(|i| job(i, 50, 0)).collect();
    let one = vbench::run(&c, &jobs, Load::Concurrency(4), 0);
    let many = vbench::run(&cfg(true), &jobs, Load::Concurrency(4), 0);
    let mut ttft: Vec<f64> = one.iter().map(|s| s.ttft_ms).collect();
    ttft.sort_by(f64::total_cmp);
    let mut e2el: Vec<f64> = one.iter().map(|s| s.e2el_ms).collect();
    e2el.sort_by(f64::total_cmp);
    for i in 1..4 {
        assert!(
            ttft[i] >= e2el[i - 1],
            "request {i} starts after {} ends: {ttft:?} {e2el:?}",
            i - 1
        );
    }
    let worst_many = many.iter().map(|s| s.e2el_ms).fold(0.0, f64::max);
    assert!(e2el[3] > 2.5 * worst_many, "{e2el:?} vs {worst_many}");
}

#[test]
fn cancelled_requests_leave_every_stage() {
    let mut e = OmniEngine::new(cfg(true));
    let mut out = Vec::new();
    e.submit(0, job(1, 100, 400), &mut out);
    e.advance(secs(1.0), &mut out);
    e.cancel(1);
    out.clear();
    e.advance(secs(60.0), &mut out);
    assert!(out.is_empty());
    assert_eq!(e.in_flight(), 0);
    assert_eq!(e.next_event(), None);
}

/// The first entries of `perf-configs/test_qwen3_omni_async_chunk.json` in virtual time
/// (one 60 s × 3 ch audio item, 100 tokens in and out, 0.1 req/s): within ±10 % of the
/// H100 baselines (examples/calibrate_omni.rs measures every entry).
#[test]
fn qwen3_omni_lands_near_the_h100_baselines() {
    let mut o = crate::SimOptions::new("Qwen/Qwen3-Omni-30B-A3B-Instruct");
    o.extra_flags.push(("--async-chunk".into(), None));
    let cfg = o.resolve().unwrap().omni.unwrap();
    assert!(cfg.engine.async_chunk);
    let audio = MediaInfo::Audio {
        duration_s: 60.0,
        channels: 3,
        sample_rate: 48_000,
    };
    let jobs = |want_audio: bool| -> Vec<OmniJob> {
        (0..10)
            .map(|i| {
                let req = ChatRequest {
                    stream: true,
                    include_usage: true,
                    continuous_usage: true,
                    max_tokens: 100,
                    ignore_eos: true,
                    want_audio,
                    stage_metrics: false,
                    seed: None,
                    text_tokens: 100,
                    template_tokens: 8,
                    media_tokens: media::tokens(&cfg.profile.media, &audio),
                    media: vec![audio],
                    text: format!("prompt {i}"),
                };
                super::plan(&cfg, 0, &req).job
            })
            .collect()
    };
    let near = |got: f64, want: f64| (got / want - 1.0).abs() <= 0.10;
    let s = vbench::summarize(&vbench::run(&cfg.engine, &jobs(true), Load::Rate(0.1), 11));
    assert!(near(s.mean_e2el_ms, 3646.797), "{s:?}");
    assert!(near(s.mean_audio_rtf, 0.1098), "{s:?}");
    let t = vbench::summarize(&vbench::run(&cfg.engine, &jobs(false), Load::Rate(0.1), 11));
    assert!(near(t.mean_e2el_ms, 756.8415), "{t:?}");
    assert_eq!(t.mean_audio_rtf, 0.0);
}

#[test]
fn errors_never_echo_a_whole_payload() {
    let big = "x".repeat(100_000);
    let e = parse(&json!({"messages": big})).unwrap_err();
    assert!(e.message.len() < 300, "{}", e.message.len());
    let e = parse(&json!({"messages": [{"role": big, "content": "a"}]})).unwrap_err();
    assert!(e.message.len() < 300, "{}", e.message.len());
}

#[test]
fn deploy_stages_set_the_omni_stage_limits() {
    let yaml = "async_chunk: true\nstages:\n  - stage_id: 0\n    max_num_seqs: 8\n  - stage_id: 1\n    max_num_seqs: 4\n  - stage_id: 2\n    max_num_seqs: 2\n";
    let cfg = crate::SimOptions::new("Qwen/Qwen3-Omni-30B-A3B-Instruct")
        .deploy_yaml(yaml)
        .stage_overrides(json!({"1": {"max_num_seqs": 3}}))
        .resolve()
        .unwrap()
        .omni
        .unwrap();
    let e = &cfg.engine;
    assert_eq!(
        (
            e.thinker.max_num_seqs,
            e.talker.max_num_seqs,
            e.code2wav.max_num_seqs
        ),
        (8, 3, 2)
    );
    assert!(e.async_chunk && e.shared_gpu);
    let mut o = crate::SimOptions::new("Qwen/Qwen3-Omni-30B-A3B-Instruct").deploy_yaml(yaml);
    o.extra_flags.push(("--no-async-chunk".into(), None));
    assert!(
        !o.resolve().unwrap().omni.unwrap().engine.async_chunk,
        "the flag wins"
    );
    let split = crate::SimOptions::new("Qwen/Qwen3-Omni-30B-A3B-Instruct")
        .stage_overrides(
            json!({"0": {"devices": "0,1"}, "1": {"devices": "2"}, "2": {"devices": "3"}}),
        )
        .resolve()
        .unwrap();
    assert!(!split.omni.unwrap().engine.shared_gpu);
    let forced = crate::SimOptions::new("whatever")
        .profile("minicpm-o-4.5")
        .resolve()
        .unwrap();
    assert_eq!(forced.omni.unwrap().profile.name, "minicpm-o-4.5");
    assert!(
        crate::SimOptions::new("Qwen/Qwen3-TTS-12Hz-1.7B-Base")
            .resolve()
            .unwrap()
            .omni
            .is_none()
    );
}

#[test]
fn the_serve_command_line_switches_async_chunk_on() {
    let argv = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
    let no_env = |_: &str| None;
    let a = argv(&[
        "dfx-perf-sim",
        "serve",
        "Qwen/Qwen3-Omni-30B-A3B-Instruct",
        "--omni",
        "--async-chunk",
        "--port",
        "8091",
    ]);
    let crate::args::Command::Serve(o, _) = crate::args::parse(a, &no_env).unwrap() else {
        panic!("serve expected");
    };
    assert_eq!(o.port, 8091);
    let cfg = o.resolve().unwrap().omni.unwrap();
    assert!(cfg.engine.async_chunk);
    let a = argv(&[
        "dfx-perf-sim",
        "serve",
        "Qwen/Qwen3-Omni-30B-A3B-Instruct",
        "--port",
        "8091",
    ]);
    let crate::args::Command::Serve(o, _) = crate::args::parse(a, &no_env).unwrap() else {
        panic!("serve expected");
    };
    assert!(
        !o.resolve().unwrap().omni.unwrap().engine.async_chunk,
        "off by default"
    );
}
