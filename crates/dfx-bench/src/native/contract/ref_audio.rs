//! Bad reference audio (voice-clone models): undecodable base64, a `file://` URL of a
//! system file, a URL nobody answers (a loopback port just released, never the
//! internet). Each → 400 envelope within the timeout, and no file content in the reply.

use serde_json::json;

use super::Finding;
use super::expect::error_envelope;
use super::http::{Reply, Target, speech_json};
use crate::native::BenchError;

/// A fragment of `/etc/passwd` that must never come back.
const PASSWD_MARK: &str = "root:";

async fn with_ref(c: &reqwest::Client, t: &Target, ref_audio: &str) -> Result<Reply, BenchError> {
    let mut b = t.speak_body("Hello there.");
    b.insert("task_type".into(), json!("Base"));
    b.insert("ref_audio".into(), json!(ref_audio));
    b.insert("ref_text".into(), json!(super::http::REFERENCE_TEXT));
    speech_json(c, t, &b).await
}

/// `data:audio/wav;base64,` followed by characters outside base64.
pub(crate) async fn bad_base64(c: &reqwest::Client, t: &Target) -> Finding {
    let r = with_ref(c, t, "data:audio/wav;base64,@@not*base64@@").await;
    Finding::of(r, |r| error_envelope(r, 400))
}

/// `file:///etc/passwd`: refused (vllm-omni reads local files only under
/// `--allowed-local-media-path`), and the reply does not carry the file.
pub(crate) async fn file_url(c: &reqwest::Client, t: &Target) -> Finding {
    let r = with_ref(c, t, "file:///etc/passwd").await;
    Finding::of(r, |r| {
        error_envelope(r, 400)?;
        if String::from_utf8_lossy(&r.body).contains(PASSWD_MARK) {
            return Err("the reply carries /etc/passwd content".into());
        }
        Ok(())
    })
}

/// `http://127.0.0.1:<port>/…` on a port bound and released just before.
pub(crate) async fn unreachable_url(c: &reqwest::Client, t: &Target) -> Finding {
    let port = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(a) => a.port(),
        Err(e) => return Finding::fail(String::new(), format!("no free loopback port: {e}")),
    };
    let url = format!("http://127.0.0.1:{port}/dfx-contract-ref.wav");
    Finding::of(with_ref(c, t, &url).await, |r| error_envelope(r, 400))
}
