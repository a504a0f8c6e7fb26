//! The process launcher against the fake server: every failure explains itself, and no
//! process of a server group survives (checked in /proc).

mod common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::*;
use dfx_core::server::{ResolvedDeploy, RunningServer, ServerError, ServerLauncher, ServerType};
use dfx_server::probe::{Probe, http_get};
use dfx_server::{LauncherConfig, ProcessLauncher, died_during_trial, group_members};

const LONG: Duration = Duration::from_secs(30);

#[test]
fn ready_server_is_healthy_logged_and_fully_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let spec = spec(&[
        ("DFX_FAKE_GRANDCHILD", "1"),
        ("HF_TOKEN", "hf_secret_value"),
        ("MY_FLAG", "on"),
    ]);
    let server = launcher().start_managed(&spec, &ctx).unwrap();
    let pgid = server.pgid();
    assert_eq!(
        http_get("127.0.0.1", server.port(), "/health", LONG),
        Probe::Status(200)
    );
    assert_eq!(
        server.base_url(),
        format!("http://127.0.0.1:{}", server.port())
    );
    let procs = wait_announced(&log_of(&ctx), 2);
    assert!(procs.iter().all(|p| p.2 == pgid), "{procs:?}");
    assert_eq!(group_members(pgid).len(), 2);
    assert!(dfx_server::live_groups().contains(&pgid));

    let command = std::fs::read_to_string(ctx.dir.join("command.txt")).unwrap();
    let port = server.port();
    assert!(
        command.starts_with(&format!(
            "{} serve fake/model --host 127.0.0.1 --port {port} --omni --stage-init-timeout 600 --init-timeout 900\n",
            fake()
        )),
        "{command}"
    );
    assert!(
        command.contains("#   VLLM_WORKER_MULTIPROC_METHOD=spawn\n"),
        "{command}"
    );
    assert!(
        command.contains("#   HF_TOKEN='<redacted>'\n") && !command.contains("hf_secret_value"),
        "{command}"
    );
    assert!(command.contains("#   MY_FLAG=on\n"), "{command}");

    Box::new(server).stop().unwrap();
    assert_gone(pgid, &procs.iter().map(|p| p.1).collect::<Vec<_>>());
    assert!(!dfx_server::live_groups().contains(&pgid));
}

#[test]
fn exit_at_start_reports_status_and_log_tail() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let err = launcher()
        .start(
            &spec(&[
                ("DFX_FAKE_EXIT_AT_START", "3"),
                ("DFX_FAKE_GRANDCHILD", "1"),
            ]),
            &ctx,
        )
        .err()
        .expect("must fail");
    let msg = err.to_string();
    assert!(
        matches!(err, ServerError::ExitedBeforeReady { .. }),
        "{msg}"
    );
    assert!(
        msg.starts_with("server exited with exit status 3 before becoming ready\n"),
        "{msg}"
    );
    assert!(
        msg.contains(&format!(
            "--- server log tail ({}) ---",
            log_of(&ctx).display()
        )),
        "{msg}"
    );
    // Exactly the last 40 lines (the grandchild's announcement may land among them).
    let tail = msg.split_once(" ---\n").unwrap().1;
    assert_eq!(tail.lines().count(), 40, "{tail}");
    let own: Vec<&str> = tail
        .lines()
        .filter(|l| !l.starts_with("fake-server role=grandchild"))
        .collect();
    assert_eq!(own.last(), Some(&"fatal: fake startup failure"), "{tail}");
    assert!(own.contains(&"startup log line 50"), "{tail}");
    assert!(!tail.contains("startup log line 10\n"), "{tail}");
    assert_log_processes_gone(&log_of(&ctx));
}

#[test]
fn never_ready_times_out_with_log_tail() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let mut spec = spec(&[
        ("DFX_FAKE_NEVER_READY", "1"),
        ("DFX_FAKE_IGNORE_SIGTERM", "1"),
    ]);
    spec.ready_timeout = Some(Duration::from_millis(800));
    let started = Instant::now();
    let err = launcher().start(&spec, &ctx).err().expect("must time out");
    let msg = err.to_string();
    assert!(
        matches!(err, ServerError::NotReady { waited, .. } if waited >= Duration::from_millis(800)),
        "{msg}"
    );
    assert!(msg.starts_with("server not ready after "), "{msg}");
    assert!(
        msg.contains("(GET /health never returned 200)") && msg.contains("initialising forever"),
        "{msg}"
    );
    assert!(started.elapsed() < LONG);
    assert_log_processes_gone(&log_of(&ctx));
}

