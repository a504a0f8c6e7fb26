//! Opening a WebSocket session (realtime, native duplex): one handshake with a deadline and
//! a message-size cap.

use std::time::Duration;

use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::error::WsError;

/// The message and frame cap of a session unless it sets its own: 64 MiB.
pub(crate) const MAX_MESSAGE: usize = 64 << 20;
/// Bytes one socket read may take. tungstenite zero-fills that much of its read buffer
/// before every read, also before a poll that finds nothing to read: at its default
/// (128 KiB) that was half of a realtime session's instructions (BENCHMARKS.md, "Scale").
/// 32 KiB still takes a realtime response of three 100 ms deltas (about 20 KiB) in one
/// read; a longer message is read in several.
const READ_BUFFER: usize = 32 << 10;

/// An open client WebSocket.
pub(crate) type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens `url` with messages and frames capped at `max_message` bytes; the handshake must
/// answer within `timeout`.
pub(crate) async fn connect(
    url: &str,
    max_message: usize,
    timeout: Duration,
) -> Result<Ws, WsError> {
    let cfg = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .max_message_size(Some(max_message))
        .max_frame_size(Some(max_message));
    let fut = tokio_tungstenite::connect_async_with_config(url, Some(cfg), true);
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(e)) => Err(WsError::Open {
            url: url.to_string(),
            source: Box::new(e),
        }),
        Err(_) => Err(WsError::OpenTimeout {
            url: url.to_string(),
            timeout,
        }),
    }
}
