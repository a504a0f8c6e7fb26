//! Multimodal items of a chat request (`docs/simulator.md` ("Chat completions")): data
//! URLs decoded, containers sniffed and their headers read — JPEG / PNG dimensions,
//! MP4 track dimensions and frame count, WAV (or MP3) duration — without decoding any
//! pixels or samples, then turned into the prompt tokens the checkpoint would use.
//!
//! The simulator fetches nothing: `http(s)://` and `file://` URLs are refused.

use std::io::Cursor;

use base64::Engine as _;
use serde::Serialize;

use super::profile::MediaRules;

/// Largest decoded media item, bytes.
pub const MAX_ITEM_BYTES: usize = 256 * 1024 * 1024;
/// Largest image or video side, pixels.
pub const MAX_SIDE: u32 = 16_384;
/// Most video frames of one item.
pub(crate) const MAX_VIDEO_FRAMES: u64 = 100_000;
/// Longest audio item, seconds.
pub(crate) const MAX_AUDIO_SECS: f64 = 3_600.0;

/// Why a media item was refused (a 400 for the request).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MediaError {
    /// A remote or local URL: the simulator fetches nothing.
    #[error("only base64 data URLs are accepted (the simulator fetches nothing), got `{0}`")]
    NotFetched(String),
    /// Not `data:<mime>;base64,<data>`.
    #[error("malformed data URL: {0}")]
    BadDataUrl(String),
    /// The payload is not valid base64.
    #[error("invalid base64 in data URL: {0}")]
    BadBase64(String),
    /// Bigger than a bound.
    #[error("{0}")]
    TooLarge(String),
    /// The bytes are not a container of the declared kind the simulator can read.
    #[error("cannot decode {kind}: {reason}")]
    Undecodable {
        /// What the item was read as: `image`, `video` or `audio`.
        kind: &'static str,
        /// What is wrong with the header (or the WAV reader's message).
        reason: String,
    },
}

fn undecodable(kind: &'static str, reason: impl Into<String>) -> MediaError {
    MediaError::Undecodable {
        kind,
        reason: reason.into(),
    }
}

/// What a media item holds, read from its header.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MediaInfo {
    /// A still image.
    Image {
        /// Width, pixels (from the PNG IHDR or the JPEG frame header).
        width: u32,
        /// Height, pixels.
        height: u32,
    },
    /// A video track.
    Video {
        /// Width of the first video track, pixels (sample entry, else track header).
        width: u32,
        /// Height of the first video track, pixels.
        height: u32,
        /// Samples (frames) of the track, from `stsz`, else summed from `stts`.
        frames: u64,
    },
    /// Audio.
    Audio {
        /// Duration, seconds (WAV: samples / rate; MP3: from the constant bit rate).
        duration_s: f64,
        /// Channels, from the WAV format chunk or the MP3 frame header.
        channels: u16,
        /// Sample rate, Hz.
        sample_rate: u32,
    },
}

/// Splits a data URL into its mime type and decoded bytes.
pub(crate) fn decode_data_url(url: &str) -> Result<(String, Vec<u8>), MediaError> {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("file:") {
        let shown: String = url.chars().take(60).collect();
        return Err(MediaError::NotFetched(shown));
    }
    let rest = url
        .strip_prefix("data:")
        .ok_or_else(|| MediaError::BadDataUrl("it does not start with `data:`".into()))?;
    let (meta, data) = rest
        .split_once(',')
        .ok_or_else(|| MediaError::BadDataUrl("no `,` before the payload".into()))?;
    let mime = meta
        .strip_suffix(";base64")
        .ok_or_else(|| MediaError::BadDataUrl("only `;base64` payloads are accepted".into()))?;
    if data.len() / 4 * 3 > MAX_ITEM_BYTES {
        return Err(MediaError::TooLarge(format!(
            "media item larger than {} MiB",
            MAX_ITEM_BYTES >> 20
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim_end())
        .map_err(|e| MediaError::BadBase64(e.to_string()))?;
    Ok((mime.to_ascii_lowercase(), bytes))
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 2)
        .map(|s| u32::from(u16::from_be_bytes([s[0], s[1]])))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn be64(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).map(|s| {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_be_bytes(a)
    })
}

fn check_dims(kind: &'static str, w: u32, h: u32) -> Result<(), MediaError> {
    if w == 0 || h == 0 {
        return Err(undecodable(kind, "zero width or height"));
    }
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(MediaError::TooLarge(format!(
            "{kind} of {w}×{h} exceeds {MAX_SIDE} pixels per side"
        )));
    }
    Ok(())
}

/// Width and height of a JPEG (first SOF marker) or PNG (IHDR).
pub(crate) fn image_info(b: &[u8]) -> Result<MediaInfo, MediaError> {
    const K: &str = "image";
    let (w, h) = if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        if b.get(12..16) != Some(b"IHDR") {
            return Err(undecodable(K, "PNG without IHDR"));
        }
        let w = be32(b, 16).ok_or_else(|| undecodable(K, "truncated PNG"))?;
        let h = be32(b, 20).ok_or_else(|| undecodable(K, "truncated PNG"))?;
        (w, h)
    } else if b.starts_with(&[0xff, 0xd8]) {
        jpeg_dims(b)?
    } else {
        return Err(undecodable(K, "neither JPEG nor PNG"));
    };
    check_dims(K, w, h)?;
    Ok(MediaInfo::Image {
        width: w,
        height: h,
    })
}