#[test]
fn health_other_than_200_is_not_ready_but_404_falls_back_to_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let ctx503 = ctx(&dir.path().join("a"), LONG);
    let mut spec503 = spec(&[("DFX_FAKE_HEALTH", "503")]);
    spec503.ready_timeout = Some(Duration::from_millis(600));
    let err = launcher()
        .start(&spec503, &ctx503)
        .err()
        .expect("503 is not ready");
    assert!(matches!(err, ServerError::NotReady { .. }), "{err}");
    assert_log_processes_gone(&log_of(&ctx503));

    let ctx404 = ctx(&dir.path().join("b"), LONG);
    let server = launcher()
        .start_managed(&spec(&[("DFX_FAKE_HEALTH", "404")]), &ctx404)
        .unwrap();
    let pgid = server.pgid();
    drop(server);
    assert_gone(pgid, &[]);
}

#[test]
fn slow_start_within_the_timeout_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), Duration::from_secs(20));
    let server = launcher()
        .start_managed(&spec(&[("DFX_FAKE_READY_DELAY_MS", "700")]), &ctx)
        .unwrap();
    assert_eq!(
        http_get("127.0.0.1", server.port(), "/health", LONG),
        Probe::Status(200)
    );
    let pgid = server.pgid();
    Box::new(server).stop().unwrap();
    assert_gone(pgid, &[]);
}

#[test]
fn crash_during_trial_is_detected_with_status_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let spec = spec(&[
        // Long enough that a loaded machine still sees the server ready before it crashes.
        ("DFX_FAKE_CRASH_AFTER_MS", "1000"),
        ("DFX_FAKE_GRANDCHILD", "1"),
    ]);
    let mut server: Box<dyn RunningServer> = launcher().start(&spec, &ctx).unwrap();
    let procs = wait_announced(&log_of(&ctx), 2);
    let deadline = Instant::now() + LONG;
    let err = loop {
        if let Some(e) = died_during_trial(server.as_mut()) {
            break e;
        }
        assert!(Instant::now() < deadline, "crash never detected");
        std::thread::sleep(Duration::from_millis(20));
    };
    let msg = err.to_string();
    assert!(matches!(err, ServerError::DiedDuringTrial { .. }), "{msg}");
    assert!(
        msg.starts_with("server exited with exit status 7 during the benchmark\n"),
        "{msg}"
    );
    assert!(msg.ends_with("fake crash after 1000 ms"), "{msg}");
    // The grandchild outlived its parent; stopping the dead server still sweeps the group.
    let grandchild = procs.iter().find(|p| p.0 == "grandchild").unwrap().1;
    assert!(alive(grandchild));
    server.stop().unwrap();
    assert_log_processes_gone(&log_of(&ctx));
}

#[test]
fn death_by_signal_names_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let spec = spec(&[
        ("DFX_FAKE_CRASH_AFTER_MS", "100"),
        ("DFX_FAKE_CRASH_SIGNAL", "9"),
    ]);
    let mut server = launcher().start_managed(&spec, &ctx).unwrap();
    let deadline = Instant::now() + LONG;
    while server.exit_status().is_none() {
        assert!(Instant::now() < deadline, "crash never detected");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = server.exit_status();
    assert_eq!(
        status.map(|s| s.to_string()).as_deref(),
        Some("signal 9 (SIGKILL)")
    );
    assert_eq!(
        status,
        Some(dfx_core::server::ExitStatus::Signal {
            number: 9,
            name: "SIGKILL"
        })
    );
    let pgid = server.pgid();
    drop(server);
    assert_gone(pgid, &[]);
}

#[test]
fn sigterm_ignoring_server_and_grandchild_are_killed_after_grace() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let spec = spec(&[
        ("DFX_FAKE_IGNORE_SIGTERM", "1"),
        ("DFX_FAKE_GRANDCHILD", "1"),
    ]);
    let server = launcher().start_managed(&spec, &ctx).unwrap();
    let procs = wait_announced(&log_of(&ctx), 2);
    let started = Instant::now();
    Box::new(server).stop().unwrap();
    // Both ignored SIGTERM, so the group was only emptied by SIGKILL after the grace.
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_gone(procs[0].2, &procs.iter().map(|p| p.1).collect::<Vec<_>>());
}

