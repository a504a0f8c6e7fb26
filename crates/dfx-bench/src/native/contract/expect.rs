//! What a reply must look like: the OpenAI error envelope of vLLM's `ErrorResponse`
//! (`{"error": {"message": str, "type": str, "param": str | null, "code": int}}`, the
//! code equal to the HTTP status), or audio.
//!
//! Each check's error is the scenario's finding, the text `result.json`'s `contract`
//! `detail` and the trial's failure line quote: a string is the domain here.

use serde_json::Value;

use super::http::Reply;

/// `Ok` when `r` is `status` with the OpenAI error envelope, else what differs.
pub(crate) fn error_envelope(r: &Reply, status: u16) -> Result<(), String> {
    if r.status != status {
        return Err(format!("status {} instead of {status}", r.status));
    }
    if !r.content_type.starts_with("application/json") {
        return Err(format!(
            "content type {:?} instead of application/json",
            r.content_type
        ));
    }
    let v: Value =
        serde_json::from_slice(&r.body).map_err(|e| format!("the body is not JSON ({e})"))?;
    let Some(err) = v.get("error").and_then(Value::as_object) else {
        return Err("the body has no `error` object".into());
    };
    match err.get("message") {
        Some(Value::String(m)) if !m.trim().is_empty() => {}
        _ => return Err("`error.message` is not a non-empty string".into()),
    }
    if !err.get("type").is_some_and(Value::is_string) {
        return Err("`error.type` is not a string".into());
    }
    match err.get("param") {
        Some(Value::Null | Value::String(_)) => {}
        _ => return Err("`error.param` is missing (string or null expected)".into()),
    }
    match err.get("code").and_then(Value::as_u64) {
        Some(c) if c == u64::from(status) => Ok(()),
        _ => Err(format!(
            "`error.code` is {} instead of {status}",
            err.get("code").map_or("missing".into(), Value::to_string)
        )),
    }
}

/// `Ok` when `r` is 200 with a WAV file carrying samples.
pub(crate) fn wav_audio(r: &Reply) -> Result<(), String> {
    if r.status != 200 {
        return Err(format!("status {} instead of 200", r.status));
    }
    if r.body.len() <= 44 || &r.body[..4] != b"RIFF" || &r.body[8..12] != b"WAVE" {
        return Err(format!(
            "the body ({} bytes) is not a WAV file with samples",
            r.body.len()
        ));
    }
    Ok(())
}

/// `Ok` when `r` is 200 (any JSON body mentioning `needle`).
pub(crate) fn ok_mentioning(r: &Reply, needle: &str) -> Result<(), String> {
    if r.status != 200 {
        return Err(format!("status {} instead of 200", r.status));
    }
    if !String::from_utf8_lossy(&r.body).contains(needle) {
        return Err(format!("the body does not name {needle:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, body: &str) -> Reply {
        Reply {
            status,
            content_type: "application/json".into(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_envelope_and_what_breaks_it() {
        let good = r#"{"error": {"message": "Input text cannot be empty", "type": "BadRequestError", "param": null, "code": 400}}"#;
        assert_eq!(error_envelope(&reply(400, good), 400), Ok(()));
        for (status, body, why) in [
            (500, good, "status 500"),
            (400, r#"{"detail": "bad"}"#, "no `error` object"),
            (400, r#"{"error": "bad"}"#, "no `error` object"),
            (
                400,
                r#"{"error": {"message": "", "type": "x", "param": null, "code": 400}}"#,
                "message",
            ),
            (
                400,
                r#"{"error": {"message": "m", "param": null, "code": 400}}"#,
                "type",
            ),
            (
                400,
                r#"{"error": {"message": "m", "type": "x", "code": 400}}"#,
                "param",
            ),
            (
                400,
                r#"{"error": {"message": "m", "type": "x", "param": null, "code": 422}}"#,
                "code",
            ),
            (400, "not json", "not JSON"),
        ] {
            let e = error_envelope(&reply(status, body), 400).unwrap_err();
            assert!(e.contains(why), "{body}: {e}");
        }
        let mut text = reply(400, good);
        text.content_type = "text/plain".into();
        assert!(error_envelope(&text, 400).is_err());
    }

    #[test]
    fn audio_needs_a_wav_with_samples() {
        let mut r = Reply {
            status: 200,
            content_type: "audio/wav".into(),
            body: super::super::http::reference_wav(),
        };
        assert_eq!(wav_audio(&r), Ok(()));
        r.body.truncate(44);
        assert!(wav_audio(&r).is_err());
        r.status = 400;
        assert!(wav_audio(&r).unwrap_err().contains("400"));
    }
}