fn jpeg_dims(b: &[u8]) -> Result<(u32, u32), MediaError> {
    const K: &str = "image";
    let mut i = 2;
    loop {
        // Markers may be preceded by fill bytes 0xFF.
        while b.get(i) == Some(&0xff) && b.get(i + 1) == Some(&0xff) {
            i += 1;
        }
        if b.get(i) != Some(&0xff) {
            return Err(undecodable(K, "corrupt JPEG marker stream"));
        }
        let m = *b
            .get(i + 1)
            .ok_or_else(|| undecodable(K, "truncated JPEG"))?;
        i += 2;
        match m {
            0xd8 | 0x01 | 0xd0..=0xd7 => continue,
            0xd9 | 0xda => return Err(undecodable(K, "JPEG without a frame header")),
            _ => {}
        }
        let len = be16(b, i).ok_or_else(|| undecodable(K, "truncated JPEG"))? as usize;
        if len < 2 {
            return Err(undecodable(K, "corrupt JPEG segment length"));
        }
        let sof = matches!(m, 0xc0..=0xcf) && !matches!(m, 0xc4 | 0xc8 | 0xcc);
        if sof {
            let h = be16(b, i + 3).ok_or_else(|| undecodable(K, "truncated JPEG"))?;
            let w = be16(b, i + 5).ok_or_else(|| undecodable(K, "truncated JPEG"))?;
            return Ok((w, h));
        }
        i += len;
    }
}

/// Boxes of an MP4 byte range: (type, payload).
fn boxes(b: &[u8]) -> impl Iterator<Item = Result<([u8; 4], &[u8]), MediaError>> + '_ {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        if pos >= b.len() {
            return None;
        }
        let bad = || Some(Err(undecodable("video", "corrupt MP4 box structure")));
        let (Some(size), Some(kind)) = (be32(b, pos), b.get(pos + 4..pos + 8)) else {
            return bad();
        };
        let mut kind4 = [0u8; 4];
        kind4.copy_from_slice(kind);
        let (header, size) = match size {
            0 => (8, (b.len() - pos) as u64),
            1 => match be64(b, pos + 8) {
                Some(s) => (16, s),
                None => return bad(),
            },
            s => (8, u64::from(s)),
        };
        let end = usize::try_from(size).ok().and_then(|s| pos.checked_add(s));
        let Some(end) = end.filter(|e| *e <= b.len() && size >= header as u64) else {
            return bad();
        };
        let payload = &b[pos + header..end];
        pos = end;
        Some(Ok((kind4, payload)))
    })
}