#[test]
fn dropping_the_server_tears_the_group_down() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let server = launcher()
        .start_managed(&spec(&[("DFX_FAKE_GRANDCHILD", "1")]), &ctx)
        .unwrap();
    wait_announced(&log_of(&ctx), 2);
    drop(server);
    assert_log_processes_gone(&log_of(&ctx));
}

#[test]
fn port_already_answering_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let stale = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = stale.local_addr().unwrap().port();
    let mut launcher = ProcessLauncher::new(LauncherConfig {
        port: Some(port),
        ..config()
    });
    let err = launcher.start(&spec(&[]), &ctx).err().expect("port in use");
    assert_eq!(
        err.to_string(),
        format!(
            "port {port} on 127.0.0.1 already answers before the server was started (a stale server?); refusing to benchmark it"
        )
    );
    assert!(!log_of(&ctx).exists(), "nothing may be started");
}

#[test]
fn fixed_free_port_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let port = dfx_server::probe::free_port().unwrap();
    let mut launcher = ProcessLauncher::new(LauncherConfig {
        port: Some(port),
        ..config()
    });
    let server = launcher.start(&spec(&[]), &ctx).unwrap();
    assert_eq!(server.port(), port);
    server.stop().unwrap();
}

#[test]
fn missing_executable_is_unavailable_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut launcher = ProcessLauncher::new(LauncherConfig {
        server_bin: Some("/nonexistent/vllm-omni".into()),
        ..config()
    });
    let why = launcher.availability(&spec(&[])).unwrap_err();
    assert_eq!(
        why.to_string(),
        "server executable /nonexistent/vllm-omni (from --server-bin) does not exist or is not executable"
    );
    let err = launcher
        .start(&spec(&[]), &ctx(dir.path(), LONG))
        .err()
        .unwrap();
    assert!(matches!(err, ServerError::ExecutableMissing(_)), "{err}");
    assert!(
        err.to_string()
            .starts_with("server executable not found: server executable /nonexistent/vllm-omni")
    );
}

#[test]
fn inline_deploy_config_is_written_in_place_and_storage_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let mut s = spec(&[]);
    let serve_args = serde_json::json!({
        "trust-remote-code": true,
        "deploy-config-inline": {"type": "yaml", "content": {"pipeline": "p", "stages": [{"stage_id": 0}]}},
        "max-num-seqs": 1
    });
    s.serve_args = dfx_core::server::ServeArgs::Map(serve_args.as_object().unwrap().clone());
    let server = launcher().start(&s, &ctx).unwrap();
    let file = std::path::absolute(ctx.dir.join("deploy-config.yaml")).unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "pipeline: p\nstages:\n- stage_id: 0\n"
    );
    let command = std::fs::read_to_string(ctx.dir.join("command.txt")).unwrap();
    assert!(
        command.contains(&format!(
            "--trust-remote-code --deploy-config {} --max-num-seqs 1 --stage-init-timeout 600 --init-timeout 900",
            file.display()
        )),
        "{command}"
    );
    let storage = std::path::absolute(dir.path().join("storage")).unwrap();
    assert!(
        command.contains(&format!("VLLM_OMNI_STORAGE_PATH={}", storage.display())),
        "{command}"
    );
    assert!(storage.is_dir());
    server.stop().unwrap();
}

#[test]
fn edited_deploy_copy_is_written_and_passed() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let mut s = spec(&[]);
    s.deploy = Some(ResolvedDeploy {
        name: "qwen3_tts".into(),
        source: "/somewhere/deploy/qwen3_tts.yaml".into(),
        contents: "# edited\nasync_chunk: false\n".into(),
        edited: true,
    });
    let server = launcher().start(&s, &ctx).unwrap();
    let copy = ctx.dir.join("deploy-qwen3_tts.yaml");
    assert_eq!(
        std::fs::read_to_string(&copy).unwrap(),
        "# edited\nasync_chunk: false\n"
    );
    let command = std::fs::read_to_string(ctx.dir.join("command.txt")).unwrap();
    assert!(
        command.contains(&format!(
            "--deploy-config {} --stage-init-timeout",
            copy.display()
        )),
        "{command}"
    );
    server.stop().unwrap();

    let ctx2 = common::ctx(&dir.path().join("second"), LONG);
    s.deploy.as_mut().unwrap().edited = false;
    let server = launcher().start(&s, &ctx2).unwrap();
    let command = std::fs::read_to_string(ctx2.dir.join("command.txt")).unwrap();
    assert!(
        command.contains("--deploy-config /somewhere/deploy/qwen3_tts.yaml --stage-init-timeout"),
        "{command}"
    );
    assert!(!ctx2.dir.join("deploy-qwen3_tts.yaml").exists());
    server.stop().unwrap();
}

