//! Incremental server-sent-events framing, with the rules of vllm-omni's chat client
//! (`docs/bench.md`, "openai-chat-omni"): bytes arrive in arbitrary TCP pieces (a UTF-8
//! character or a message may be split across reads); messages end at a blank line
//! (`\n\n`) and are trimmed; `:` lines are comments; the exact prefix `data: ` is removed;
//! a pending buffer that already is `data: [DONE]` or `data: <complete JSON>` is emitted
//! without waiting for its blank line (upstream does the same, which decides the read a
//! message is timestamped at).

/// One framed message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SseMessage {
    /// `data: [DONE]` (ignored for timing: the end of the body ends the stream).
    Done,
    /// A JSON payload.
    Json(serde_json::Value),
}

/// Why the stream could not be framed: upstream fails the request on any of them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum SseError {
    /// The bytes of a message are not UTF-8.
    #[error("stream is not UTF-8 text")]
    NotUtf8,
    /// A message that is not `data: <JSON>` (e.g. `data:{…}` without the space, `event:`
    /// lines, multi-line data).
    #[error("malformed stream message: {0}")]
    Malformed(String),
}

/// The framing state of one response body.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a blank line.
    scanned: usize,
}

impl SseParser {
    /// A parser with an empty buffer.
    pub(crate) fn new() -> Self {
        SseParser::default()
    }

    /// Feeds one body read; returns the messages it completed, in order.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseMessage>, SseError> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        // A `\n\n` may straddle the previous read: search from one byte before.
        let mut from = self.scanned.saturating_sub(1);
        while let Some(pos) = find_blank(&self.buf[from..]) {
            let end = from + pos;
            if let Some(m) = message(&self.buf[start..end])? {
                out.push(m);
            }
            start = end + 2;
            from = start;
        }
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        if let Some(m) = self.early()? {
            out.push(m);
            self.buf.clear();
            self.scanned = 0;
        }
        Ok(out)
    }

    /// The end of the body: whatever is left is one last message.
    pub(crate) fn finish(&mut self) -> Result<Option<SseMessage>, SseError> {
        let rest = std::mem::take(&mut self.buf);
        self.scanned = 0;
        message(&rest)
    }

    /// A pending buffer that is already a whole `data: ` message. Only tried when it ends
    /// like a JSON document or `[DONE]`, so a large message split over many reads is not
    /// re-parsed at every read.
    fn early(&self) -> Result<Option<SseMessage>, SseError> {
        let t = self.buf.trim_ascii();
        if !t.starts_with(b"data: ") || !matches!(t.last(), Some(b'}' | b']')) {
            return Ok(None);
        }
        let Ok(text) = std::str::from_utf8(&t[6..]) else {
            return Ok(None);
        };
        let text = text.trim();
        if text == "[DONE]" {
            return Ok(Some(SseMessage::Done));
        }
        Ok(serde_json::from_str(text).ok().map(SseMessage::Json))
    }
}

fn find_blank(b: &[u8]) -> Option<usize> {
    b.windows(2).position(|w| w == b"\n\n")
}

/// One framed message: `None` for blank messages and comments.
fn message(raw: &[u8]) -> Result<Option<SseMessage>, SseError> {
    let text = std::str::from_utf8(raw).map_err(|_| SseError::NotUtf8)?;
    let text = text.trim();
    if text.is_empty() || text.starts_with(':') {
        return Ok(None);
    }
    let payload = text.strip_prefix("data: ").unwrap_or(text);
    if payload == "[DONE]" {
        return Ok(Some(SseMessage::Done));
    }
    serde_json::from_str(payload)
        .map(|v| Some(SseMessage::Json(v)))
        .map_err(|_| SseError::Malformed(payload.chars().take(80).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feed_all(p: &mut SseParser, pieces: &[&[u8]]) -> Vec<Vec<SseMessage>> {
        pieces.iter().map(|b| p.feed(b).unwrap()).collect()
    }

    #[test]
    fn frames_split_pieces_comments_and_done() {
        let mut p = SseParser::new();
        let got = feed_all(
            &mut p,
            &[
                b": keep-alive\n\ndata: {\"a\"",
                b":1}\n",
                b"\ndata: {\"b\":2}\n\ndata: [DO",
                b"NE]\n\n",
            ],
        );
        assert_eq!(got[0], vec![]);
        // Complete JSON is emitted at the read that completed it, before its blank line.
        assert_eq!(got[1], vec![SseMessage::Json(json!({"a": 1}))]);
        assert_eq!(got[2], vec![SseMessage::Json(json!({"b": 2}))]);
        assert_eq!(got[3], vec![SseMessage::Done]);
        assert_eq!(p.finish().unwrap(), None);
    }

    #[test]
    fn utf8_split_across_reads() {
        let msg = "data: {\"t\":\"héllo\"}\n\n".as_bytes();
        let cut = msg.iter().position(|&b| b == 0xC3).unwrap() + 1;
        let mut p = SseParser::new();
        assert!(p.feed(&msg[..cut]).unwrap().is_empty());
        assert_eq!(
            p.feed(&msg[cut..]).unwrap(),
            vec![SseMessage::Json(json!({"t": "héllo"}))]
        );
    }

    #[test]
    fn blank_line_straddling_reads_and_malformed() {
        let mut p = SseParser::new();
        assert!(p.feed(b"data: {\"x\":[1,2").unwrap().is_empty());
        assert_eq!(p.feed(b"]}\n").unwrap().len(), 1);
        assert!(p.feed(b"\n").unwrap().is_empty());
        assert!(matches!(
            p.feed(b"data:{\"nospace\":1}\n\n"),
            Err(SseError::Malformed(_))
        ));
        let mut p = SseParser::new();
        assert!(matches!(
            p.feed(b"event: x\ndata: {}\n\n"),
            Err(SseError::Malformed(_))
        ));
        let mut p = SseParser::new();
        assert_eq!(p.feed(b"data: \xff\xfe\n\n"), Err(SseError::NotUtf8));
        let mut p = SseParser::new();
        assert!(p.feed(b"data: {\"tail\":").unwrap().is_empty());
        assert!(p.finish().is_err());
    }
}
