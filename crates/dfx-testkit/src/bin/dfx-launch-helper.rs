//! Test support: starts one fake server through [`dfx_server::ProcessLauncher`] the way the
//! harness does, prints `READY pgid=<pgid> guard=<pid or ->`, then either waits to be
//! interrupted (`wait`, with the SIGINT/SIGTERM handler installed) or panics once a line
//! arrives on stdin (`panic`). With a guard executable and a state folder the server is
//! supervised like the suite's (guard process, state file).
//!
//! Usage: `dfx-launch-helper <wait|panic> <fake-server-exe> <start-dir> [<guard-exe>
//! <state-dir>]`.

use std::io::Write;
use std::time::Duration;

use dfx_core::server::{ServerSpec, StartContext};
use dfx_server::{LauncherConfig, ProcessLauncher, Supervision, install_signal_handlers};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, exe, dir, supervision) = match args.as_slice() {
        [mode, exe, dir] => (mode, exe, dir, Supervision::default()),
        [mode, exe, dir, guard, live] => (
            mode,
            exe,
            dir,
            Supervision {
                guard_bin: Some(guard.into()),
                live_dir: Some(live.into()),
            },
        ),
        _ => {
            dfx_core::errln!(
                "usage: dfx-launch-helper <wait|panic> <fake-server-exe> <start-dir> [<guard-exe> <state-dir>]"
            );
            std::process::exit(2);
        }
    };
    install_signal_handlers().expect("signal handlers");
    let mut launcher = ProcessLauncher::new(LauncherConfig {
        server_bin: Some(exe.into()),
        grace: Some(Duration::from_millis(300)),
        poll_interval: Duration::from_millis(50),
        supervision,
        ..LauncherConfig::default()
    });
    let spec = ServerSpec {
        env: [
            ("DFX_FAKE_IGNORE_SIGTERM", "1"),
            ("DFX_FAKE_GRANDCHILD", "1"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into(),
        ..dfx_testkit::trials::spec("fake/model")
    };
    let ctx = StartContext {
        dir: dir.into(),
        storage_dir: None,
        ready_timeout: Duration::from_secs(30),
    };
    let server = launcher.start_managed(&spec, &ctx).expect("server start");
    let guard = server
        .guard_pid()
        .map_or_else(|| "-".to_string(), |p| p.to_string());
    dfx_core::outln!("READY pgid={} guard={guard}", server.pgid());
    std::io::stdout().flush().expect("flush");
    match mode.as_str() {
        "panic" => {
            // Panic only once the test has looked at the running group.
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            panic!("deliberate panic with a live server")
        }
        _ => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
    }
}
