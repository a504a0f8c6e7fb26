//! The quality step of entries with `seed_tts_wer_eval: true`. The native bench keeps the
//! audio and a manifest (`quality/manifest.jsonl`); after the step, `--quality-cmd CMD`
//! runs as `sh -c 'CMD "$1"' dfx-quality <manifest>` (its own process group, supervised
//! like a server's: torn down on SIGINT/SIGTERM, by its guard if the suite dies, and after
//! [`HOOK_TIMEOUT`]), and the JSON object it prints is merged into the result under
//! upstream's key names (`seed_tts_content_error_mean`, `seed_tts_sim_mean`,
//! `seed_tts_utmos_mean`, …: every key starting with `seed_tts_`). Without a hook, or when
//! the bench kept no audio, the result says the quality was not evaluated; never silence.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use dfx_core::result::ResultDoc;
use dfx_server::{GroupChild, GroupEnd, Supervision};
use serde_json::Value;

/// How long an evaluator may run.
pub(crate) const HOOK_TIMEOUT: Duration = Duration::from_secs(3600);

/// The most bytes of the hook's stdout read.
pub(crate) const MAX_OUTPUT: u64 = 16 << 20;

/// SIGTERM → SIGKILL grace of the hook's group (an evaluator may flush its files).
const HOOK_GRACE: Duration = Duration::from_secs(5);

/// `--quality-cmd` and how its process group is supervised.
#[derive(Debug, Clone)]
pub(crate) struct QualityHook {
    /// The shell command; the manifest's path is its last argument.
    pub cmd: String,
    pub supervision: Supervision,
}

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
pub(crate) fn evaluate(
    hook: Option<&QualityHook>,
    trial_dir: &Path,
    doc: &mut ResultDoc,
) -> Quality {
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
    hook: Option<&QualityHook>,
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
    let Some(hook) = hook else {
        return Quality::NotEvaluated(
            "quality not evaluated: no --quality-cmd (the audio is kept: quality/manifest.jsonl)"
                .into(),
        );
    };
    match run_hook(hook, &manifest, trial_dir, timeout).and_then(|out| merge(&out, doc)) {
        Ok(n) => Quality::Evaluated(n),
        Err(e) => Quality::HookFailed(format!("quality hook failed: {e}")),
    }
}

/// Why the quality hook's figures are not in the result.
#[derive(Debug, thiserror::Error)]
enum HookError {
    /// `quality/hook.log` cannot be created.
    #[error("cannot create {}: {source}", path.display())]
    Log {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `sh` cannot be started.
    #[error("cannot start `sh -c {cmd:?}`: {source}")]
    Spawn {
        cmd: String,
        #[source]
        source: std::io::Error,
    },
    /// The child has no stdout pipe (never: it is piped).
    #[error("no stdout")]
    NoStdout,
    /// A non-zero exit.
    #[error("it exited with {status} (stderr: {})", log.display())]
    Exit {
        status: std::process::ExitStatus,
        log: std::path::PathBuf,
    },
    /// Still running at the timeout.
    #[error("no exit within {} s (stopped)", .0.as_secs_f64())]
    Timeout(Duration),
    /// Waiting for the hook failed.
    #[error("waiting for it failed: {0}")]
    Wait(#[source] std::io::Error),
    /// Its stdout is not JSON.
    #[error("its output is not JSON ({source}): {out:.200}")]
    NotJson {
        out: String,
        #[source]
        source: serde_json::Error,
    },
    /// Its stdout is JSON but not an object.
    #[error("its output is not a JSON object: {out:.200}")]
    NotObject { out: String },
}

/// Merges the `seed_tts_*` keys of the hook's JSON object; other keys are listed under
/// `quality_hook_ignored_keys`.
fn merge(out: &str, doc: &mut ResultDoc) -> Result<usize, HookError> {
    let v: Value = serde_json::from_str(out.trim()).map_err(|source| HookError::NotJson {
        out: out.trim().to_string(),
        source,
    })?;
    let Value::Object(obj) = v else {
        return Err(HookError::NotObject {
            out: out.trim().to_string(),
        });
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
    hook: &QualityHook,
    manifest: &Path,
    trial_dir: &Path,
    timeout: Duration,
) -> Result<String, HookError> {
    let cmd = &hook.cmd;
    let log = trial_dir.join("quality/hook.log");
    let stderr = std::fs::File::create(&log).map_err(|source| HookError::Log {
        path: log.clone(),
        source,
    })?;
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{cmd} \"$1\""))
        .arg("dfx-quality")
        .arg(manifest)
        .env("DFX_QUALITY_MANIFEST", manifest)
        .env("DFX_QUALITY_DIR", trial_dir.join("quality"))
        .current_dir(trial_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr);
    let mut child = GroupChild::spawn(
        &mut command,
        &hook.supervision,
        "quality hook",
        HOOK_GRACE,
        Some(&log),
    )
    .map_err(|source| HookError::Spawn {
        cmd: cmd.clone(),
        source,
    })?;
    let mut stdout = child.take_stdout().ok_or(HookError::NoStdout)?;
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = (&mut stdout).take(MAX_OUTPUT).read_to_string(&mut out);
        // Past the limit, drain so the hook is not stuck writing to a full pipe.
        let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        out
    });
    // The whole group is gone once `wait` returns, so the pipe's last writer is too.
    let end = child.wait(Some(timeout));
    let out = reader.join().unwrap_or_default();
    match end {
        GroupEnd::Exited(status) if status.success() => Ok(out),
        GroupEnd::Exited(status) => Err(HookError::Exit { status, log }),
        GroupEnd::TimedOut(limit) => Err(HookError::Timeout(limit)),
        GroupEnd::WaitFailed(e) => Err(HookError::Wait(e)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn hook(cmd: &str) -> QualityHook {
        QualityHook {
            cmd: cmd.into(),
            supervision: Supervision::default(),
        }
    }

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
        let q = evaluate(Some(&hook("true")), empty.path(), &mut ResultDoc::new());
        assert!(matches!(q, Quality::NotEvaluated(w) if w.contains("kept no audio")));
    }

    #[test]
    fn the_hook_gets_the_manifest_and_its_keys_are_merged() {
        let dir = trial_with_manifest();
        let mut doc = ResultDoc::new();
        let cmd = r#"f() { test -s "$1" && test "$1" = "$DFX_QUALITY_MANIFEST" && echo '{"seed_tts_content_error_mean": 0.031, "other": 1}'; }; f"#;
        let q = evaluate(Some(&hook(cmd)), dir.path(), &mut doc);
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
            let q = evaluate(Some(&hook(cmd)), dir.path(), &mut doc);
            assert!(matches!(q, Quality::HookFailed(_)), "{cmd}: {q:?}");
            assert_eq!(doc["quality_evaluated"], false);
        }
        let started = Instant::now();
        let q = evaluate_inner(
            Some(&hook("sleep 30; :")),
            dir.path(),
            &mut ResultDoc::new(),
            Duration::from_millis(200),
        );
        assert!(matches!(q, Quality::HookFailed(w) if w.contains("no exit within")));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
