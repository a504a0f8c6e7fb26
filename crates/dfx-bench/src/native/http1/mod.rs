//! The HTTP/1.1 pieces of the streamed speech request (the native bench's hot path), free
//! of I/O: plain `http://` only, the URL parsed once per step. The event loop
//! (`super::evloop`) owns the connections and their buffers and drives these.
//!
//! - [`endpoint`]: the parsed URL and the server's address.
//! - [`request`]: the request head, built once per step and completed per request.
//! - [`head`]: the response head (`httparse`), bounded in size.
//! - [`body`]: chunked, `Content-Length` and read-until-close body decoding, bounded
//!   chunk-size lines and trailers.
//!
//! Every limit is fixed, so no response can make the client allocate without bound; every
//! error is an [`Error`] value, never a panic.

pub(crate) mod body;
pub(crate) mod endpoint;
pub(crate) mod head;
pub(crate) mod request;

pub(crate) use body::BodyError;
pub(crate) use endpoint::Endpoint;

use std::io;

/// Why a request or its response failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The server URL is not a plain `http://` URL with a host.
    #[error("bad server URL {url:?}: {why}")]
    Url { url: String, why: String },
    /// The host name did not resolve.
    #[error("cannot resolve {authority}: {source}")]
    Resolve {
        authority: String,
        #[source]
        source: io::Error,
    },
    /// No address of the server accepted a connection.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: io::Error,
    },
    /// A header value holds a byte not allowed in a header (a control character).
    #[error("invalid value of header {name}")]
    HeaderValue { name: &'static str },
    /// Writing the request failed.
    #[error("cannot send the request: {0}")]
    Write(#[source] io::Error),
    /// The connection ended (or failed) before a single byte of the response arrived.
    #[error("connection closed before any response byte{}", cause_suffix(.0))]
    NoResponse(Option<io::Error>),
    /// Reading the response failed after part of it had arrived.
    #[error("cannot read the response: {0}")]
    Read(#[source] io::Error),
    /// The connection ended in the middle of the response.
    #[error("connection closed before the response {during} was complete")]
    Eof { during: &'static str },
    /// The response head is not HTTP/1.x.
    #[error("malformed response head: {0}")]
    Head(#[from] httparse::Error),
    /// The response head did not fit the limit.
    #[error("response head larger than {limit} bytes")]
    HeadTooLarge { limit: usize },
    /// A `Content-Length` that is not one decimal number.
    #[error("invalid content-length header")]
    ContentLength,
    /// A transfer coding other than `chunked` last.
    #[error("unsupported transfer-encoding {0:?}")]
    TransferEncoding(String),
    /// The body's framing is broken.
    #[error("malformed response body: {0}")]
    Body(#[from] BodyError),
}

fn cause_suffix(e: &Option<io::Error>) -> String {
    e.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
}

impl Error {
    /// Whether the server answered nothing to the request (it may not have seen it): the
    /// only case in which a request on a reused connection is sent again.
    pub(crate) fn unanswered(&self) -> bool {
        matches!(self, Error::Write(_) | Error::NoResponse(_))
    }
}
