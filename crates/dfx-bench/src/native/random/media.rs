//! Noise payloads of `random-mm` items, made from a per-item seed (ChaCha8): an RGB noise
//! JPEG (quality 75, PIL's default), noise frames as an H.264 MP4 (less-avc's lossless
//! I_PCM frames at 30 fps, in a hand-written faststart MP4), and ±0.5 noise as a 48 kHz
//! 16-bit WAV. Upstream's bytes differ (numpy noise, libx264 at crf 23); the shapes,
//! frame counts and durations are the same.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::mm::Item;
use super::mp4;
use crate::native::BenchError;

/// Audio items' sample rate (upstream's).
pub(crate) const AUDIO_RATE: u32 = 48_000;
/// Video items' frame rate (upstream's).
pub(crate) const VIDEO_FPS: u32 = 30;

/// An encoded item: its content-part type, data-URL mime and bytes.
pub struct Encoded {
    /// `image_url`, `video_url` or `audio_url`.
    pub part: &'static str,
    /// `image/jpeg`, `video/mp4`, or `audio/mpeg` (a WAV under an MPEG label, as upstream).
    pub mime: &'static str,
    /// The encoded file (JPEG, MP4 or WAV), before base64.
    pub bytes: Vec<u8>,
}

/// Encodes `item` with the noise of `seed`.
pub fn encode(item: &Item, seed: u64) -> Result<Encoded, BenchError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Ok(match *item {
        Item::Image { height, width } => Encoded {
            part: "image_url",
            mime: "image/jpeg",
            bytes: jpeg(&mut rng, width, height)?,
        },
        Item::Video {
            height,
            width,
            frames,
        } => Encoded {
            part: "video_url",
            mime: "video/mp4",
            bytes: video(&mut rng, width, height, frames)?,
        },
        Item::Audio { seconds, channels } => Encoded {
            part: "audio_url",
            mime: "audio/mpeg",
            bytes: wav(&mut rng, seconds, channels),
        },
    })
}

fn noise(rng: &mut ChaCha8Rng, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rng.fill_bytes(&mut v);
    v
}

/// A `width × height` RGB noise JPEG.
pub fn jpeg(rng: &mut ChaCha8Rng, width: u32, height: u32) -> Result<Vec<u8>, BenchError> {
    let (w, h) = (
        u16::try_from(width).map_err(|_| BenchError::Media("image too wide for JPEG".into()))?,
        u16::try_from(height).map_err(|_| BenchError::Media("image too tall for JPEG".into()))?,
    );
    let pixels = noise(rng, width as usize * height as usize * 3);
    let mut out = Vec::with_capacity(pixels.len());
    jpeg_encoder::Encoder::new(&mut out, 75)
        .encode(&pixels, w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| BenchError::Media(format!("cannot encode a JPEG: {e}")))?;
    Ok(out)
}

/// `seconds` of ±0.5 uniform noise, `channels` channels at 48 kHz, 16-bit PCM WAV.
pub fn wav(rng: &mut ChaCha8Rng, seconds: u32, channels: u32) -> Vec<u8> {
    let samples = u64::from(seconds) * u64::from(AUDIO_RATE) * u64::from(channels);
    let data_len = samples * 2;
    let mut out = Vec::with_capacity(44 + data_len as usize);
    let ch = channels as u16;
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&((36 + data_len) as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&ch.to_le_bytes());
    out.extend_from_slice(&AUDIO_RATE.to_le_bytes());
    out.extend_from_slice(&(AUDIO_RATE * channels * 2).to_le_bytes());
    out.extend_from_slice(&(ch * 2).to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data_len as u32).to_le_bytes());
    // Uniform 16-bit noise from the generator, halved: uniform in [-0.5, 0.5) of full
    // scale. One bulk fill and an in-place shift keep this fast in unoptimised builds too
    // (a 60 s 3-channel item is 8.6 M samples).
    let start = out.len();
    out.resize(start + data_len as usize, 0);
    rng.fill_bytes(&mut out[start..]);
    // Four little-endian samples per step: shift each 16-bit lane right by one, keeping
    // its sign bit (an arithmetic shift per lane).
    const LOW15: u64 = 0x7FFF_7FFF_7FFF_7FFF;
    const SIGN: u64 = 0x8000_8000_8000_8000;
    let mut words = out[start..].chunks_exact_mut(8);
    for w in &mut words {
        let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        w.copy_from_slice(&(((x >> 1) & LOW15) | (x & SIGN)).to_le_bytes());
    }
    for s in words.into_remainder().chunks_exact_mut(2) {
        let v = i16::from_le_bytes([s[0], s[1]]) >> 1;
        s.copy_from_slice(&v.to_le_bytes());
    }
    out
}

fn plane(data: &[u8], stride: u32) -> less_avc::ycbcr_image::DataPlane<'_> {
    less_avc::ycbcr_image::DataPlane {
        data,
        stride: stride as usize,
        bit_depth: less_avc::BitDepth::Depth8,
    }
}

/// `frames` YCbCr 4:2:0 noise frames, H.264 (I_PCM) in an MP4.
pub fn video(
    rng: &mut ChaCha8Rng,
    width: u32,
    height: u32,
    frames: u32,
) -> Result<Vec<u8>, BenchError> {
    use less_avc::ycbcr_image::{Planes, YCbCrImage};
    if !width.is_multiple_of(2) || !height.is_multiple_of(2) {
        return Err(BenchError::Media(format!(
            "video {width}x{height}: width and height must be even (4:2:0)"
        )));
    }
    // less-avc wants planes padded to whole macroblocks; the SPS crops to the real size.
    let (pw, ph) = (width.div_ceil(16) * 16, height.div_ceil(16) * 16);
    let (cw, chh) = (pw / 2, ph / 2);
    let mut samples = Vec::with_capacity(frames as usize);
    let mut params = None;
    let mut encoder = None;
    for _ in 0..frames {
        let y = noise(rng, (pw * ph) as usize);
        let u = noise(rng, (cw * chh) as usize);
        let v = noise(rng, (cw * chh) as usize);
        let img = YCbCrImage {
            planes: Planes::YCbCr((plane(&y, pw), plane(&u, cw), plane(&v, cw))),
            width,
            height,
        };
        let nal = match encoder.as_mut() {
            None => {
                let (init, enc) = less_avc::LessEncoder::new(&img).map_err(|e| {
                    BenchError::Media(format!("cannot encode a video frame: {e:?}"))
                })?;
                params = Some((init.sps.to_nal_unit(), init.pps.to_nal_unit()));
                encoder = Some(enc);
                init.frame.to_nal_unit()
            }
            Some(enc) => enc
                .encode(&img)
                .map_err(|e| BenchError::Media(format!("cannot encode a video frame: {e:?}")))?
                .to_nal_unit(),
        };
        samples.push(nal);
    }
    let (sps, pps) =
        params.ok_or_else(|| BenchError::Media("a video needs at least one frame".into()))?;
    Ok(mp4::write(&mp4::Track {
        width,
        height,
        fps: VIDEO_FPS,
        sps: &sps,
        pps: &pps,
        samples: &samples,
    }))
}
