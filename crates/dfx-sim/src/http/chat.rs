//! `POST /v1/chat/completions` for omni profiles.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::http::AppState;
use crate::omni::stream::{ChatCtx, OmniGuard, SseBody, whole};
use crate::plan;

/// Largest accepted chat body (media items are inlined as base64).
pub(crate) const MAX_CHAT_BODY_BYTES: usize = 512 * 1024 * 1024;

/// The handler.
pub(crate) async fn chat(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let arrived = Instant::now();
    let result = chat_inner(&st, &headers, &body, arrived).await;
    super::respond(&st, result)
}

/// When the modelled work of a request that `arrived` and whose body is parsed now begins,
/// at `speed`. In real time: on arrival, the parsing overlapped with the modelled prefill
/// (it stands for vLLM's own preprocessing). Sped up K×, the parsing still costs its real
/// wall time `p` (decoding media of up to hundreds of MB does not shrink), so it counts as
/// `p` of the request's real-time life, not `K·p`: the modelled clock starts `p / K` before
/// now. A time-lapsed client (which keeps the time to the headers, sent once the body is
/// parsed, unscaled and stretches the rest by K) then reads what the real-time run reads.
fn modelled_arrival(arrived: Instant, speed: f64) -> Instant {
    let now = Instant::now();
    if !(speed.is_finite() && speed > 1.0) {
        return arrived;
    }
    let parsing = now.saturating_duration_since(arrived);
    now.checked_sub(parsing.div_f64(speed)).unwrap_or(arrived)
}

async fn chat_inner(
    st: &Arc<AppState>,
    headers: &HeaderMap,
    body: &Bytes,
    arrived: Instant,
) -> Result<Response, ApiError> {
    st.check_ready()?;
    let (Some(cfg), Some(engine)) = (st.cfg.omni.as_ref(), st.omni.as_ref()) else {
        return Err(ApiError::not_found(
            format!(
                "The model `{}` does not serve chat completions in the simulator (profile `{}` is a TTS profile; use an omni model or --sim-profile)",
                st.cfg.served_name(),
                st.cfg.profile.name
            ),
            Some("model"),
        ));
    };
    let names = st.cfg.model_names();
    // Parsing decodes and sniffs media (up to hundreds of MB): off the async workers.
    let raw = body.clone();
    let profile = cfg.profile.clone();
    let req =
        tokio::task::spawn_blocking(move || crate::omni::request::parse(&raw, &profile, &names))
            .await
            .map_err(|e| ApiError::internal(format!("parser task failed: {e}")))??;
    st.stats.chat_requests.fetch_add(1, Ordering::Relaxed);
    let index = st.arrivals.fetch_add(1, Ordering::SeqCst);
    let o = &st.cfg.options;
    if let Some(share) = o.faults.error500
        && plan::draws_500(o.seed, index, share)
    {
        st.stats.injected_500.fetch_add(1, Ordering::Relaxed);
        return Err(ApiError::internal(
            "simulated internal server error (fault error500)",
        ));
    }
    let p = crate::omni::plan(cfg, o.seed, &req);
    let total_frames = p.job.audio_frames;
    let inflight = st.stats.enter();
    let (id, mut rx) = engine.submit(p.job, modelled_arrival(arrived, o.speed));
    let mut guard = OmniGuard {
        id,
        engine: engine.clone(),
        stats: st.stats.clone(),
        finished: false,
    };
    if o.faults.crash_at_inflight.is_some_and(|n| inflight >= n) {
        st.crash(inflight);
    }
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let ctx = ChatCtx {
        id: format!("chatcmpl-{:016x}{:08x}", p.draw, id),
        created,
        model: st.cfg.served_name().to_string(),
        prompt_tokens: req.prompt_tokens(),
        include_usage: req.include_usage,
        continuous_usage: req.continuous_usage,
        want_audio: req.want_audio,
        stage_metrics: req.stage_metrics,
        text_finish: p.text_finish,
        draw: p.draw,
        total_frames,
        voice: st.voice_buf.clone(),
        speed: o.speed,
        arrived,
        stall_after: o.faults.stall_after_chunks,
        truncate_after: o.faults.truncate_after_chunks,
    };
    let mut resp = if req.stream {
        let sse = SseBody::new(ctx, rx, guard);
        let stream = futures_util::stream::unfold(sse, |mut s| async move {
            s.next_write().await.map(|w| (w, s))
        });
        let mut r = Response::new(Body::from_stream(stream));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream; charset=utf-8"),
        );
        r
    } else {
        let v = whole(&ctx, &mut rx, &mut guard)
            .await
            .ok_or_else(|| ApiError::internal("server stopped before the response was complete"))?;
        axum::Json(v).into_response()
    };
    if let Some(rid) = headers.get("x-request-id") {
        resp.headers_mut().insert("x-request-id", rid.clone());
    }
    Ok(resp)
}
