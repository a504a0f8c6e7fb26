//! Omni profiles over HTTP (`docs/simulator.md` ("Omni models")): the chat completion
//! stream as `vllm bench serve --omni` parses it, the non-streaming shape, 400
//! envelopes, media tokens, disconnects, async chunk and batching limits.

mod common;

use std::time::{Duration, Instant};

use base64::Engine as _;
use dfx_sim::SimOptions;
use dfx_sim::omni::fixtures;
use futures_util::StreamExt;
use serde_json::{Value, json};

const OMNI: &str = "Qwen/Qwen3-Omni-30B-A3B-Instruct";

async fn start(opts: SimOptions) -> dfx_sim::SimHandle {
    dfx_sim::spawn(opts).await.unwrap()
}

fn fast(speed: f64) -> SimOptions {
    let mut o = SimOptions::new(OMNI).speed(speed);
    o.extra_flags.push(("--async-chunk".into(), None));
    o
}

/// The body the bench sends (P:1850-1893): text part first, media after.
fn bench_body(max_tokens: u32, media: Vec<Value>, extra: Value) -> Value {
    let mut content = vec![json!({"type": "text", "text": "tell me a story about a river"})];
    content.extend(media);
    let mut b = json!({
        "model": OMNI,
        "messages": [{"role": "user", "content": content}],
        "temperature": 0.0, "max_tokens": max_tokens, "stream": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": true},
        "ignore_eos": true,
    });
    if let (Some(b), Some(e)) = (b.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    b
}

/// One SSE message as the bench sees it: parse time since send, and the JSON (or
/// `None` for `[DONE]`).
struct Msg {
    t: Duration,
    json: Option<Value>,
}

/// POSTs and parses the stream like the bench: split on blank lines, strip `data: `.
async fn stream(url: &str, body: &Value) -> (u16, Vec<Msg>) {
    let c = common::client::client();
    let sent = Instant::now();
    let r = c.post(url).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    let mut s = r.bytes_stream();
    let mut buf = String::new();
    let mut out = Vec::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(60), s.next())
        .await
        .unwrap()
    {
        buf.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        while let Some(i) = buf.find("\n\n") {
            let ev: String = buf.drain(..i + 2).collect();
            let data = ev
                .trim()
                .strip_prefix("data: ")
                .expect("`data: ` with the space");
            let json = if data == "[DONE]" {
                None
            } else {
                Some(serde_json::from_str(data).unwrap())
            };
            out.push(Msg {
                t: sent.elapsed(),
                json,
            });
        }
    }
    assert!(buf.trim().is_empty(), "trailing bytes: {buf:?}");
    (status, out)
}

fn url(h: &dfx_sim::SimHandle) -> String {
    format!("{}/v1/chat/completions", h.base_url())
}

fn modality(m: &Msg) -> Option<&str> {
    m.json.as_ref()?.get("modality")?.as_str()
}

