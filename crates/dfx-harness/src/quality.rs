//! The quality step of entries with `seed_tts_wer_eval: true`. The native bench keeps the
//! audio and a manifest (`quality/manifest.jsonl`); after the step, `--quality-cmd CMD`
//! runs as `sh -c 'CMD "$1"' dfx-quality <manifest>` (its own process group, killed after
//! [`HOOK_TIMEOUT`]), and the JSON object it prints is merged into the result under
//! upstream's key names (`seed_tts_content_error_mean`, `seed_tts_sim_mean`,
//! `seed_tts_utmos_mean`, …: every key starting with `seed_tts_`). Without a hook, or when
//! the bench kept no audio, the result says the quality was not evaluated; never silence.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dfx_core::result::ResultDoc;
use serde_json::Value;

/// How long an evaluator may run.
pub(crate) const HOOK_TIMEOUT: Duration = Duration::from_secs(3600);

/// The most bytes of the hook's stdout read.
pub(crate) const MAX_OUTPUT: u64 = 16 << 20;

/// Upstream's key for why no quality figure exists.
const NOT_EVALUATED: &str = "seed_tts_eval_setup_error";

/// What the quality step did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Quality {
    /// The hook ran; this many of its keys were merged.
    Evaluated(usize),
    /// No evaluation, and why (recorded in the result).
    NotEvaluated(String),
    /// The hook failed: a trial failure.
    HookFailed(String),
}

/// Runs the quality step for a result of a `seed_tts_wer_eval` entry in `trial_dir`.
pub(crate) fn evaluate(hook: Option<&str>, trial_dir: &Path, doc: &mut ResultDoc) -> Quality {
    let outcome = evaluate_inner(hook, trial_dir, doc, HOOK_TIMEOUT);
    let evaluated = matches!(outcome, Quality::Evaluated(_));
    doc.insert("quality_evaluated".into(), Value::Bool(evaluated));
    match &outcome {
        Quality::NotEvaluated(why) | Quality::HookFailed(why) => {
            doc.insert(NOT_EVALUATED.into(), Value::from(why.as_str()));
        }
        Quality::Evaluated(_) => {}
    }
    outcome
}

fn evaluate_inner(
    hook: Option<&str>,
    trial_dir: &Path,
    doc: &mut ResultDoc,
    timeout: Duration,
) -> Quality {
    if doc.contains_key("seed_tts_content_evaluated") && !doc.contains_key("quality_manifest") {
        // The external bench evaluated it itself (vllm-omni's seed-tts-eval).
        return Quality::Evaluated(0);
    }
    let manifest = trial_dir.join("quality/manifest.jsonl");
    if !manifest.is_file() {
        return Quality::NotEvaluated(
            "quality not evaluated: the bench kept no audio (the native bench keeps it for \
             seed_tts_wer_eval entries)"
                .into(),
        );
    }
    let Some(cmd) = hook else {
        return Quality::NotEvaluated(
            "quality not evaluated: no --quality-cmd (the audio is kept: quality/manifest.jsonl)"
                .into(),
        );
    };
    match run_hook(cmd, &manifest, trial_dir, timeout).and_then(|out| merge(&out, doc)) {
        Ok(n) => Quality::Evaluated(n),
        Err(e) => Quality::HookFailed(format!("quality hook failed: {e}")),
    }
}

/// Merges the `seed_tts_*` keys of the hook's JSON object; other keys are listed under
/// `quality_hook_ignored_keys`.
fn merge(out: &str, doc: &mut ResultDoc) -> Result<usize, String> {
    let v: Value = serde_json::from_str(out.trim())
        .map_err(|e| format!("its output is not JSON ({e}): {:.200}", out.trim()))?;
    let Value::Object(obj) = v else {
        return Err(format!(
            "its output is not a JSON object: {:.200}",
            out.trim()
        ));
    };
    let mut ignored = Vec::new();
    let mut merged = 0;
    for (k, v) in obj {
        if k.starts_with("seed_tts_") {
            doc.insert(k, v);
            merged += 1;
        } else {
            ignored.push(Value::from(k));
        }
    }
    if !ignored.is_empty() {
        doc.insert("quality_hook_ignored_keys".into(), Value::Array(ignored));
    }
    Ok(merged)
}

