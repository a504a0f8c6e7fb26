use super::*;

/// Decodes `parts` read by read: the data of each read, and whether the body ended.
fn decode(mut d: Decoder, parts: &[&[u8]]) -> Result<(Vec<Vec<u8>>, bool), BodyError> {
    let mut reads = Vec::new();
    for part in parts {
        let mut got = Vec::new();
        let mut at = 0;
        while at < part.len() && !d.is_done() {
            let (used, data) = d.step(&part[at..])?;
            if let Some(r) = data {
                got.extend_from_slice(&part[at + r.start..at + r.end]);
            }
            at += used;
        }
        reads.push(got);
    }
    Ok((reads, d.is_done()))
}

fn joined(reads: &[Vec<u8>]) -> Vec<u8> {
    reads.concat()
}

const CHUNKED: &[u8] = b"5\r\nhello\r\n1;name=value;x\r\n \r\nA  \r\n0123456789\r\n0\r\n\r\n";

#[test]
fn chunked_split_at_every_byte_boundary() {
    for cut in 0..=CHUNKED.len() {
        let (a, b) = CHUNKED.split_at(cut);
        let (reads, done) = decode(Decoder::chunked(), &[a, b]).unwrap();
        assert!(done, "cut {cut}");
        assert_eq!(joined(&reads), b"hello 0123456789", "cut {cut}");
    }
    // And one byte per read.
    let parts: Vec<&[u8]> = CHUNKED.chunks(1).collect();
    let (reads, done) = decode(Decoder::chunked(), &parts).unwrap();
    assert!(done);
    assert_eq!(joined(&reads), b"hello 0123456789");
}

#[test]
fn chunked_with_trailers_at_every_boundary() {
    let body: &[u8] = b"3\r\nabc\r\n0;last\r\nx-checksum: 1\r\nx-other: two\r\n\r\n";
    for cut in 0..=body.len() {
        let (a, b) = body.split_at(cut);
        let (reads, done) = decode(Decoder::chunked(), &[a, b]).unwrap();
        assert!(done, "cut {cut}");
        assert_eq!(joined(&reads), b"abc");
    }
}

#[test]
fn chunked_stops_at_the_end_of_the_body() {
    let mut d = Decoder::chunked();
    let input = b"2\r\nab\r\n0\r\n\r\nHTTP/1.1 200 OK";
    let (used, data) = d.step(input).unwrap();
    assert_eq!((used, data), (5, Some(3..5)));
    let (used2, data) = d.step(&input[used..]).unwrap();
    assert_eq!(data, None);
    assert!(d.is_done());
    assert_eq!(used + used2, input.len() - "HTTP/1.1 200 OK".len());
}

#[test]
fn malformed_chunked_bodies_are_typed_errors() {
    let cases: [(&[u8], BodyError); 7] = [
        (b"zz\r\n", BodyError::ChunkSize),
        (b"\r\n", BodyError::ChunkSize),
        (b"5\n", BodyError::ChunkSize),
        (b"2 x\r\n", BodyError::ChunkSize),
        (b"2\r\nabX", BodyError::ChunkEnd),
        (b"11111111111111111\r\n", BodyError::ChunkSizeOverflow),
        (b"0\r\nbad\n", BodyError::Trailer),
    ];
    for (input, want) in cases {
        let err = decode(Decoder::chunked(), &[input]).unwrap_err();
        assert_eq!(err, want, "{:?}", String::from_utf8_lossy(input));
    }
}

#[test]
fn size_lines_and_trailers_are_bounded() {
    let mut line = b"1;".to_vec();
    line.resize(MAX_CHUNK_LINE + 10, b'x');
    let err = decode(Decoder::chunked(), &[&line]).unwrap_err();
    assert_eq!(err, BodyError::ChunkLineTooLong);
    let mut zeros = vec![b'0'; MAX_CHUNK_LINE + 1];
    zeros.extend_from_slice(b"\r\n");
    assert_eq!(
        decode(Decoder::chunked(), &[&zeros]).unwrap_err(),
        BodyError::ChunkLineTooLong
    );
    let mut trailers = b"0\r\n".to_vec();
    for _ in 0..MAX_TRAILERS / 8 + 1 {
        trailers.extend_from_slice(b"x: 1234\r\n");
    }
    assert_eq!(
        decode(Decoder::chunked(), &[&trailers]).unwrap_err(),
        BodyError::TrailersTooLong
    );
}

#[test]
fn content_length_and_until_close() {
    let body = b"0123456789";
    for cut in 0..=body.len() {
        let (a, b) = body.split_at(cut);
        let (reads, done) = decode(Decoder::length(10), &[a, b]).unwrap();
        assert!(done);
        assert_eq!(joined(&reads), body);
    }
    let (reads, done) = decode(Decoder::length(4), &[b"abcdef"]).unwrap();
    assert_eq!((joined(&reads), done), (b"abcd".to_vec(), true));
    assert!(Decoder::length(0).is_done());
    let (reads, done) = decode(Decoder::UntilClose, &[b"ab", b"", b"c"]).unwrap();
    assert_eq!((joined(&reads), done), (b"abc".to_vec(), false));
}