#[test]
fn simulator_mode_uses_the_vllm_form_for_every_server_type() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let mut launcher = ProcessLauncher::new(LauncherConfig {
        server_bin: None,
        simulator: Some(fake().into()),
        extra_env: [("DFX_SIM_SPEED".to_string(), "50".to_string())].into(),
        ..config()
    });
    assert_eq!(launcher.implied_hardware(), Some("SIM"));
    assert_eq!(launcher.name(), "sim");
    let mut s = spec(&[]);
    s.server_type = ServerType::SglangOmni;
    let server = launcher.start(&s, &ctx).unwrap();
    let command = std::fs::read_to_string(ctx.dir.join("command.txt")).unwrap();
    assert!(
        command.starts_with(&format!(
            "{} serve fake/model --host 127.0.0.1 --port ",
            fake()
        )),
        "{command}"
    );
    assert!(command.contains("#   DFX_SIM_SPEED=50\n"), "{command}");
    server.stop().unwrap();
}

/// The logs of every start: the lost attempts' `server.port-<port>.log` and `server.log`.
fn attempt_logs(ctx: &dfx_core::server::StartContext) -> Vec<std::path::PathBuf> {
    let mut logs: Vec<_> = std::fs::read_dir(&ctx.dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("server.port-") && name.ends_with(".log")
        })
        .collect();
    logs.push(log_of(ctx));
    logs
}

/// Kills the stranger among `procs`: it left our group on purpose, so the launcher does
/// not stop it; the test started it, so the test stops it.
fn kill_stranger(procs: &[(String, i32, i32)]) {
    let stranger = procs.iter().find(|p| p.0 == "stranger").unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(stranger.1),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

#[test]
fn health_answered_by_a_process_outside_the_group_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let err = launcher()
        .start(&spec(&[("DFX_FAKE_STRANGER", "1")]), &ctx)
        .err()
        .expect("stranger");
    // Every start on a port we chose met a stranger: each was given up, its log kept.
    let logs = attempt_logs(&ctx);
    assert_eq!(
        logs.len(),
        dfx_server::PORT_RACE_ATTEMPTS as usize,
        "{logs:?}"
    );
    for log in &logs {
        let procs = wait_announced(log, 2);
        kill_stranger(&procs);
        let server = procs.iter().find(|p| p.0 == "server").unwrap();
        assert_gone(server.2, &[server.1]);
    }
    assert!(matches!(err, ServerError::PortInUse { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("already answers before the server was started"),
        "{err}"
    );
}

#[test]
fn a_port_taken_before_the_server_bound_it_is_given_up_for_another() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path(), LONG);
    let marker = dir.path().join("first-start");
    let marker_env = marker.display().to_string();
    let server = launcher()
        .start_managed(&spec(&[("DFX_FAKE_STRANGER_ONCE", &marker_env)]), &ctx)
        .unwrap();
    let logs = attempt_logs(&ctx);
    assert_eq!(logs.len(), 2, "{logs:?}");
    let lost = wait_announced(&logs[0], 2);
    let lost_port: u16 = logs[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_start_matches("server.port-")
        .trim_end_matches(".log")
        .parse()
        .unwrap();
    assert_ne!(server.port(), lost_port);
    assert_eq!(
        http_get("127.0.0.1", server.port(), "/health", LONG),
        Probe::Status(200)
    );
    let first = lost.iter().find(|p| p.0 == "server").unwrap();
    assert_gone(first.2, &[first.1]);
    kill_stranger(&lost);
    let pgid = server.pgid();
    Box::new(server).stop().unwrap();
    assert_gone(pgid, &[]);
}
