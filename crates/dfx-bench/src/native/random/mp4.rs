//! A minimal MP4 writer for one H.264 video track: `ftyp`, then `moov` (faststart, like
//! upstream's imageio output) with an `avc1`/`avcC` sample entry and one chunk, then
//! `mdat` with the length-prefixed NAL units. Every sample is a sync sample (no `stss`).

/// What the track holds.
pub struct Track<'a> {
    /// Frame width, pixels.
    pub width: u32,
    /// Frame height, pixels.
    pub height: u32,
    /// Frames per second (the timescale is `fps * 512`).
    pub fps: u32,
    /// Sequence parameter set, NAL header byte included, no start code.
    pub sps: &'a [u8],
    /// Picture parameter set, NAL header byte included, no start code.
    pub pps: &'a [u8],
    /// One NAL unit per frame (header byte included, no start code).
    pub samples: &'a [Vec<u8>],
}

/// Ticks per frame at a timescale of `fps * 512` (ffmpeg's choice).
const TICKS: u32 = 512;

fn boxed(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(body.len() + 8);
    b.extend_from_slice(&((body.len() + 8) as u32).to_be_bytes());
    b.extend_from_slice(kind);
    b.extend_from_slice(body);
    b
}

fn full(kind: &[u8; 4], version_flags: u32, body: &[u8]) -> Vec<u8> {
    let mut b = version_flags.to_be_bytes().to_vec();
    b.extend_from_slice(body);
    boxed(kind, &b)
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn u32s(xs: &[u32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_be_bytes()).collect()
}

const MATRIX: [u32; 9] = [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x4000_0000];

fn avc1(t: &Track<'_>) -> Vec<u8> {
    let sps = t.sps;
    let mut c = vec![
        1,
        sps.get(1).copied().unwrap_or(100),
        sps.get(2).copied().unwrap_or(0),
    ];
    c.push(sps.get(3).copied().unwrap_or(40));
    c.extend_from_slice(&[0xFF, 0xE1]);
    c.extend_from_slice(&(sps.len() as u16).to_be_bytes());
    c.extend_from_slice(sps);
    c.push(1);
    c.extend_from_slice(&(t.pps.len() as u16).to_be_bytes());
    c.extend_from_slice(t.pps);
    if matches!(sps.get(1), Some(100 | 110 | 122 | 244)) {
        // High-profile extension: 4:2:0, 8-bit luma and chroma, no SPS extensions.
        c.extend_from_slice(&[0xFC | 1, 0xF8, 0xF8, 0]);
    }
    let mut e = vec![0u8; 6];
    e.extend_from_slice(&1u16.to_be_bytes());
    e.extend_from_slice(&[0u8; 16]);
    e.extend_from_slice(&(t.width as u16).to_be_bytes());
    e.extend_from_slice(&(t.height as u16).to_be_bytes());
    e.extend_from_slice(&u32s(&[0x0048_0000, 0x0048_0000, 0]));
    e.extend_from_slice(&1u16.to_be_bytes());
    e.extend_from_slice(&[0u8; 32]);
    e.extend_from_slice(&0x18u16.to_be_bytes());
    e.extend_from_slice(&(-1i16).to_be_bytes());
    e.extend_from_slice(&boxed(b"avcC", &c));
    boxed(b"avc1", &e)
}

fn stbl(t: &Track<'_>, mdat_data_offset: u32) -> Vec<u8> {
    let n = t.samples.len() as u32;
    let stsd = full(b"stsd", 0, &cat(&[1u32.to_be_bytes().to_vec(), avc1(t)]));
    let stts = full(b"stts", 0, &u32s(&[1, n, TICKS]));
    let stsc = full(b"stsc", 0, &u32s(&[1, 1, n, 1]));
    let mut sz = u32s(&[0, n]);
    for s in t.samples {
        sz.extend_from_slice(&(s.len() as u32 + 4).to_be_bytes());
    }
    let stsz = full(b"stsz", 0, &sz);
    let stco = full(b"stco", 0, &u32s(&[1, mdat_data_offset]));
    boxed(b"stbl", &cat(&[stsd, stts, stsc, stsz, stco]))
}

fn moov(t: &Track<'_>, mdat_data_offset: u32) -> Vec<u8> {
    let timescale = t.fps * TICKS;
    let duration = t.samples.len() as u32 * TICKS;
    let mut mvhd = u32s(&[0, 0, timescale, duration, 0x10000]);
    mvhd.extend_from_slice(&[1, 0, 0, 0]);
    mvhd.extend_from_slice(&[0u8; 8]);
    mvhd.extend_from_slice(&u32s(&MATRIX));
    mvhd.extend_from_slice(&[0u8; 24]);
    mvhd.extend_from_slice(&2u32.to_be_bytes());
    let mvhd = full(b"mvhd", 0, &mvhd);
    let mut tkhd = u32s(&[0, 0, 1, 0, duration, 0, 0, 0, 0]);
    tkhd.extend_from_slice(&u32s(&MATRIX));
    tkhd.extend_from_slice(&u32s(&[t.width << 16, t.height << 16]));
    let tkhd = full(b"tkhd", 3, &tkhd);
    let mut mdhd = u32s(&[0, 0, timescale, duration]);
    mdhd.extend_from_slice(&[0x55, 0xC4, 0, 0]);
    let mdhd = full(b"mdhd", 0, &mdhd);
    let mut hdlr = u32s(&[0]);
    hdlr.extend_from_slice(b"vide");
    hdlr.extend_from_slice(&[0u8; 12]);
    hdlr.extend_from_slice(b"VideoHandler\0");
    let hdlr = full(b"hdlr", 0, &hdlr);
    let vmhd = full(b"vmhd", 1, &[0u8; 8]);
    let dref = full(
        b"dref",
        0,
        &cat(&[1u32.to_be_bytes().to_vec(), full(b"url ", 1, &[])]),
    );
    let dinf = boxed(b"dinf", &dref);
    let minf = boxed(b"minf", &cat(&[vmhd, dinf, stbl(t, mdat_data_offset)]));
    let mdia = boxed(b"mdia", &cat(&[mdhd, hdlr, minf]));
    let trak = boxed(b"trak", &cat(&[tkhd, mdia]));
    boxed(b"moov", &cat(&[mvhd, trak]))
}

/// The whole file.
pub fn write(t: &Track<'_>) -> Vec<u8> {
    let mut ftyp = b"isom".to_vec();
    ftyp.extend_from_slice(&512u32.to_be_bytes());
    ftyp.extend_from_slice(b"isomiso2avc1mp41");
    let ftyp = boxed(b"ftyp", &ftyp);
    // The moov's size does not depend on the offset it records.
    let moov_len = moov(t, 0).len();
    let data_offset = (ftyp.len() + moov_len + 8) as u32;
    let moov = moov(t, data_offset);
    let data_len: usize = t.samples.iter().map(|s| s.len() + 4).sum();
    let mut out = Vec::with_capacity(data_offset as usize + data_len);
    out.extend_from_slice(&ftyp);
    out.extend_from_slice(&moov);
    out.extend_from_slice(&((data_len + 8) as u32).to_be_bytes());
    out.extend_from_slice(b"mdat");
    for s in t.samples {
        out.extend_from_slice(&(s.len() as u32).to_be_bytes());
        out.extend_from_slice(s);
    }
    out
}

/// The top-level boxes of an MP4 as `(type, offset, size)` (a box walk; for tests and
/// checks).
pub fn top_boxes(b: &[u8]) -> Vec<([u8; 4], usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos + 8 <= b.len() {
        let size = u32::from_be_bytes([b[pos], b[pos + 1], b[pos + 2], b[pos + 3]]) as usize;
        let kind = [b[pos + 4], b[pos + 5], b[pos + 6], b[pos + 7]];
        if size < 8 || pos + size > b.len() {
            break;
        }
        out.push((kind, pos, size));
        pos += size;
    }
    out
}
