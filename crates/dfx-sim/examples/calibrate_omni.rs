//! Calibration of the Qwen3-Omni profile against the H100 baselines of
//! `perf-configs/test_qwen3_omni_async_chunk.json`: drives the omni model in virtual
//! time (`dfx_sim::omni::vbench`) the way the config's entries drive a server (random-mm
//! with Poisson arrivals at the entry's rate, random closed loop at its concurrency;
//! 100 text tokens in and out, `ignore_eos`) and prints model against target.
//!
//! `cargo run --release -p dfx-sim --example calibrate_omni [-- --seeds N] [--no-async-chunk]`
//!
//! `-- --http K [--prompts N]`: instead, starts the simulator in process at speed K and
//! sends the first entry (one 60 s × 3 ch × 48 kHz WAV labelled `audio/mpeg` per
//! request, as random-mm does) over HTTP with the bench's body, N requests one after the
//! other, measuring E2EL and audio RTF from the parsed SSE stream as the bench does
//! (times × K to read as simulated time).

use dfx_sim::SimOptions;
use dfx_sim::omni::media::MediaInfo;
use dfx_sim::omni::request::ChatRequest;
use dfx_sim::omni::vbench::{self, Load, Summary};
use dfx_sim::omni::{self, OmniConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const AUDIO: MediaInfo = MediaInfo::Audio {
    duration_s: 60.0,
    channels: 3,
    sample_rate: 48_000,
};
const IMAGE: MediaInfo = MediaInfo::Image {
    width: 256,
    height: 256,
};
const VIDEO: MediaInfo = MediaInfo::Video {
    width: 1280,
    height: 720,
    frames: 2,
};

/// One entry of the shipped config.
struct Entry {
    name: &'static str,
    prompts: usize,
    load: Load,
    /// (item, weight, cap) buckets; items per request uniform in `items`.
    buckets: &'static [(MediaInfo, f64)],
    items: (usize, usize),
    audio: bool,
    e2el_ms: f64,
    rtf: Option<f64>,
}

const ENTRIES: &[Entry] = &[
    Entry {
        name: "mm audio 0.1/s",
        prompts: 10,
        load: Load::Rate(0.1),
        buckets: &[(AUDIO, 1.0)],
        items: (1, 1),
        audio: true,
        e2el_ms: 3646.797,
        rtf: Some(0.1098),
    },
    Entry {
        name: "mm img+vid 0.5/s",
        prompts: 40,
        load: Load::Rate(0.5),
        buckets: &[(IMAGE, 0.5), (VIDEO, 0.5)],
        items: (1, 2),
        audio: true,
        e2el_ms: 4059.0878,
        rtf: Some(0.1335),
    },
    Entry {
        name: "mm all 1/s",
        prompts: 100,
        load: Load::Rate(1.0),
        buckets: &[(IMAGE, 0.34), (VIDEO, 0.33), (AUDIO, 0.33)],
        items: (1, 3),
        audio: true,
        e2el_ms: 5639.5769,
        rtf: Some(0.1798),
    },
    Entry {
        name: "mm audio 0.1/s text",
        prompts: 10,
        load: Load::Rate(0.1),
        buckets: &[(AUDIO, 1.0)],
        items: (1, 1),
        audio: false,
        e2el_ms: 756.8415,
        rtf: None,
    },
    Entry {
        name: "mm img+vid 0.5/s text",
        prompts: 40,
        load: Load::Rate(0.5),
        buckets: &[(IMAGE, 0.5), (VIDEO, 0.5)],
        items: (1, 2),
        audio: false,
        e2el_ms: 694.9777,
        rtf: None,
    },
    Entry {
        name: "mm all 1/s text",
        prompts: 100,
        load: Load::Rate(1.0),
        buckets: &[(IMAGE, 0.34), (VIDEO, 0.33), (AUDIO, 0.33)],
        items: (1, 3),
        audio: false,
        e2el_ms: 1006.1663,
        rtf: None,
    },
    Entry {
        name: "random c=1 text",
        prompts: 4,
        load: Load::Concurrency(1),
        buckets: &[],
        items: (0, 0),
        audio: false,
        e2el_ms: 4354.8945,
        rtf: None,
    },
    Entry {
        name: "random c=8 text",
        prompts: 32,
        load: Load::Concurrency(8),
        buckets: &[],
        items: (0, 0),
        audio: false,
        e2el_ms: 9861.1687,
        rtf: None,
    },
    Entry {
        name: "random c=32 text",
        prompts: 128,
        load: Load::Concurrency(32),
        buckets: &[],
        items: (0, 0),
        audio: false,
        e2el_ms: 18716.709,
        rtf: None,
    },
];

fn same_kind(a: &MediaInfo, b: &MediaInfo) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// The media of one request: random-mm's weighted draws, one item per modality at most
/// (every limit in the config is 1).
fn draw_items(rng: &mut ChaCha8Rng, e: &Entry) -> Vec<MediaInfo> {
    let n = if e.items.1 == 0 {
        0
    } else {
        rng.random_range(e.items.0..=e.items.1)
    };
    let mut out: Vec<MediaInfo> = Vec::new();
    for _ in 0..n {
        let open: Vec<&(MediaInfo, f64)> = e
            .buckets
            .iter()
            .filter(|(m, _)| !out.iter().any(|o| same_kind(o, m)))
            .collect();
        let total: f64 = open.iter().map(|(_, w)| w).sum();
        if total <= 0.0 {
            break;
        }
        let mut x = rng.random_range(0.0..total);
        for (m, w) in &open {
            if x < *w {
                out.push(*m);
                break;
            }
            x -= w;
        }
    }
    out
}

fn request(cfg: &OmniConfig, media: Vec<MediaInfo>, audio: bool, i: usize) -> ChatRequest {
    let media_tokens = media
        .iter()
        .map(|m| omni::media::tokens(&cfg.profile.media, m))
        .sum();
    ChatRequest {
        stream: true,
        include_usage: true,
        continuous_usage: true,
        max_tokens: 100,
        ignore_eos: true,
        want_audio: audio,
        stage_metrics: false,
        seed: None,
        text_tokens: 100,
        template_tokens: 8,
        media_tokens,
        media,
        text: format!("prompt {i}"),
    }
}

/// Mean over `seeds` runs of one entry.
fn measure(cfg: &OmniConfig, e: &Entry, seeds: u64) -> Summary {
    let mut acc = Summary::default();
    for seed in 0..seeds {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let jobs: Vec<_> = (0..e.prompts)
            .map(|i| {
                let media = draw_items(&mut rng, e);
                omni::plan(cfg, seed, &request(cfg, media, e.audio, i)).job
            })
            .collect();
        let s = vbench::summarize(&vbench::run(&cfg.engine, &jobs, e.load, seed + 11));
        acc.mean_e2el_ms += s.mean_e2el_ms / seeds as f64;
        acc.mean_ttft_ms += s.mean_ttft_ms / seeds as f64;
        acc.mean_tpot_ms += s.mean_tpot_ms / seeds as f64;
        acc.mean_audio_rtf += s.mean_audio_rtf / seeds as f64;
        acc.mean_audio_ttfp_ms += s.mean_audio_ttfp_ms / seeds as f64;
        acc.mean_audio_s += s.mean_audio_s / seeds as f64;
        acc.n += s.n;
    }
    acc
}

/// Mean E2EL (last JSON message) and audio RTF (last audio / Σ WAV duration) over HTTP.
async fn http_entry(speed: f64, prompts: usize, text_only: bool) -> (f64, f64) {
    use base64::Engine as _;
    use futures_util::StreamExt;
    let mut o = SimOptions::new("Qwen/Qwen3-Omni-30B-A3B-Instruct").speed(speed);
    o.extra_flags.push(("--async-chunk".into(), None));
    let h = dfx_sim::spawn(o).await.expect("simulator");
    let url = format!("{}/v1/chat/completions", h.base_url());
    let wav = omni::fixtures::wav(60.0, 3, 48_000);
    let audio = omni::fixtures::data_url("audio/mpeg", &wav);
    let c = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let (mut e2el, mut rtf) = (0.0, 0.0);
    for i in 0..prompts {
        let mut body = serde_json::json!({
            "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": format!("random prompt number {i} with some words in it")},
                {"type": "audio_url", "audio_url": {"url": audio}}]}],
            "temperature": 0.0, "max_tokens": 100, "stream": true,
            "stream_options": {"include_usage": true, "continuous_usage_stats": true},
            "ignore_eos": true,
        });
        if text_only {
            body["modalities"] = serde_json::json!(["text"]);
        }
        let sent = std::time::Instant::now();
        let r = c.post(&url).json(&body).send().await.expect("send");
        let mut s = r.bytes_stream();
        let (mut buf, mut last, mut last_audio, mut samples) = (String::new(), 0.0, 0.0, 0u64);
        while let Some(chunk) = s.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk.expect("body")));
            while let Some(k) = buf.find("\n\n") {
                let ev: String = buf.drain(..k + 2).collect();
                let data = ev.trim().trim_start_matches("data: ");
                let Ok(v) = serde_json::from_str::<serde_json::Value>(data) else {
                    continue;
                };
                let t = sent.elapsed().as_secs_f64() * speed;
                last = t;
                if v["modality"] == "audio" {
                    last_audio = t;
                    let b = v["choices"][0]["delta"]["content"].as_str().unwrap_or("");
                    let w = base64::engine::general_purpose::STANDARD
                        .decode(b)
                        .unwrap_or_default();
                    samples += (w.len().saturating_sub(44) / 2) as u64;
                }
            }
        }
        e2el += last * 1000.0 / prompts as f64;
        if samples > 0 {
            rtf += last_audio / (samples as f64 / 24_000.0) / prompts as f64;
        }
    }
    let _ = h.shutdown().await;
    (e2el, rtf)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(speed) = args
        .iter()
        .position(|a| a == "--http")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse::<f64>().ok())
    {
        let prompts = args
            .iter()
            .position(|a| a == "--prompts")
            .and_then(|i| args.get(i + 1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(5);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (e, r) = rt.block_on(http_entry(speed, prompts, false));
        println!(
            "HTTP x{speed}, {prompts} sequential requests, 60 s audio item: mean_e2el_ms {e:.1} (target 3646.8), mean_audio_rtf {r:.4} (target 0.1098)"
        );
        let (e, _) = rt.block_on(http_entry(speed, prompts, true));
        println!(
            "HTTP x{speed}, same with modalities [\"text\"]: mean_e2el_ms {e:.1} (target 756.8)"
        );
        return;
    }
    let seeds = args
        .iter()
        .position(|a| a == "--seeds")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let mut o = SimOptions::new("Qwen/Qwen3-Omni-30B-A3B-Instruct");
    let flag = if args.iter().any(|a| a == "--no-async-chunk") {
        "--no-async-chunk"
    } else {
        "--async-chunk"
    };
    o.extra_flags.push((flag.into(), None));
    let cfg = o.resolve().expect("options").omni.expect("omni profile");
    println!(
        "profile {} ({flag}), {seeds} seeds per entry, virtual time",
        cfg.profile.name
    );
    println!(
        "{:<24} {:>10} {:>10} {:>7} | {:>7} {:>7} {:>6} | {:>8} {:>6} {:>6}",
        "entry", "e2el ms", "target", "err", "rtf", "target", "err", "ttft", "tpot", "ttfp"
    );
    for e in ENTRIES {
        let s = measure(&cfg, e, seeds);
        let err = |m: f64, t: f64| format!("{:+.0}%", (m / t - 1.0) * 100.0);
        let (rtf, rt, re) = match e.rtf {
            Some(t) => (
                format!("{:.4}", s.mean_audio_rtf),
                format!("{t:.4}"),
                err(s.mean_audio_rtf, t),
            ),
            None => ("-".into(), "-".into(), "".into()),
        };
        println!(
            "{:<24} {:>10.1} {:>10.1} {:>7} | {:>7} {:>7} {:>6} | {:>8.1} {:>6.2} {:>6.0}",
            e.name,
            s.mean_e2el_ms,
            e.e2el_ms,
            err(s.mean_e2el_ms, e.e2el_ms),
            rtf,
            rt,
            re,
            s.mean_ttft_ms,
            s.mean_tpot_ms,
            s.mean_audio_ttfp_ms
        );
    }
}