/// Runs the hook; its stdout when it exited 0 in time. Its stderr goes to
/// `quality/hook.log`.
fn run_hook(
    cmd: &str,
    manifest: &Path,
    trial_dir: &Path,
    timeout: Duration,
) -> Result<String, String> {
    use std::os::unix::process::CommandExt;
    let log = trial_dir.join("quality/hook.log");
    let stderr =
        std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} \"$1\""))
        .arg("dfx-quality")
        .arg(manifest)
        .env("DFX_QUALITY_MANIFEST", manifest)
        .env("DFX_QUALITY_DIR", trial_dir.join("quality"))
        .current_dir(trial_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start `sh -c {cmd:?}`: {e}"))?;
    let pid = child.id();
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = (&mut stdout).take(MAX_OUTPUT).read_to_string(&mut out);
        out
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) | Err(_) => {
                stop_group(pid);
                let _ = child.wait();
                let _ = reader.join();
                return Err(format!(
                    "no exit within {} s (stopped)",
                    timeout.as_secs_f64()
                ));
            }
        }
    };
    // Whatever the hook left running in its group goes with it.
    stop_group(pid);
    let out = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "it exited with {status} (stderr: {})",
            log.display()
        ));
    }
    Ok(out)
}

/// SIGKILL to the hook's process group (its id is the group's).
fn stop_group(pid: u32) {
    if let Ok(raw) = i32::try_from(pid) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(raw),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial_with_manifest() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("quality")).unwrap();
        std::fs::write(dir.path().join("quality/manifest.jsonl"), "{\"index\":0}\n").unwrap();
        dir
    }

    #[test]
    fn without_a_hook_the_result_says_not_evaluated() {
        let dir = trial_with_manifest();
        let mut doc = ResultDoc::new();
        let q = evaluate(None, dir.path(), &mut doc);
        assert!(matches!(q, Quality::NotEvaluated(_)));
        assert_eq!(doc["quality_evaluated"], false);
        assert!(
            doc[NOT_EVALUATED]
                .as_str()
                .unwrap()
                .contains("no --quality-cmd")
        );
        let empty = tempfile::tempdir().unwrap();
        let q = evaluate(Some("true"), empty.path(), &mut ResultDoc::new());
        assert!(matches!(q, Quality::NotEvaluated(w) if w.contains("kept no audio")));
    }

    #[test]
    fn the_hook_gets_the_manifest_and_its_keys_are_merged() {
        let dir = trial_with_manifest();
        let mut doc = ResultDoc::new();
        let cmd = r#"f() { test -s "$1" && test "$1" = "$DFX_QUALITY_MANIFEST" && echo '{"seed_tts_content_error_mean": 0.031, "other": 1}'; }; f"#;
        let q = evaluate(Some(cmd), dir.path(), &mut doc);
        assert_eq!(q, Quality::Evaluated(1), "{doc:?}");
        assert_eq!(doc["seed_tts_content_error_mean"], 0.031);
        assert_eq!(
            doc["quality_hook_ignored_keys"],
            serde_json::json!(["other"])
        );
        assert_eq!(doc["quality_evaluated"], true);
    }

    #[test]
    fn a_failing_slow_or_garbled_hook_is_a_failure() {
        let dir = trial_with_manifest();
        for cmd in ["exit 3; :", "echo not json; :", "echo '[1]'; :"] {
            let mut doc = ResultDoc::new();
            let q = evaluate(Some(cmd), dir.path(), &mut doc);
            assert!(matches!(q, Quality::HookFailed(_)), "{cmd}: {q:?}");
            assert_eq!(doc["quality_evaluated"], false);
        }
        let started = Instant::now();
        let q = evaluate_inner(
            Some("sleep 30; :"),
            dir.path(),
            &mut ResultDoc::new(),
            Duration::from_millis(200),
        );
        assert!(matches!(q, Quality::HookFailed(w) if w.contains("no exit within")));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
