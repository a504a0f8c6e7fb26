//! The request head: the part every request shares (request line, `host`, the client's
//! headers, `accept`) is built once; per request only `x-request-id` and
//! `content-length` are appended, into the connection's reused write buffer.

use reqwest::header::{ACCEPT, HeaderMap};

use super::Endpoint;
use super::Error;

/// The fixed part of every request's head.
#[derive(Debug, Clone)]
pub(crate) struct RequestHead {
    prefix: Vec<u8>,
}

impl RequestHead {
    /// `POST <target> HTTP/1.1`, `host`, then `headers` (names lower-case, as hyper
    /// writes them), then `accept: */*` unless `headers` set one (reqwest's default).
    pub(crate) fn post(endpoint: &Endpoint, headers: &HeaderMap) -> RequestHead {
        let mut prefix = Vec::with_capacity(256);
        prefix.extend_from_slice(b"POST ");
        prefix.extend_from_slice(endpoint.target.as_bytes());
        prefix.extend_from_slice(b" HTTP/1.1\r\nhost: ");
        prefix.extend_from_slice(endpoint.authority.as_bytes());
        prefix.extend_from_slice(b"\r\n");
        for (name, value) in headers {
            prefix.extend_from_slice(name.as_str().as_bytes());
            prefix.extend_from_slice(b": ");
            prefix.extend_from_slice(value.as_bytes());
            prefix.extend_from_slice(b"\r\n");
        }
        if !headers.contains_key(ACCEPT) {
            prefix.extend_from_slice(b"accept: */*\r\n");
        }
        RequestHead { prefix }
    }

    /// Writes the whole head of one request with a `body_len`-byte body into `out`
    /// (cleared first).
    pub(crate) fn write(
        &self,
        out: &mut Vec<u8>,
        request_id: Option<&str>,
        body_len: usize,
    ) -> Result<(), Error> {
        out.clear();
        out.extend_from_slice(&self.prefix);
        if let Some(id) = request_id {
            if !valid_value(id.as_bytes()) {
                return Err(Error::HeaderValue {
                    name: "x-request-id",
                });
            }
            out.extend_from_slice(b"x-request-id: ");
            out.extend_from_slice(id.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"content-length: ");
        let mut digits = [0u8; 20];
        out.extend_from_slice(decimal(body_len as u64, &mut digits));
        out.extend_from_slice(b"\r\n\r\n");
        Ok(())
    }
}

/// What `HeaderValue::from_str` accepts: visible ASCII, space and tab.
fn valid_value(v: &[u8]) -> bool {
    v.iter().all(|&b| b == b'\t' || (b' '..=b'~').contains(&b))
}

/// `n` in decimal, written into the end of `buf`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};

    #[test]
    fn head_of_a_speech_request() {
        let e = Endpoint::parse("http://127.0.0.1:8091/v1/audio/speech").unwrap();
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        let head = RequestHead::post(&e, &h);
        let mut out = Vec::new();
        head.write(&mut out, Some("bench-1-0"), 1234).unwrap();
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "POST /v1/audio/speech HTTP/1.1\r\nhost: 127.0.0.1:8091\r\n\
             content-type: application/json\r\nauthorization: Bearer t\r\n\
             accept: */*\r\nx-request-id: bench-1-0\r\ncontent-length: 1234\r\n\r\n"
        );
        head.write(&mut out, None, 0).unwrap();
        assert!(out.ends_with(b"accept: */*\r\ncontent-length: 0\r\n\r\n"));
        let err = head.write(&mut out, Some("a\r\nx: y"), 1).unwrap_err();
        assert!(matches!(err, Error::HeaderValue { .. }));
    }

    #[test]
    fn decimals() {
        let mut b = [0u8; 20];
        assert_eq!(decimal(0, &mut b), b"0");
        assert_eq!(decimal(u64::MAX, &mut b), u64::MAX.to_string().as_bytes());
    }
}
