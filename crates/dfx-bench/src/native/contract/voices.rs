//! The uploaded-voice lifecycle of `/v1/audio/voices`: upload, list, speak with it (voice
//! clone models), delete, list again, delete again (404).

use reqwest::Method;
use reqwest::header::CONTENT_TYPE;
use serde_json::json;

use super::Finding;
use super::expect::{ok_mentioning, wav_audio};
use super::http::{
    REFERENCE_TEXT, Reply, Target, call, multipart, read, reference_wav, speech_json,
};
use crate::native::BenchError;

/// One step: its label and the reply's check. `Ok` is the step's line, `Err` the
/// scenario's finding (the `detail` text: a string is the domain).
fn step(
    label: &str,
    r: Result<Reply, BenchError>,
    check: impl Fn(&Reply) -> Result<(), String>,
) -> Result<String, String> {
    let r = r.map_err(|e| format!("{label}: {e}"))?;
    check(&r).map_err(|e| format!("{label}: {e} (got {})", r.summary()))?;
    Ok(format!("{label} {}", r.status))
}

async fn upload(c: &reqwest::Client, t: &Target, name: &str) -> Result<Reply, BenchError> {
    let wav = reference_wav();
    let (ctype, body) = multipart(
        &[
            ("name", name),
            ("consent", "dfx-contract"),
            ("ref_text", REFERENCE_TEXT),
        ],
        ("audio_sample", "dfx-contract.wav", "audio/wav", &wav),
    );
    let resp = c
        .post(t.url("/v1/audio/voices"))
        .header(CONTENT_TYPE, ctype)
        .body(body)
        .send()
        .await
        .map_err(BenchError::Request)?;
    read(resp).await
}

fn absent(name: &str) -> impl Fn(&Reply) -> Result<(), String> + '_ {
    move |r| {
        if r.status != 200 {
            return Err(format!("status {} instead of 200", r.status));
        }
        if String::from_utf8_lossy(&r.body).contains(name) {
            return Err(format!("{name:?} is still listed"));
        }
        Ok(())
    }
}

/// A check that the reply has status `want` (its error is a finding's text).
fn status(want: u16) -> impl Fn(&Reply) -> Result<(), String> {
    move |r| {
        (r.status == want)
            .then_some(())
            .ok_or(format!("status {} instead of {want}", r.status))
    }
}

/// The lifecycle's steps: their lines, or the first failed step's finding (the scenario's
/// `detail` text).
async fn steps(
    c: &reqwest::Client,
    t: &Target,
    name: &str,
    clone: bool,
) -> Result<Vec<String>, String> {
    let path = format!("/v1/audio/voices/{name}");
    let mut done = vec![step("upload", upload(c, t, name).await, |r| {
        ok_mentioning(r, name)
    })?];
    let list = call(c, t, Method::GET, "/v1/audio/voices").await;
    done.push(step("list", list, |r| ok_mentioning(r, name))?);
    if clone {
        let b = json!({"model": t.model, "input": "Hello from an uploaded voice.", "voice": name,
            "task_type": "Base", "response_format": "wav"});
        let r = speech_json(c, t, b.as_object().unwrap_or(&Default::default())).await;
        done.push(step("speak", r, wav_audio)?);
    }
    done.push(step(
        "delete",
        call(c, t, Method::DELETE, &path).await,
        status(200),
    )?);
    let list = call(c, t, Method::GET, "/v1/audio/voices").await;
    done.push(step("list", list, absent(name))?);
    done.push(step(
        "delete again",
        call(c, t, Method::DELETE, &path).await,
        status(404),
    )?);
    Ok(done)
}

/// Runs the lifecycle with a fresh voice name; on failure a best-effort delete.
pub(crate) async fn lifecycle(c: &reqwest::Client, t: &Target) -> Finding {
    let name = format!(
        "dfx_contract_{}_{:08x}",
        std::process::id(),
        rand::random::<u32>()
    );
    let clone = dfx_core::contract::is_clone_model(&t.model);
    match steps(c, t, &name, clone).await {
        Ok(done) => Finding::pass(done.join(", ")),
        Err(e) => {
            let _ = call(c, t, Method::DELETE, &format!("/v1/audio/voices/{name}")).await;
            Finding::fail(String::new(), e)
        }
    }
}