fn find<'a>(b: &'a [u8], kind: &[u8; 4]) -> Result<Option<&'a [u8]>, MediaError> {
    for item in boxes(b) {
        let (k, p) = item?;
        if &k == kind {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

#[derive(Default)]
struct Track {
    video: bool,
    tkhd: (u32, u32),
    entry: (u32, u32),
    frames: u64,
}

fn read_trak(trak: &[u8]) -> Result<Track, MediaError> {
    let mut t = Track::default();
    if let Some(tkhd) = find(trak, b"tkhd")? {
        // Width and height are the last two 16.16 fields of the box.
        let n = tkhd.len();
        if n >= 8 {
            let w = be32(tkhd, n - 8).unwrap_or(0) >> 16;
            let h = be32(tkhd, n - 4).unwrap_or(0) >> 16;
            t.tkhd = (w, h);
        }
    }
    let Some(mdia) = find(trak, b"mdia")? else {
        return Ok(t);
    };
    if let Some(hdlr) = find(mdia, b"hdlr")? {
        t.video = hdlr.get(8..12) == Some(b"vide");
    }
    let Some(stbl) = find(mdia, b"minf")?
        .map(|m| find(m, b"stbl"))
        .transpose()?
        .flatten()
    else {
        return Ok(t);
    };
    if let Some(stsd) = find(stbl, b"stsd")? {
        // version/flags 4, count 4, then a visual sample entry: size 4, type 4, 6
        // reserved, data ref 2, 16 pre-defined/reserved, width 2, height 2.
        let w = be16(stsd, 8 + 32).unwrap_or(0);
        let h = be16(stsd, 8 + 34).unwrap_or(0);
        t.entry = (w, h);
    }
    if let Some(stsz) = find(stbl, b"stsz")? {
        t.frames = u64::from(be32(stsz, 8).unwrap_or(0));
    }
    if t.frames == 0
        && let Some(stts) = find(stbl, b"stts")?
    {
        let count = be32(stts, 4).unwrap_or(0) as usize;
        t.frames = (0..count.min(1 << 20))
            .map_while(|i| be32(stts, 8 + i * 8))
            .map(u64::from)
            .sum();
    }
    Ok(t)
}

/// Dimensions and frame count of the first video track of an MP4 / QuickTime file.
pub(crate) fn video_info(b: &[u8]) -> Result<MediaInfo, MediaError> {
    const K: &str = "video";
    if b.get(4..8) != Some(b"ftyp") {
        return Err(undecodable(K, "not an MP4 file (no `ftyp` box)"));
    }
    let moov = find(b, b"moov")?.ok_or_else(|| undecodable(K, "MP4 without a `moov` box"))?;
    for item in boxes(moov) {
        let (k, p) = item?;
        if &k != b"trak" {
            continue;
        }
        let t = read_trak(p)?;
        if !t.video {
            continue;
        }
        let (w, h) = if t.entry.0 > 0 && t.entry.1 > 0 {
            t.entry
        } else {
            t.tkhd
        };
        check_dims(K, w, h)?;
        if t.frames == 0 {
            return Err(undecodable(K, "video track without samples"));
        }
        if t.frames > MAX_VIDEO_FRAMES {
            return Err(MediaError::TooLarge(format!(
                "video of {} frames exceeds {MAX_VIDEO_FRAMES}",
                t.frames
            )));
        }
        return Ok(MediaInfo::Video {
            width: w,
            height: h,
            frames: t.frames,
        });
    }
    Err(undecodable(K, "MP4 without a video track"))
}

/// Duration, channels and rate of a WAV (sniffed by its RIFF/WAVE header whatever the
/// declared mime type) or of a constant-bit-rate MP3.
pub(crate) fn audio_info(b: &[u8]) -> Result<MediaInfo, MediaError> {
    const K: &str = "audio";
    let (duration_s, channels, sample_rate) = if b.starts_with(b"RIFF")
        && b.get(8..12) == Some(b"WAVE")
    {
        let r = hound::WavReader::new(Cursor::new(b)).map_err(|e| undecodable(K, e.to_string()))?;
        let spec = r.spec();
        if spec.sample_rate == 0 || spec.channels == 0 {
            return Err(undecodable(K, "WAV with zero rate or channels"));
        }
        let secs = f64::from(r.duration()) / f64::from(spec.sample_rate);
        (secs, spec.channels, spec.sample_rate)
    } else {
        mp3_info(b)?
    };
    if duration_s <= 0.0 {
        return Err(undecodable(K, "empty audio"));
    }
    if duration_s > MAX_AUDIO_SECS {
        return Err(MediaError::TooLarge(format!(
            "audio of {duration_s:.0} s exceeds {MAX_AUDIO_SECS} s"
        )));
    }
    Ok(MediaInfo::Audio {
        duration_s,
        channels,
        sample_rate,
    })
}

/// MPEG-1/2 layer III at a constant bit rate: duration from the first frame header.
fn mp3_info(b: &[u8]) -> Result<(f64, u16, u32), MediaError> {
    const K: &str = "audio";
    let mut off = 0usize;
    if b.starts_with(b"ID3") && b.len() >= 10 {
        let size = b[6..10]
            .iter()
            .fold(0usize, |a, x| (a << 7) | usize::from(x & 0x7f));
        off = 10 + size;
    }
    let h = be32(b, off).ok_or_else(|| undecodable(K, "neither WAV nor MP3"))?;
    if h >> 21 != 0x7ff {
        return Err(undecodable(K, "neither WAV nor MP3"));
    }
    let version = (h >> 19) & 3; // 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5
    let layer = (h >> 17) & 3; // 1 = layer III
    let br_idx = ((h >> 12) & 0xf) as usize;
    let sr_idx = ((h >> 10) & 3) as usize;
    if layer != 1 || version == 1 || br_idx == 0 || br_idx == 15 || sr_idx == 3 {
        return Err(undecodable(K, "unsupported MP3 frame header"));
    }
    const BR1: [u32; 15] = [
        0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320,
    ];
    const BR2: [u32; 15] = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
    const SR: [u32; 3] = [44_100, 48_000, 32_000];
    let kbps = if version == 3 {
        BR1[br_idx]
    } else {
        BR2[br_idx]
    };
    let rate = SR[sr_idx]
        >> if version == 3 {
            0
        } else if version == 2 {
            1
        } else {
            2
        };
    let channels = if (h >> 6) & 3 == 3 { 1 } else { 2 };
    let secs = (b.len() - off) as f64 * 8.0 / (f64::from(kbps) * 1000.0);
    Ok((secs, channels, rate))
}

/// Qwen-style resize: both sides to multiples of `factor`, the area brought within
/// `[min_pixels, max_pixels]` (rounding like Python's `round`).
fn smart_resize(h: u32, w: u32, factor: u32, min_px: u64, max_px: u64) -> (u64, u64) {
    let f = f64::from(factor.max(1));
    let (hf, wf) = (f64::from(h), f64::from(w));
    let mut hb = ((hf / f).round_ties_even() * f).max(f);
    let mut wb = ((wf / f).round_ties_even() * f).max(f);
    if hb * wb > max_px as f64 {
        let beta = (hf * wf / max_px as f64).sqrt();
        hb = ((hf / beta / f).floor() * f).max(f);
        wb = ((wf / beta / f).floor() * f).max(f);
    } else if hb * wb < min_px as f64 {
        let beta = (min_px as f64 / (hf * wf)).sqrt();
        hb = (hf * beta / f).ceil() * f;
        wb = (wf * beta / f).ceil() * f;
    }
    (
        hb as u64 / u64::from(factor.max(1)),
        wb as u64 / u64::from(factor.max(1)),
    )
}

/// Audio encoder tokens for `secs` of audio: mel frames at 100 per second, 13 tokens per
/// full 100 frames, the remainder downsampled three times by 2 (Qwen3-Omni's rule).
pub(crate) fn audio_tokens(rules: &MediaRules, secs: f64) -> u64 {
    let frames = (secs * 100.0).floor() as u64;
    let full = frames / 100 * u64::from(rules.audio_tokens_per_100_frames);
    let rest = frames % 100;
    let tail = if rest == 0 {
        0
    } else {
        let a = (rest - 1) / 2 + 1;
        let b = (a - 1) / 2 + 1;
        (b - 1) / 2 + 1
    };
    full + tail
}

/// Prompt tokens of one item (wrapping markers included).
pub fn tokens(rules: &MediaRules, info: &MediaInfo) -> u64 {
    let factor = rules.patch * rules.spatial_merge;
    let wrap = u64::from(rules.item_wrap_tokens);
    match *info {
        MediaInfo::Image { width, height } => {
            let (gh, gw) = smart_resize(height, width, factor, rules.min_pixels, rules.max_pixels);
            gh * gw + wrap
        }
        MediaInfo::Video {
            width,
            height,
            frames,
        } => {
            let (gh, gw) = smart_resize(
                height,
                width,
                factor,
                rules.min_pixels,
                rules.video_max_pixels,
            );
            let tp = u64::from(rules.temporal_patch.max(1));
            frames.div_ceil(tp) * gh * gw + wrap
        }
        MediaInfo::Audio { duration_s, .. } => audio_tokens(rules, duration_s) + wrap,
    }
}
