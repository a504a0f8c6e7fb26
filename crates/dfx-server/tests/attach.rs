//! Attach mode: nothing is launched or stopped, readiness is still checked.

mod common;

use std::time::Duration;

use common::*;
use dfx_core::server::{ServerError, ServerLauncher};
use dfx_server::AttachLauncher;
use dfx_server::probe::{Probe, http_get};

#[test]
fn attaches_to_a_running_server_and_leaves_it_running() {
    let dir = tempfile::tempdir().unwrap();
    let running = launcher()
        .start_managed(&spec(&[]), &ctx(dir.path(), Duration::from_secs(30)))
        .unwrap();
    let url = format!(
        "http://127.0.0.1:{}/",
        dfx_core::server::RunningServer::port(&running)
    );
    let mut attach = AttachLauncher::new(&url).unwrap();
    assert_eq!(attach.name(), "attach");
    assert!(attach.availability(&spec(&[])).is_ok());
    let attach_ctx = ctx(&dir.path().join("attach"), Duration::from_secs(5));
    let mut server = attach.start(&spec(&[]), &attach_ctx).unwrap();
    assert_eq!(server.base_url(), url.trim_end_matches('/'));
    assert_eq!(server.exit_status(), None);
    assert_eq!(server.log_path(), None);
    server.stop().unwrap();
    // Stopping the attached handle stopped nothing; nothing was launched either.
    assert_eq!(
        http_get(
            "127.0.0.1",
            dfx_core::server::RunningServer::port(&running),
            "/health",
            Duration::from_secs(5)
        ),
        Probe::Status(200)
    );
    assert!(!attach_ctx.dir.exists());
    drop(running);
}

#[test]
fn attach_to_nothing_says_why() {
    let port = dfx_server::probe::free_port().unwrap();
    let mut attach = AttachLauncher::new(&format!("http://127.0.0.1:{port}")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = attach
        .start(&spec(&[]), &ctx(dir.path(), Duration::from_millis(500)))
        .err()
        .unwrap();
    assert!(matches!(err, ServerError::AttachNotReady { .. }));
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "attached server at http://127.0.0.1:{port} is not ready: GET /health failed: "
        )),
        "{msg}"
    );
}
