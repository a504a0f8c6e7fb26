//! The response head: status, body framing and whether the connection stays open,
//! parsed with `httparse` from the connection's read buffer.

use super::Error;
use super::body::Decoder;

/// Most header lines a response head may have.
pub(crate) const MAX_HEADERS: usize = 64;

/// What the client needs from a response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    /// The status code.
    pub status: u16,
    /// How the body is framed.
    pub body: Decoder,
    /// Whether the connection can carry another request after this response.
    pub keep_alive: bool,
}

/// Parses a head from the start of `buf`: `Ok(None)` while it is incomplete, else the
/// head and its length in bytes. Interim (1xx) heads are the caller's to skip.
pub(crate) fn parse(buf: &[u8]) -> Result<Option<(Head, usize)>, Error> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf)? {
        httparse::Status::Partial => return Ok(None),
        httparse::Status::Complete(n) => n,
    };
    let status = resp.code.unwrap_or_default();
    let mut length: Option<u64> = None;
    let mut chunked = false;
    // Only HTTP/1.1 connections are reused (not HTTP/1.0 keep-alive).
    let mut keep_alive = resp.version == Some(1);
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = parse_length(h.value)?;
            if length.is_some_and(|l| l != n) {
                return Err(Error::ContentLength);
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = last_coding_is_chunked(h.value)?;
        } else if h.name.eq_ignore_ascii_case("connection") {
            let close = String::from_utf8_lossy(h.value)
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("close"));
            keep_alive &= !close;
        }
    }
    let body = if status == 204 || status == 304 || (100..200).contains(&status) {
        Decoder::Done
    } else if chunked {
        Decoder::chunked()
    } else if let Some(n) = length {
        Decoder::length(n)
    } else {
        keep_alive = false;
        Decoder::UntilClose
    };
    Ok(Some((
        Head {
            status,
            body,
            keep_alive,
        },
        len,
    )))
}

/// A `Content-Length` value: decimal digits only.
fn parse_length(v: &[u8]) -> Result<u64, Error> {
    let v = v.trim_ascii();
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return Err(Error::ContentLength);
    }
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(Error::ContentLength)
}

/// Whether `chunked` is the last transfer coding; any other last coding is unsupported.
fn last_coding_is_chunked(v: &[u8]) -> Result<bool, Error> {
    let text = String::from_utf8_lossy(v);
    let last = text.rsplit(',').next().unwrap_or("").trim();
    if last.eq_ignore_ascii_case("chunked") {
        Ok(true)
    } else {
        Err(Error::TransferEncoding(text.chars().take(64).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        let (h, n) = parse(text.as_bytes()).unwrap().unwrap();
        assert_eq!(n, text.len());
        h
    }

    #[test]
    fn framing_and_keep_alive() {
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(
            (h.status, h.body, h.keep_alive),
            (200, Decoder::chunked(), true)
        );
        let h = head("HTTP/1.1 200 OK\r\ncontent-length: 12\r\nconnection: close\r\n\r\n");
        assert_eq!((h.body, h.keep_alive), (Decoder::length(12), false));
        let h = head("HTTP/1.1 500 Internal Server Error\r\n\r\n");
        assert_eq!(
            (h.status, h.body, h.keep_alive),
            (500, Decoder::UntilClose, false)
        );
        let h = head("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n");
        assert!(!h.keep_alive);
        let h = head("HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\n");
        assert!(!h.keep_alive, "HTTP/1.0 connections are not reused");
        let h = head("HTTP/1.1 204 No Content\r\n\r\n");
        assert!(h.body.is_done() && h.keep_alive);
        let h = head("HTTP/1.1 100 Continue\r\n\r\n");
        assert_eq!(h.status, 100);
    }

    #[test]
    fn partial_and_malformed_heads() {
        assert_eq!(parse(b"HTTP/1.1 200 OK\r\ncontent-le").unwrap(), None);
        for bad in [
            "HTTP/2 200 OK\r\n\r\n",
            "HTTP/1.1 abc OK\r\n\r\n",
            "garbage\r\n\r\n",
            "HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
        ] {
            assert!(
                matches!(parse(bad.as_bytes()), Err(Error::Head(_))),
                "{bad}"
            );
        }
        let bad_len = "HTTP/1.1 200 OK\r\ncontent-length: 1x\r\n\r\n";
        assert!(matches!(
            parse(bad_len.as_bytes()),
            Err(Error::ContentLength)
        ));
        let two = "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n";
        assert!(matches!(parse(two.as_bytes()), Err(Error::ContentLength)));
        let gz = "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n";
        assert!(matches!(
            parse(gz.as_bytes()),
            Err(Error::TransferEncoding(_))
        ));
        let mut many = String::from("HTTP/1.1 200 OK\r\n");
        for i in 0..=MAX_HEADERS {
            many.push_str(&format!("x-{i}: v\r\n"));
        }
        many.push_str("\r\n");
        assert!(matches!(parse(many.as_bytes()), Err(Error::Head(_))));
    }
}
