//! Synthetic media containers for tests and calibration: headers that the parsers of
//! [`super::media`] read exactly as they read real files (a JPEG with a frame header, a
//! PNG with its IHDR, an MP4 box tree with an `avc1` track), plus real WAV files.
//! Pixel data is absent or noise: nothing here is meant to be displayed.

use base64::Engine as _;

/// A JPEG stream: SOI, an APP0 segment, a baseline SOF0 of `w`×`h`, EOI.
pub fn jpeg(w: u16, h: u16) -> Vec<u8> {
    let mut b = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10];
    b.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
    b.extend_from_slice(&[0xff, 0xc0, 0x00, 0x11, 0x08]);
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    b.extend_from_slice(&[0xff, 0xd9]);
    b
}

/// A PNG signature and IHDR chunk of `w`×`h`.
pub fn png(w: u32, h: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
    b
}

fn mp4_box(kind: &[u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut b = ((payload.len() + 8) as u32).to_be_bytes().to_vec();
    b.extend_from_slice(kind);
    b.extend_from_slice(payload);
    b
}

/// An MP4 with one `avc1` video track of `w`×`h` and `frames` samples (box structure
/// only; `mdat` holds `frames` bytes).
pub fn mp4(w: u16, h: u16, frames: u32) -> Vec<u8> {
    let mut tkhd = vec![0u8; 84];
    tkhd[76..80].copy_from_slice(&(u32::from(w) << 16).to_be_bytes());
    tkhd[80..84].copy_from_slice(&(u32::from(h) << 16).to_be_bytes());
    let mut hdlr = vec![0u8; 8];
    hdlr.extend_from_slice(b"vide");
    hdlr.extend_from_slice(&[0u8; 12]);
    hdlr.extend_from_slice(b"VideoHandler\0");
    let mut entry = vec![0u8; 78];
    entry[24..26].copy_from_slice(&w.to_be_bytes());
    entry[26..28].copy_from_slice(&h.to_be_bytes());
    let mut stsd = vec![0, 0, 0, 0, 0, 0, 0, 1];
    stsd.extend_from_slice(&mp4_box(b"avc1", &entry));
    let mut stsz = vec![0u8; 8];
    stsz.extend_from_slice(&frames.to_be_bytes());
    stsz.extend(std::iter::repeat_n(0u8, 4 * frames as usize));
    let mut stts = vec![0, 0, 0, 0, 0, 0, 0, 1];
    stts.extend_from_slice(&frames.to_be_bytes());
    stts.extend_from_slice(&512u32.to_be_bytes());
    let stbl = [
        mp4_box(b"stsd", &stsd),
        mp4_box(b"stts", &stts),
        mp4_box(b"stsz", &stsz),
    ]
    .concat();
    let minf = mp4_box(b"minf", &mp4_box(b"stbl", &stbl));
    let mdia = mp4_box(b"mdia", &[mp4_box(b"hdlr", &hdlr), minf].concat());
    let trak = mp4_box(b"trak", &[mp4_box(b"tkhd", &tkhd), mdia].concat());
    let moov = mp4_box(b"moov", &[mp4_box(b"mvhd", &[0u8; 100]), trak].concat());
    let ftyp = mp4_box(b"ftyp", b"isom\0\0\x02\0isomiso2avc1mp41");
    [ftyp, moov, mp4_box(b"mdat", &vec![0u8; frames as usize])].concat()
}

/// A 16-bit PCM WAV of `secs` seconds, `channels` channels at `rate` Hz (noise, like
/// random-mm's audio items).
pub fn wav(secs: f64, channels: u16, rate: u32) -> Vec<u8> {
    let spec = hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut cur = std::io::Cursor::new(Vec::new());
    {
        let Ok(mut w) = hound::WavWriter::new(&mut cur, spec) else {
            return Vec::new();
        };
        let n = (secs * f64::from(rate)) as u64 * u64::from(channels);
        let mut x: u32 = 12345;
        for _ in 0..n {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let _ = w.write_sample(((x >> 16) as i16) / 2);
        }
        let _ = w.finalize();
    }
    cur.into_inner()
}

/// `data:<mime>;base64,<bytes>`.
pub fn data_url(mime: &str, bytes: &[u8]) -> String {
    format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}
