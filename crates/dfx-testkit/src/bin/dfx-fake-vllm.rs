//! A stand-in for `vllm` in the external bench's tests (no vllm install needed).
//!
//! Accepts `vllm bench serve --omni …`, records its arguments and the relevant environment,
//! and behaves according to `DFX_FAKE_VLLM_MODE`:
//! - `ok` (default): copies the file named by `DFX_FAKE_VLLM_RESULT` to
//!   `<--result-dir>/<--result-filename>` and exits 0;
//! - `fail`: prints 60 numbered lines and an error, writes nothing, exits 2;
//! - `nothing`: writes nothing, exits 0;
//! - `malformed`: writes a truncated JSON result file, exits 0;
//! - `sleep`: starts a child of its own (same process group), writes both pids to
//!   `DFX_FAKE_VLLM_PIDS`, and sleeps `DFX_FAKE_VLLM_SLEEP_S` seconds (default 600).
//!
//! For `--dataset-name omniinteract` the copied result gets the summary the real
//! client's OmniInteract runner adds: `omniinteract.{total, success, failed,
//! artifacts_complete}` from the result's `num_prompts` / `completed` (artifacts complete
//! when every request succeeded).
//!
//! `DFX_FAKE_VLLM_RECORD`: file to which one JSON line per invocation is appended:
//! `{"argv": [...], "env": {...}}` with the `VLLM_*` and `OPENAI_API_KEY` variables.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = std::env::var("DFX_FAKE_VLLM_MODE").unwrap_or_else(|_| "ok".into());
    if mode == "sleep-child" {
        sleep_for_configured_time();
        return ExitCode::SUCCESS;
    }
    if args.get(..3) != Some(&["bench".to_string(), "serve".into(), "--omni".into()][..]) {
        dfx_core::errln!("dfx-fake-vllm: expected `bench serve --omni …`, got {args:?}");
        return ExitCode::from(64);
    }
    if let Err(e) = record(&args) {
        dfx_core::errln!("dfx-fake-vllm: cannot record argv: {e}");
        return ExitCode::from(70);
    }
    dfx_core::outln!("fake vllm bench: {} arguments, mode {mode}", args.len());
    dfx_core::errln!("fake vllm bench: this line goes to stderr");
    let result_path = match (
        value_of(&args, "--result-dir"),
        value_of(&args, "--result-filename"),
    ) {
        (Some(d), Some(f)) => PathBuf::from(d).join(f),
        _ => {
            dfx_core::errln!("dfx-fake-vllm: --result-dir and --result-filename are required");
            return ExitCode::from(64);
        }
    };
    match mode.as_str() {
        "ok" => {
            let code = write_copy(&result_path);
            if value_of(&args, "--dataset-name") == Some("omniinteract") && result_path.is_file() {
                add_omniinteract_summary(&result_path)
            } else {
                code
            }
        }
        "fail" => {
            for i in 1..=60 {
                dfx_core::errln!("fake failure line {i}");
            }
            dfx_core::errln!("RuntimeError: fake vllm bench failed");
            ExitCode::from(2)
        }
        "nothing" => ExitCode::SUCCESS,
        "malformed" => match std::fs::write(&result_path, "{\"date\": \"20261130-1012") {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                dfx_core::errln!("dfx-fake-vllm: cannot write {}: {e}", result_path.display());
                ExitCode::from(73)
            }
        },
        "sleep" => sleep_with_child(),
        other => {
            dfx_core::errln!("dfx-fake-vllm: unknown DFX_FAKE_VLLM_MODE {other:?}");
            ExitCode::from(64)
        }
    }
}

fn value_of<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

fn record(args: &[String]) -> std::io::Result<()> {
    let Ok(path) = std::env::var("DFX_FAKE_VLLM_RECORD") else {
        return Ok(());
    };
    let env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("VLLM_") || k == "OPENAI_API_KEY")
        .collect();
    // Like the real client's OmniInteract scorer, talk to the judge it was given.
    let judge = value_of(args, "--omniinteract-judge-base-url").map(judge_status);
    let line = serde_json::json!({ "argv": args, "env": env, "judge_models_status": judge });
    let mut f = std::fs::File::options()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(f, "{line}")
}

/// The status line of `GET <url>/v1/models` (loopback `http://host:port` only), or the
/// error.
fn judge_status(url: &str) -> String {
    use std::io::{BufRead, BufReader};
    let Some(addr) = url.strip_prefix("http://").map(|a| a.trim_end_matches('/')) else {
        return format!("not an http:// URL: {url}");
    };
    let run = || -> std::io::Result<String> {
        let mut s = std::net::TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(
            s,
            "GET /v1/models HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )?;
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line)?;
        Ok(line.trim().to_string())
    };
    run().unwrap_or_else(|e| format!("error: {e}"))
}

fn write_copy(to: &std::path::Path) -> ExitCode {
    let Ok(from) = std::env::var("DFX_FAKE_VLLM_RESULT") else {
        dfx_core::errln!("dfx-fake-vllm: DFX_FAKE_VLLM_RESULT is not set");
        return ExitCode::from(64);
    };
    match std::fs::copy(&from, to) {
        Ok(_) => {
            dfx_core::outln!("Results saved to {}", to.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            dfx_core::errln!("dfx-fake-vllm: cannot copy {from} to {}: {e}", to.display());
            ExitCode::from(73)
        }
    }
}

fn sleep_with_child() -> ExitCode {
    let me = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            dfx_core::errln!("dfx-fake-vllm: {e}");
            return ExitCode::from(70);
        }
    };
    let child = std::process::Command::new(me)
        .env("DFX_FAKE_VLLM_MODE", "sleep-child")
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            dfx_core::errln!("dfx-fake-vllm: cannot start child: {e}");
            return ExitCode::from(70);
        }
    };
    if let Ok(path) = std::env::var("DFX_FAKE_VLLM_PIDS") {
        let pids = format!("{} {}\n", std::process::id(), child.id());
        if let Err(e) = std::fs::write(path, pids) {
            dfx_core::errln!("dfx-fake-vllm: cannot write pids: {e}");
            return ExitCode::from(73);
        }
    }
    sleep_for_configured_time();
    ExitCode::SUCCESS
}

fn sleep_for_configured_time() {
    let secs = std::env::var("DFX_FAKE_VLLM_SLEEP_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    std::thread::sleep(Duration::from_secs(secs));
}

fn add_omniinteract_summary(path: &std::path::Path) -> ExitCode {
    let patched = std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|text| {
            let mut doc: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&text).map_err(|e| e.to_string())?;
            let count = |k: &str| doc.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
            let (total, success) = (count("num_prompts"), count("completed"));
            doc.insert(
                "omniinteract".into(),
                serde_json::json!({"total": total, "success": success,
                    "failed": total.saturating_sub(success), "artifacts_complete": success == total}),
            );
            serde_json::to_string(&doc).map_err(|e| e.to_string())
        })
        .and_then(|text| std::fs::write(path, text).map_err(|e| e.to_string()));
    match patched {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            dfx_core::errln!(
                "dfx-fake-vllm: cannot add the OmniInteract summary to {}: {e}",
                path.display()
            );
            ExitCode::from(73)
        }
    }
}
