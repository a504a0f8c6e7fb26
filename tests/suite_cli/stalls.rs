//! A stuck server is found in seconds and a crash is always named, end to end with the
//! real simulator or a trickling test server written here (std TcpListener on loopback):
//! - `stall-after-chunks=3` ends the step with "server stalled" with the default rule,
//!   far below the 60 s read timeout the old behaviour waited per request;
//! - a speech server that trickles one byte every 300 ms fails as stalled within the
//!   window, and an attached server whose `/health` trickles fails the attach check;
//! - `never-ready` prints the wait and the log's last line while waiting;
//! - `crash-at-inflight=1`, ten runs: each names the exit status and the log tail.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use libtest_mimic::Failed;

use crate::support::{fixture, output_text, perf_spawn, sim_native};

/// The c1 step of `sim_tts.json`.
const C1: &str = "test_sim_smoke::default_voice_seed-tts-text::c1";
/// Attach mode needs the real server mode (the hermetic runs set the fake one).
const ATTACH: &[(&str, &str)] = &[("DFX_SERVER", "auto")];

pub fn stalled_simulator_ends_the_step_early() -> Result<(), Failed> {
    let started = Instant::now();
    let (out, _results) = sim_native(
        "sim_tts.json",
        &["--sim-faults", "stall-after-chunks=3", "--exact", C1],
        &[],
    )?;
    let took = started.elapsed();
    let text = output_text(&out);
    if out.status.success() || !text.contains("server stalled: ") {
        return Err(format!("no `server stalled` failure:\n{text}").into());
    }
    // The old behaviour: 60 s per stalled request (7 requests with the warmup).
    if took > Duration::from_secs(60) {
        return Err(format!("took {took:?}, the read timeout's order:\n{text}").into());
    }
    if !text.contains("no stream made progress") {
        return Err(format!("the reason is not named:\n{text}").into());
    }
    Ok(())
}

/// A loopback server: `/health` answers at once (or trickles, `health_trickles`), the
/// speech endpoint sends a 200 head and then one body byte every 300 ms until closed.
fn trickling_server(health_trickles: bool) -> Result<(String, Arc<AtomicBool>), Failed> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    let stop = Arc::new(AtomicBool::new(false));
    let done = stop.clone();
    listener.set_nonblocking(true)?;
    std::thread::spawn(move || {
        while !done.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((s, _)) => {
                    std::thread::spawn(move || answer(s, health_trickles));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    Ok((url, stop))
}

fn answer(mut s: TcpStream, health_trickles: bool) {
    let _ = s.set_nonblocking(false);
    let mut req = Vec::new();
    let mut buf = [0u8; 4096];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let health = req.starts_with(b"GET /health");
    if health && !health_trickles {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return;
    }
    let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n");
    // Ends when the client closes: the write then fails.
    for _ in 0..1000 {
        if s.write_all(b"\x01").is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The suite attached to a [`trickling_server`] with `extra` flags, on the c1 step: its
/// exit, its output and how long it took (the server is stopped after).
fn attached(health_trickles: bool, extra: &[&str]) -> Result<(bool, String, Duration), Failed> {
    let (url, stop) = trickling_server(health_trickles)?;
    let started = Instant::now();
    let mut args = vec!["--server-url", url.as_str(), "--bench", "native"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--exact", C1]);
    let spawned = perf_spawn(&fixture("sim_tts.json"), &args, ATTACH);
    let out = spawned.and_then(|(child, _results)| Ok(child.wait_with_output()?));
    stop.store(true, Ordering::SeqCst);
    let out = out?;
    Ok((out.status.success(), output_text(&out), started.elapsed()))
}

pub fn trickling_server_fails_as_stalled() -> Result<(), Failed> {
    let flags = ["--stall-window", "3", "--stall-floor", "64"];
    let (ok, text, took) = attached(false, &flags)?;
    let stalled = text.contains("server stalled: ") && text.contains("below the floor of 64");
    if ok || !stalled {
        return Err(format!("the trickle was not found stalled:\n{text}").into());
    }
    // The old bound: the 900 s request timeout per request.
    if took > Duration::from_secs(60) {
        return Err(format!("took {took:?}:\n{text}").into());
    }
    Ok(())
}

pub fn attach_to_a_trickling_health_fails_in_time() -> Result<(), Failed> {
    let (ok, text, took) = attached(true, &[])?;
    if ok || !text.contains("not complete within") {
        return Err(format!("a trickling /health was accepted:\n{text}").into());
    }
    // The attach check's total deadline is 10 s.
    if took > Duration::from_secs(50) {
        return Err(format!("took {took:?}:\n{text}").into());
    }
    Ok(())
}

pub fn never_ready_reports_the_wait() -> Result<(), Failed> {
    let args = [
        "--sim-faults",
        "never-ready",
        "--ready-timeout",
        "4",
        "--exact",
        C1,
    ];
    let (out, _results) = sim_native("sim_tts.json", &args, &[("DFX_READY_PROGRESS_MS", "1000")])?;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("waiting for the server on port"))
        .collect();
    let named = lines.iter().all(|l| l.contains("of 4 s; last log line: "));
    if lines.len() < 2 || !named {
        return Err(format!("no progress lines while waiting:\n{}", output_text(&out)).into());
    }
    Ok(())
}

pub fn crash_is_named_every_time() -> Result<(), Failed> {
    for k in 1..=10 {
        let args = ["--sim-faults", "crash-at-inflight=1", "--exact", C1];
        let (out, _results) = sim_native("sim_tts.json", &args, &[])?;
        let text = output_text(&out);
        let named = text.contains("server exited with exit status 1 during the benchmark")
            && text.contains("--- server log tail (")
            && text.contains("crash-at-inflight");
        if out.status.success() || !named {
            return Err(format!("run {k} of 10 did not name the crash:\n{text}").into());
        }
    }
    Ok(())
}