#[tokio::test]
async fn stream_has_the_real_servers_shape_and_order() {
    let h = start(SimOptions::new(OMNI).speed(50.0)).await; // no async chunk: text, then audio
    let img = json!({"type": "image_url", "image_url": {"url": fixtures::data_url("image/jpeg", &fixtures::jpeg(256, 256))}});
    let (status, msgs) = stream(
        &url(&h),
        &bench_body(30, vec![img], json!({"return_stage_metrics": true})),
    )
    .await;
    assert_eq!(status, 200);
    // [DONE] last and only once.
    assert!(msgs.last().unwrap().json.is_none());
    assert_eq!(msgs.iter().filter(|m| m.json.is_none()).count(), 1);
    let js: Vec<&Value> = msgs.iter().filter_map(|m| m.json.as_ref()).collect();
    // Role chunk first.
    assert_eq!(
        js[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert_eq!(js[0]["modality"], "text");
    assert_eq!(js[0]["usage"]["completion_tokens"], 0);
    // Usage chunk last: no choices, no modality, prompt tokens incl. the image's 66.
    let usage = js.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert!(usage.get("modality").is_none());
    assert_eq!(usage["usage"]["completion_tokens"], 30);
    let prompt = usage["usage"]["prompt_tokens"].as_u64().unwrap();
    assert!(prompt > 66, "{prompt}");
    assert_eq!(
        usage["usage"]["total_tokens"].as_u64().unwrap(),
        prompt + 30
    );
    let content = &js[1..js.len() - 1];
    assert!(
        content
            .iter()
            .all(|c| c["modality"] == "text" || c["modality"] == "audio")
    );
    let first_audio = content
        .iter()
        .position(|c| c["modality"] == "audio")
        .unwrap();
    assert!(
        content[first_audio..]
            .iter()
            .all(|c| c["modality"] == "audio"),
        "text → audio"
    );
    // Text: cumulative completion tokens, exactly max_tokens (ignore_eos).
    let counts: Vec<u64> = content[..first_audio]
        .iter()
        .map(|c| c["usage"]["completion_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, (1..=30).collect::<Vec<_>>());
    assert!(content[..first_audio].iter().all(|c| {
        c["choices"][0]["delta"]["content"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    }));
    assert!(
        content[..first_audio]
            .iter()
            .all(|c| c["choices"][0]["finish_reason"].is_null()),
        "audio finishes last"
    );
    let m = &content[first_audio - 1]["metrics"]["stage_metrics"]["0"];
    assert_eq!(m["num_tokens_out"], 30);
    assert_eq!(m["vllm_itls_ms"].as_array().unwrap().len(), 29);
    // Audio: standalone 24 kHz mono 16-bit WAVs holding only their own segment.
    let mut samples = 0usize;
    for (i, c) in content[first_audio..].iter().enumerate() {
        let ch = &c["choices"][0];
        let wav = base64::engine::general_purpose::STANDARD
            .decode(ch["delta"]["content"].as_str().unwrap())
            .unwrap();
        let r = hound::WavReader::new(std::io::Cursor::new(wav)).unwrap();
        let spec = r.spec();
        assert_eq!(
            (spec.channels, spec.sample_rate, spec.bits_per_sample),
            (1, 24_000, 16)
        );
        assert_eq!(
            ch["audio_metadata"]["frame_count"].as_u64().unwrap(),
            u64::from(r.duration())
        );
        assert_eq!(ch["audio_metadata"]["sample_rate_hz"], 24_000);
        assert_eq!(c["usage"]["completion_tokens"], 0);
        samples += r.duration() as usize;
        let last = i == content.len() - first_audio - 1;
        assert_eq!(ch["finish_reason"].as_str(), last.then_some("stop"));
    }
    // 30 tokens × 0.32 s ± 5 %.
    let secs = samples as f64 / 24_000.0;
    assert!((9.0..10.2).contains(&secs), "{secs}");
    let stages = &usage["metrics"]["stage_metrics"];
    assert_eq!(
        stages["2"]["audio_frames"].as_u64().unwrap() as usize,
        samples
    );
    assert_eq!(stages["2"]["audio_sample_rate"], 24_000);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn text_modality_sends_no_audio() {
    let h = start(fast(50.0)).await;
    let (_, msgs) = stream(
        &url(&h),
        &bench_body(20, vec![], json!({"modalities": ["text"]})),
    )
    .await;
    assert!(msgs.iter().all(|m| modality(m) != Some("audio")));
    let texts = msgs.iter().filter(|m| modality(m) == Some("text")).count();
    assert_eq!(texts, 21, "role + 20 tokens");
    let last_text = msgs
        .iter()
        .rev()
        .find(|m| modality(m) == Some("text"))
        .unwrap();
    assert_eq!(
        last_text.json.as_ref().unwrap()["choices"][0]["finish_reason"],
        "length"
    );
    let stats: Value = common::client::client()
        .get(format!("{}/sim/stats", h.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["chat_requests"], 1);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn non_streaming_has_a_text_and_an_audio_choice() {
    let h = start(fast(50.0)).await;
    let body = json!({"model": OMNI, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 12, "ignore_eos": true});
    let v: Value = common::client::client()
        .post(url(&h))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "chat.completion");
    let ch = v["choices"].as_array().unwrap();
    assert_eq!(ch.len(), 2);
    assert!(ch[0]["message"]["content"].as_str().unwrap().len() > 5);
    assert_eq!(ch[0]["finish_reason"], "length");
    let audio = &ch[1]["message"]["audio"];
    let wav = base64::engine::general_purpose::STANDARD
        .decode(audio["data"].as_str().unwrap())
        .unwrap();
    let r = hound::WavReader::new(std::io::Cursor::new(wav)).unwrap();
    assert_eq!(r.spec().sample_rate, 24_000);
    assert!(r.duration() > 24_000 * 3, "12 tokens ≈ 3.8 s");
    assert!(audio["id"].as_str().unwrap().starts_with("audio-"));
    assert_eq!(v["usage"]["completion_tokens"], 12);
    // Text only: one choice.
    let mut t = body.clone();
    t["modalities"] = json!(["text"]);
    let v: Value = common::client::client()
        .post(url(&h))
        .json(&t)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"].as_array().unwrap().len(), 1);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_bodies_and_media_get_the_openai_envelope() {
    let h = start(fast(50.0)).await;
    let c = common::client::client();
    let part = |p: Value| bench_body(5, vec![p], json!({}));
    let cases = vec![
        json!({"messages": []}),
        json!({"max_tokens": 3}),
        bench_body(0, vec![], json!({})),
        bench_body(5, vec![], json!({"response_format": "pcm"})),
        part(json!({"type": "image_url", "image_url": {"url": "https://example.com/x.jpg"}})),
        part(json!({"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,%%%"}})),
        part(
            json!({"type": "video_url", "video_url": {"url": fixtures::data_url("video/mp4", b"garbage")}}),
        ),
        part(
            json!({"type": "audio_url", "audio_url": {"url": fixtures::data_url("audio/mpeg", b"RIFF1234WAVEnope")}}),
        ),
        part(
            json!({"type": "image_url", "image_url": {"url": fixtures::data_url("image/png", &fixtures::png(1, 99_999))}}),
        ),
        part(json!({"type": "smell_url"})),
    ];
    for b in cases {
        let r = c.post(url(&h)).json(&b).send().await.unwrap();
        assert_eq!(r.status(), 400, "{b:.200}");
        let v: Value = r.json().await.unwrap();
        let e = &v["error"];
        assert_eq!(e["type"], "BadRequestError");
        assert_eq!(e["code"], 400);
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(e.as_object().unwrap().contains_key("param"));
    }
    let r = c
        .post(url(&h))
        .body("{not json")
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let mut b = bench_body(5, vec![], json!({}));
    b["model"] = json!("nope");
    assert_eq!(c.post(url(&h)).json(&b).send().await.unwrap().status(), 404);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn random_mm_sized_items_are_accepted_and_counted() {
    let h = start(fast(50.0)).await;
    // The perf bucket (0, 60, 3): 60 s × 3 ch × 48 kHz WAV labelled audio/mpeg, ≈ 23 MB base64.
    let audio = json!({"type": "audio_url", "audio_url": {"url": fixtures::data_url("audio/mpeg", &fixtures::wav(60.0, 3, 48_000))}});
    let video = json!({"type": "video_url", "video_url": {"url": fixtures::data_url("video/mp4", &fixtures::mp4(1280, 720, 2))}});
    let extra = json!({"modalities": ["text"]});
    let (_, plain) = stream(&url(&h), &bench_body(5, vec![], extra.clone())).await;
    let (status, mm) = stream(&url(&h), &bench_body(5, vec![audio, video], extra)).await;
    assert_eq!(status, 200);
    let prompt = |m: &[Msg]| {
        m.iter()
            .rev()
            .find_map(|m| {
                m.json
                    .as_ref()?
                    .get("usage")?
                    .get("prompt_tokens")?
                    .as_u64()
            })
            .unwrap()
    };
    assert_eq!(
        prompt(&mm) - prompt(&plain),
        782 + 722,
        "audio 60 s + video 720p×2"
    );
    // The prefill is charged: the first token comes later with media.
    let ttft = |m: &[Msg]| {
        m.iter()
            .find(|m| {
                m.json
                    .as_ref()
                    .is_some_and(|j| j["usage"]["completion_tokens"] == 1)
            })
            .unwrap()
            .t
    };
    assert!(
        ttft(&mm) > ttft(&plain),
        "{:?} vs {:?}",
        ttft(&mm),
        ttft(&plain)
    );
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_client_disconnect_mid_stream_leaves_the_server_serving() {
    let h = start(fast(5.0)).await;
    let c = common::client::client();
    let r = c
        .post(url(&h))
        .json(&bench_body(100, vec![], json!({})))
        .send()
        .await
        .unwrap();
    let mut s = r.bytes_stream();
    let _ = s.next().await.unwrap().unwrap();
    let _ = s.next().await.unwrap().unwrap();
    drop(s);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, msgs) = stream(
        &url(&h),
        &bench_body(10, vec![], json!({"modalities": ["text"]})),
    )
    .await;
    assert_eq!(status, 200);
    assert!(msgs.last().unwrap().json.is_none());
    let stats: Value = c
        .get(format!("{}/sim/stats", h.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["cancelled"], 1);
    assert_eq!(stats["inflight"], 0);
    h.shutdown().await.unwrap();
}

async fn ttfp_e2el(opts: SimOptions) -> (Duration, Duration) {
    let h = start(opts).await;
    let (_, msgs) = stream(&url(&h), &bench_body(60, vec![], json!({}))).await;
    let ttfp = msgs
        .iter()
        .find(|m| modality(m) == Some("audio"))
        .unwrap()
        .t;
    let e2el = msgs.iter().rev().find(|m| m.json.is_some()).unwrap().t;
    h.shutdown().await.unwrap();
    (ttfp, e2el)
}

#[tokio::test]
async fn async_chunk_lowers_audio_ttfp_over_http() {
    // Speed 2: the simulator's own per-chunk work stays small against the model's times
    // even when other tests load the machine.
    let (on_ttfp, on_e2el) = ttfp_e2el(fast(2.0)).await;
    let (off_ttfp, off_e2el) = ttfp_e2el(SimOptions::new(OMNI).speed(2.0)).await;
    assert!(on_ttfp * 2 < off_ttfp, "{on_ttfp:?} vs {off_ttfp:?}");
    assert!(on_e2el < off_e2el, "{on_e2el:?} vs {off_e2el:?}");
    // The deploy file's async_chunk does the same as the flag.
    let (d_ttfp, _) = ttfp_e2el(
        SimOptions::new(OMNI)
            .speed(2.0)
            .deploy_yaml("async_chunk: true\n"),
    )
    .await;
    assert!(d_ttfp * 2 < off_ttfp, "{d_ttfp:?} vs {off_ttfp:?}");
}

#[tokio::test]
async fn thinker_max_num_seqs_one_serialises_requests() {
    let opts = fast(2.0).stage_overrides(json!({"0": {"max_num_seqs": 1}}));
    let h = start(opts).await;
    let info: Value = common::client::client()
        .get(format!("{}/sim/info", h.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["omni_model"]["engine"]["thinker"]["max_num_seqs"], 1);
    assert_eq!(info["omni_model"]["engine"]["async_chunk"], true);
    let u = url(&h);
    let body = bench_body(40, vec![], json!({"modalities": ["text"]}));
    let (a, b) = tokio::join!(stream(&u, &body), stream(&u, &body));
    let first_token = |m: &[Msg]| {
        m.iter()
            .find(|m| {
                m.json
                    .as_ref()
                    .is_some_and(|j| j["usage"]["completion_tokens"] == 1)
            })
            .unwrap()
            .t
    };
    let end = |m: &[Msg]| m.last().unwrap().t;
    let (fa, fb, ea, eb) = (first_token(&a.1), first_token(&b.1), end(&a.1), end(&b.1));
    // Whichever went second got its first token only after the other finished.
    let ok = (fb + Duration::from_millis(2) >= ea) || (fa + Duration::from_millis(2) >= eb);
    assert!(ok, "a: {fa:?}..{ea:?}, b: {fb:?}..{eb:?}");
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn models_and_info_show_the_omni_profile() {
    let h = start(SimOptions::new("openbmb/MiniCPM-o-2_6").speed(50.0)).await;
    let c = common::client::client();
    let m: Value = c
        .get(format!("{}/v1/models", h.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(m["data"][0]["id"], "openbmb/MiniCPM-o-2_6");
    let info: Value = c
        .get(format!("{}/sim/info", h.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["omni_model"]["profile"]["name"], "minicpm-o-2.6");
    h.shutdown().await.unwrap();
    // A TTS model does not serve chat.
    let h = start(SimOptions::new("Qwen/Qwen3-TTS-12Hz-1.7B-Base").speed(50.0)).await;
    let r = c
        .post(url(&h))
        .json(&bench_body(
            5,
            vec![],
            json!({"model": "Qwen/Qwen3-TTS-12Hz-1.7B-Base"}),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn faults_apply_to_chat() {
    let h = start(fast(50.0).fault("error500=1").unwrap()).await;
    let r = common::client::client()
        .post(url(&h))
        .json(&bench_body(5, vec![], json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], 500);
    h.shutdown().await.unwrap();
    // A truncated stream ends without [DONE] after 3 content chunks.
    let h = start(fast(50.0).fault("truncate-after-chunks=3").unwrap()).await;
    let r = common::client::client()
        .post(url(&h))
        .json(&bench_body(20, vec![], json!({})))
        .send()
        .await
        .unwrap();
    let mut s = r.bytes_stream();
    let mut text = String::new();
    let mut cut = false;
    while let Some(c) = s.next().await {
        match c {
            Ok(b) => text.push_str(&String::from_utf8_lossy(&b)),
            Err(_) => {
                cut = true;
                break;
            }
        }
    }
    assert!(cut, "connection aborted");
    assert!(!text.contains("[DONE]"));
    assert_eq!(text.matches("data: ").count(), 4, "role + 3 chunks: {text}");
    h.shutdown().await.unwrap();
}
