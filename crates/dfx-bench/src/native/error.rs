//! Why a native step cannot be prepared or run ([`BenchError`]). `Display` is the message
//! `bench.log`, the step's `errors` and `BenchExit::Native` quote; the suite formats it into
//! those strings at the edge ([`super::NativeBench`]'s `run` and `preflight`).

use std::path::PathBuf;
use std::time::Duration;

use tokio_tungstenite::tungstenite;

use super::dataset::DatasetError;
use super::random::RandomError;
use super::schedule::ScheduleError;

/// Why a native step (speech, chat, realtime, duplex, soak, contract) could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// An entry key, dataset or setting of the step that cannot be used. The message names
    /// the key and what is accepted (the validation text is the domain here).
    #[error("{0}")]
    Input(String),
    /// The dataset cannot be used.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// A `random` / `random-mm` key cannot be used.
    #[error(transparent)]
    Random(#[from] RandomError),
    /// The open-loop arrival schedule cannot be planned.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// A voice-clone row's reference clip cannot be read.
    #[error("cannot read reference clip {}: {why}", .path.display())]
    Clip {
        /// The clip.
        path: PathBuf,
        /// Why (missing, not a regular file, too large, unreadable).
        why: String,
    },
    /// The step needs more file descriptors than the process may open.
    #[error(transparent)]
    Fds(#[from] FdError),
    /// A piece of the step's machinery (runtime, event loop, timer, writer or generator
    /// thread) could not be set up: `what` says which, `source` why.
    #[error("{what}: {source}")]
    Setup {
        /// `cannot start the tokio runtime`, `cannot create the event loop`, …
        what: &'static str,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The entry is not one of the runner that was asked to run it.
    #[error("not a {0} entry")]
    WrongRunner(&'static str),
    /// A soak step that ran no batch.
    #[error("the soak ran no batch")]
    NoBatch,
    /// A file or folder of the trial cannot be created.
    #[error("cannot create {}: {source}", .path.display())]
    Create {
        /// The file or folder.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A request body (or a media item in it) cannot be encoded: `what` says which.
    #[error("cannot encode {what}: {source}")]
    Encode {
        /// `a request body`, `a media item`.
        what: &'static str,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
    /// The server URL is not one the client can use.
    #[error("bad server URL {url:?}: {why}")]
    BadUrl {
        /// The URL.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// A media item cannot be base64-encoded into a request body.
    #[error("cannot encode a media item: {0}")]
    EncodeMedia(#[source] base64::EncodeSliceError),
    /// The HTTP client cannot be built.
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    /// A request could not be sent or got no answer.
    #[error("request failed: {0}")]
    Request(#[source] reqwest::Error),
    /// A reply's body could not be read.
    #[error("reading the reply failed: {0}")]
    ReadReply(#[source] reqwest::Error),
    /// A reply's body is over the contract runner's cap.
    #[error("the reply is over {cap} bytes")]
    ReplyTooLarge {
        /// The cap (bytes).
        cap: usize,
    },
    /// A streamed reply could not be read.
    #[error("reading the stream failed: {0}")]
    ReadStream(#[source] reqwest::Error),
    /// A streamed reply answered 200 and ended before any audio.
    #[error("200 but the stream ended without audio")]
    StreamWithoutAudio,
    /// The `--tokenizer` file cannot be used.
    #[error("tokenizer {}: {why}", .path.display())]
    Tokenizer {
        /// The `tokenizer.json`.
        path: PathBuf,
        /// Why (unreadable, not a tokenizer, empty vocabulary).
        why: String,
    },
    /// A generated image or video cannot be encoded (the encoder's text).
    #[error("{0}")]
    Media(String),
    /// The server or the connection to it broke the exchange (WebSocket sessions); the
    /// message says how (the transport's text is the domain here).
    #[error("{0}")]
    Connection(String),
}

/// Why the step cannot have the file descriptors its connections need.
#[derive(Debug, thiserror::Error)]
pub enum FdError {
    /// `getrlimit` failed.
    #[error("cannot read RLIMIT_NOFILE: {0}")]
    Read(#[source] nix::Error),
    /// `setrlimit` failed.
    #[error("cannot raise RLIMIT_NOFILE from {soft} to {hard}: {source}")]
    Raise {
        /// The soft limit.
        soft: u64,
        /// The hard limit.
        hard: u64,
        /// The system's error.
        #[source]
        source: nix::Error,
    },
    /// Even the hard limit is too low.
    #[error(
        "this step needs about {need} file descriptors ({in_flight} connections in flight + \
         {open} open + {margin} margin) but RLIMIT_NOFILE allows at most {hard}; raise the \
         hard limit (as root: `ulimit -Hn {need}` before the run, `LimitNOFILE={need}` in a \
         systemd unit, `--ulimit nofile={need}:{need}` for a container) or lower \
         max_concurrency"
    )]
    TooLow {
        /// Descriptors needed.
        need: u64,
        /// Connections in flight.
        in_flight: usize,
        /// Descriptors open now.
        open: u64,
        /// Descriptors kept spare (files, pipes, the event loop).
        margin: u64,
        /// The hard limit.
        hard: u64,
    },
}

/// Why a WebSocket session (realtime, native duplex) could not go on; the turn records
/// its text.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WsError {
    /// The socket could not be opened.
    #[error("cannot open {url}: {source}")]
    Open {
        /// The `ws://` address.
        url: String,
        /// tungstenite's error.
        #[source]
        source: Box<tungstenite::Error>,
    },
    /// The opening handshake got no answer in time.
    #[error("cannot open {url}: no answer in {timeout:?}")]
    OpenTimeout {
        /// The `ws://` address.
        url: String,
        /// How long it waited.
        timeout: Duration,
    },
    /// A message could not be sent.
    #[error("send failed: {0}")]
    Send(#[source] Box<tungstenite::Error>),
    /// The connection broke while reading.
    #[error("connection lost: {0}")]
    Lost(#[source] Box<tungstenite::Error>),
    /// The server closed the connection.
    #[error("connection closed by the server")]
    Closed,
}
