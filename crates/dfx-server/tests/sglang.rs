//! The sglang-omni adapter against a real process (the fake server in the sgl-omni
//! command form): a repository-relative `config` resolved from the root, booleans as
//! `--flag true|false`, the process run in the root with `server_params.env` in its
//! environment, upstream's 30 s grace and readiness timeout defaults, and nothing left
//! behind after the stop.

mod common;

use std::time::Duration;

use common::{assert_gone, config, ctx, fake, spec};
use dfx_core::server::{RunningServer, ServeArgs, ServerType};
use dfx_server::{LauncherConfig, ProcessLauncher, sglang_ready_timeout};
use serde_json::json;

const LONG: Duration = Duration::from_secs(60);

#[test]
fn sglang_runs_in_the_repo_root_with_its_env_and_root_relative_config() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("repo/conf")).unwrap();
    let root = dir.path().join("repo").canonicalize().unwrap();
    std::fs::write(root.join("conf/pipeline.yaml"), "stages: []\n").unwrap();
    let mut launcher = ProcessLauncher::new(LauncherConfig {
        server_bin: None,
        sglang_bin: Some(fake().into()),
        repo_root: root.clone(),
        deploy_dir: dir.path().join("no-deploy"),
        ..config()
    });
    let mut s = spec(&[("SGLANG_OMNI_TEST_MARK", "mark-1")]);
    s.server_type = ServerType::SglangOmni;
    s.serve_args = ServeArgs::Map(
        json!({"config": "conf/pipeline.yaml", "enable_x": true, "disable_y": false, "z": null})
            .as_object()
            .unwrap()
            .clone(),
    );
    let ctx = ctx(dir.path(), LONG);
    let server = launcher.start_managed(&s, &ctx).unwrap();
    let pid = server.pgid();
    let command = std::fs::read_to_string(ctx.dir.join("command.txt")).unwrap();
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"));
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let has_mark = environ
        .split(|b| *b == 0)
        .any(|v| v == b"SGLANG_OMNI_TEST_MARK=mark-1");
    let vllm_only = environ
        .split(|b| *b == 0)
        .any(|v| v.starts_with(b"VLLM_WORKER_MULTIPROC_METHOD="));
    Box::new(server).stop().unwrap();
    assert_gone(pid, &[pid]);
    let want = format!(
        "{} serve --model-path fake/model --host 127.0.0.1 --port ",
        fake()
    );
    assert!(command.starts_with(&want), "{command}");
    assert!(
        command.contains(&format!(
            " --config {} --enable-x true --disable-y false\n",
            root.join("conf/pipeline.yaml").display()
        )),
        "{command}"
    );
    assert!(
        command.contains(&format!("# working directory: {}\n", root.display())),
        "{command}"
    );
    assert_eq!(cwd.unwrap(), root);
    assert!(has_mark, "server_params.env reaches the server");
    assert!(!vllm_only, "no vllm-omni variable is added for sglang-omni");
}

#[test]
fn sglang_defaults_are_upstreams() {
    let launcher = ProcessLauncher::new(LauncherConfig {
        sglang_bin: Some(fake().into()),
        ..LauncherConfig::default()
    });
    let mut s = spec(&[]);
    s.server_type = ServerType::SglangOmni;
    assert_eq!(launcher.grace(&s), Duration::from_secs(30));
    let global = Duration::from_secs(1200);
    assert_eq!(
        sglang_ready_timeout(None, global),
        Duration::from_secs(1800)
    );
    assert_eq!(
        sglang_ready_timeout(Some("60"), global),
        Duration::from_secs(60)
    );
    assert_eq!(
        sglang_ready_timeout(Some("nonsense"), global),
        Duration::from_secs(1800)
    );
    // A longer --ready-timeout is kept (dfx-perf's deliberate difference).
    let long = Duration::from_secs(3600);
    assert_eq!(sglang_ready_timeout(None, long), long);
}
