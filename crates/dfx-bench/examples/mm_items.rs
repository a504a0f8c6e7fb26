//! Builds one random-mm body per bucket of the shipped Qwen3-Omni config and reports its
//! size and build time, and the process's peak RSS (`cargo run --release -p dfx-bench
//! --example mm_items [out_dir]`; with `out_dir` the media files are written there).

use std::time::Instant;

use dfx_bench::native::random::media;
use dfx_bench::native::random::mm::Item;

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let out = std::env::args().nth(1);
    let items = [
        (
            "image",
            Item::Image {
                height: 256,
                width: 256,
            },
        ),
        (
            "video",
            Item::Video {
                height: 720,
                width: 1280,
                frames: 2,
            },
        ),
        (
            "audio",
            Item::Audio {
                seconds: 60,
                channels: 3,
            },
        ),
    ];
    for (name, item) in items {
        let t = Instant::now();
        let e = media::encode(&item, 1).expect("encode");
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        println!(
            "{name}: {} bytes ({} base64) in {ms:.1} ms",
            e.bytes.len(),
            e.bytes.len().div_ceil(3) * 4
        );
        if let Some(dir) = &out {
            let ext = match name {
                "image" => "jpg",
                "video" => "mp4",
                _ => "wav",
            };
            std::fs::write(format!("{dir}/{name}.{ext}"), &e.bytes).expect("write");
        }
    }
    println!("peak RSS: {} MB", peak_rss_kb() / 1024);
}
