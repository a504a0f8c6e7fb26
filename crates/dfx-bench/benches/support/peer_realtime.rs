//! The realtime clients of the scale benchmark: the native client and `vllm bench`, one
//! `openai-realtime-tts` turn per request (a WebSocket session each) on the same seed-tts
//! rows, against `support/raw_realtime.rs`. Their TTFP overhead per turn = the client's TTFP
//! (from its first append) − the server's append-to-first-delta time, matched by the
//! session id the server gave the session.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use dfx_core::plan::{BenchEntry, Trial};
use serde_json::json;

use super::native_support::read_records;
use super::peer_plan::{Scenario, kind_arg};
use super::reaped::run_child;
use super::server_child::ServerChild;
use super::{RunOut, Stats, Vllm, VllmLoad, run_vllm};

/// Rows of the realtime dataset.
const ROWS: usize = 8;

/// `trial` as an `openai-realtime-tts` entry of one turn per request, on a seed-tts
/// dataset written into `dir`.
pub(crate) fn realtime_trial(mut t: Trial, dir: &Path) -> Trial {
    let ds = dir.join("ds");
    super::native_support::seed_tts(&ds, ROWS);
    let mut e: BenchEntry = (*t.entry).clone();
    e.dataset_name = Some("seed-tts".into());
    e.dataset_path = Some(ds.to_string_lossy().into_owned());
    e.backend = Some("openai-realtime-tts".into());
    e.endpoint = Some("/v1/realtime".into());
    e.raw = json!({"seed_tts_turns_per_session": 1})
        .as_object()
        .cloned()
        .unwrap_or_default();
    t.entry = Arc::new(e);
    t
}

/// One run of `vllm bench`'s `openai-realtime-tts` in a child, on the native client's rows
/// (written into `dir`).
pub(crate) fn run_vllm_realtime(
    vllm: &Vllm,
    server: &ServerChild,
    s: &Scenario,
    n: u64,
    (dir, tag): (&Path, &str),
) -> RunOut {
    let ds = dir.join("ds");
    super::native_support::seed_tts(&ds, ROWS);
    run_vllm(vllm, server, (s, &VllmLoad::realtime(ds)), n, dir, tag)
}

/// One run of the native realtime client in a child (`--run-native … realtime`).
pub(crate) fn run_native_realtime(
    server: &ServerChild,
    s: &Scenario,
    n: u64,
    dir: &Path,
) -> RunOut {
    std::fs::create_dir_all(dir).unwrap();
    let before: Stats = server.get("stats");
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.arg("--run-native")
        .arg(dir)
        .arg(&server.base_url)
        .arg(kind_arg(s.kind))
        .arg(n.to_string())
        .arg(s.warmups.to_string())
        .arg("realtime");
    let r = run_child(cmd, &dir.join("child.log"), s.pin);
    assert_eq!(
        r.status,
        0,
        "native realtime child failed: {}",
        dir.display()
    );
    let after: Stats = server.get("stats");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
    let delays = server.timings();
    let overhead_ms: Vec<f64> = read_records(dir)
        .iter()
        .filter(|r| r["warmup"] == false && r["ok"] == true)
        .flat_map(|r| r["turns"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            let id = t["session_id"]
                .as_str()
                .expect("the server names every session");
            let d = delays.get(id).expect("every session has a server timing");
            t["metrics"]["ttfp_ms"].as_f64().unwrap() - d * 1000.0
        })
        .collect();
    RunOut {
        n,
        cpu_s: r.cpu_s,
        maxrss_kib: 0,
        wall_s: r.wall_s,
        overhead_ms,
        lag_ms: Vec::new(),
        failed: doc["failed"].as_u64().unwrap_or(n),
        connections: after.connections - before.connections,
    }
}
