//! Test support: a tiny stand-in for `vllm-omni serve`, used by dfx-server's integration
//! tests. It accepts the vllm-omni and sgl-omni command lines (only `--host` and `--port`
//! matter) and misbehaves on request through environment variables:
//!
//! - `DFX_FAKE_EXIT_AT_START=N`: print 50 log lines, exit with status N before listening;
//! - `DFX_FAKE_NEVER_READY=1`: never listen;
//! - `DFX_FAKE_READY_DELAY_MS=N`: listen only after N ms;
//! - `DFX_FAKE_HEALTH=CODE`: status of `GET /health` (default 200);
//! - `DFX_FAKE_CRASH_AFTER_MS=N`: N ms after the first healthy `/health` answer, exit with
//!   `DFX_FAKE_CRASH_STATUS` (default 7), or kill itself with signal `DFX_FAKE_CRASH_SIGNAL`;
//! - `DFX_FAKE_IGNORE_SIGTERM=1`: ignore SIGTERM;
//! - `DFX_FAKE_GRANDCHILD=1`: fork a grandchild (same group) that ignores SIGTERM;
//! - `DFX_FAKE_STRANGER=1`: never listen itself, but start a process in a new session (not
//!   in the server's group) that serves `/health` 200 on the server's port;
//! - `DFX_FAKE_STRANGER_ONCE=PATH`: behave as `DFX_FAKE_STRANGER` only when it can create
//!   the file PATH (the first start), and as a normal server afterwards.
//!
//! Every process prints `fake-server role=<role> pid=<pid> pgid=<pgid>` first.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use nix::sys::signal::{SigHandler, Signal, signal};

fn env_num(key: &str) -> Option<u64> {
    std::env::var(key).ok()?.trim().parse().ok()
}

fn announce(role: &str) {
    let pid = std::process::id();
    let pgid = nix::unistd::getpgrp().as_raw();
    dfx_core::outln!("fake-server role={role} pid={pid} pgid={pgid}");
    let _ = std::io::stdout().flush();
}

/// Whether `DFX_FAKE_STRANGER_ONCE` names a file this start created (so no earlier did).
fn first_start_marked() -> bool {
    std::env::var_os("DFX_FAKE_STRANGER_ONCE").is_some_and(|path| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .is_ok()
    })
}

fn ignore_sigterm() {
    // SAFETY: installing SIG_IGN has no handler code to be async-signal-safe about.
    unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) }.expect("ignore SIGTERM");
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn flag_value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

fn serve(stream: &mut TcpStream, health: u16) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 16 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&req);
    let path = line.split_whitespace().nth(1).unwrap_or("/");
    let code = if path == "/health" { health } else { 200 };
    let answered = write!(
        stream,
        "HTTP/1.1 {code} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    );
    if path == "/health" && code == 200 && answered.is_ok() {
        CRASH_ARMED.call_once(arm_crash);
    }
}

/// The crash timer starts at the first healthy `/health` answer, so a short
/// `DFX_FAKE_CRASH_AFTER_MS` cannot fire before the launcher has seen the server ready.
static CRASH_ARMED: std::sync::Once = std::sync::Once::new();

fn arm_crash() {
    let Some(ms) = env_num("DFX_FAKE_CRASH_AFTER_MS") else {
        return;
    };
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ms));
        dfx_core::errln!("fake crash after {ms} ms");
        if let Some(sig) = env_num("DFX_FAKE_CRASH_SIGNAL") {
            let sig = Signal::try_from(sig as i32).expect("signal number");
            let _ = nix::sys::signal::raise(sig);
        }
        std::process::exit(env_num("DFX_FAKE_CRASH_STATUS").unwrap_or(7) as i32);
    });
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("grandchild") {
        ignore_sigterm();
        announce("grandchild");
        sleep_forever();
    }
    if args.first().map(String::as_str) == Some("stranger") {
        nix::unistd::setsid().expect("setsid");
        announce("stranger");
        listen_and_serve(&args[1], &args[2], 200);
    }
    announce("server");
    dfx_core::outln!("argv: {args:?}");
    if std::env::var_os("DFX_FAKE_IGNORE_SIGTERM").is_some() {
        ignore_sigterm();
    }
    if std::env::var_os("DFX_FAKE_GRANDCHILD").is_some() {
        let exe = std::env::current_exe().expect("current exe");
        // Deliberately never waited for: the point is a process the launcher must sweep.
        #[allow(clippy::zombie_processes)]
        let _grandchild = std::process::Command::new(exe)
            .arg("grandchild")
            .spawn()
            .expect("spawn grandchild");
    }
    if let Some(code) = env_num("DFX_FAKE_EXIT_AT_START") {
        for i in 1..=50 {
            dfx_core::errln!("startup log line {i}");
        }
        dfx_core::errln!("fatal: fake startup failure");
        std::process::exit(code as i32);
    }
    let host = flag_value(&args, "--host").unwrap_or_else(|| "127.0.0.1".into());
    let port = flag_value(&args, "--port").expect("--port");
    if std::env::var_os("DFX_FAKE_STRANGER").is_some() || first_start_marked() {
        let exe = std::env::current_exe().expect("current exe");
        #[allow(clippy::zombie_processes)]
        let _stranger = std::process::Command::new(exe)
            .args(["stranger", &host, &port])
            .spawn()
            .expect("spawn stranger");
        sleep_forever();
    }
    if std::env::var_os("DFX_FAKE_NEVER_READY").is_some() {
        dfx_core::outln!("initialising forever");
        sleep_forever();
    }
    if let Some(ms) = env_num("DFX_FAKE_READY_DELAY_MS") {
        std::thread::sleep(Duration::from_millis(ms));
    }
    let listener = TcpListener::bind(format!("{host}:{port}")).expect("bind");
    dfx_core::outln!("listening on {host}:{port}");
    let _ = std::io::stdout().flush();
    let health = env_num("DFX_FAKE_HEALTH").map_or(200, |c| c as u16);
    serve_forever(listener, health);
}

fn listen_and_serve(host: &str, port: &str, health: u16) -> ! {
    let listener = TcpListener::bind(format!("{host}:{port}")).expect("bind");
    serve_forever(listener, health)
}

fn serve_forever(listener: TcpListener, health: u16) -> ! {
    for stream in listener.incoming().flatten() {
        let mut stream = stream;
        std::thread::spawn(move || serve(&mut stream, health));
    }
    unreachable!("incoming() never ends")
}
